//! A minimal Chrome DevTools Protocol client over `--remote-debugging-pipe` (fd 3: commands
//! in, fd 4: replies and events out; messages are JSON separated by NUL bytes). No
//! WebSocket and no new dependency.

use std::io::{Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// One headless Chromium, killed on drop.
pub struct Browser {
    child: Child,
    to: std::fs::File,
    from: Receiver<Value>,
    next: u64,
    /// `Runtime.exceptionThrown` events seen (text of each).
    pub exceptions: Vec<String>,
    _profile: tempfile::TempDir,
}

fn pipe() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` is a valid two-element buffer.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(rc, 0, "pipe2");
    (fds[0], fds[1])
}

impl Browser {
    /// Starts `bin` headless with a fresh profile and the flags of the brief.
    pub fn launch(bin: &Path) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let (cmd_r, cmd_w) = pipe();
        let (evt_r, evt_w) = pipe();
        let mut cmd = Command::new(bin);
        cmd.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("about:blank")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (fcntl, dup2) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                // Move both ends above 4 first so dup2 never clobbers one with the other,
                // then place them at 3 and 4 (dup2 clears close-on-exec on the copies).
                let a = libc::fcntl(cmd_r, libc::F_DUPFD_CLOEXEC, 10);
                let b = libc::fcntl(evt_w, libc::F_DUPFD_CLOEXEC, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().expect("start chromium");
        // SAFETY: the parent owns these descriptors from pipe2 and closes each once.
        unsafe {
            libc::close(cmd_r);
            libc::close(evt_w);
        }
        let to = unsafe { std::fs::File::from_raw_fd(cmd_w) };
        let mut from_file = unsafe { std::fs::File::from_raw_fd(evt_r) };
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut chunk = vec![0u8; 1 << 16];
            loop {
                let n = match from_file.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                while let Some(i) = buf.iter().position(|&b| b == 0) {
                    let msg: Vec<u8> = buf.drain(..=i).collect();
                    if let Ok(v) = serde_json::from_slice::<Value>(&msg[..msg.len() - 1])
                        && tx.send(v).is_err()
                    {
                        return;
                    }
                }
            }
        });
        Self {
            child,
            to,
            from: rx,
            next: 0,
            exceptions: Vec::new(),
            _profile: profile,
        }
    }

    /// Sends one command and waits for its reply (30 s at most); events in between are
    /// kept only for exceptions.
    pub fn call(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.next += 1;
        let id = self.next;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.to.write_all(&bytes).expect("write to chromium");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = match self.from.recv_timeout(left) {
                Ok(v) => v,
                Err(RecvTimeoutError::Timeout) => panic!("chromium did not answer {method}"),
                Err(RecvTimeoutError::Disconnected) => panic!("chromium exited during {method}"),
            };
            if v["method"] == "Runtime.exceptionThrown" {
                self.exceptions
                    .push(v["params"]["exceptionDetails"].to_string());
            }
            if v["id"] == json!(id) {
                if let Some(e) = v.get("error") {
                    panic!("{method}: {e}");
                }
                return v["result"].clone();
            }
        }
    }

    /// Opens a page target and returns its session id.
    pub fn new_page(&mut self) -> String {
        let t = self.call("Target.createTarget", json!({ "url": "about:blank" }), None);
        let a = self.call(
            "Target.attachToTarget",
            json!({ "targetId": t["targetId"], "flatten": true }),
            None,
        );
        let s = a["sessionId"].as_str().unwrap().to_string();
        self.call("Runtime.enable", json!({}), Some(&s));
        self.call("Page.enable", json!({}), Some(&s));
        s
    }

    /// Evaluates `expr` in the page and returns its value.
    pub fn eval(&mut self, s: &str, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
            Some(s),
        );
        if let Some(e) = r.get("exceptionDetails") {
            panic!("evaluate failed: {e}");
        }
        r["result"]["value"].clone()
    }

    /// Sets the viewport (CSS px).
    pub fn viewport(&mut self, s: &str, width: u32, height: u32) {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
            Some(s),
        );
    }

    /// Presses one key (keyDown + keyUp) in the focused element.
    pub fn key(&mut self, s: &str, key: &str, code: u32) {
        let text = if key == "Enter" { "\r" } else { "" };
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyDown", "key": key, "code": key, "windowsVirtualKeyCode": code, "text": text }),
            Some(s),
        );
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": key, "windowsVirtualKeyCode": code }),
            Some(s),
        );
    }

    /// A PNG of the page (`full`: the whole page, else the viewport).
    pub fn screenshot(&mut self, s: &str, full: bool) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": full }),
            Some(s),
        );
        base64_decode(r["data"].as_str().unwrap())
    }

    /// A PNG of one rectangle of the page (CSS pixels from the document's top left).
    pub fn screenshot_clip(&mut self, s: &str, x: f64, y: f64, width: f64, height: f64) -> Vec<u8> {
        let r = self.call(
            "Page.captureScreenshot",
            json!({ "format": "png", "captureBeyondViewport": true,
                "clip": { "x": x, "y": y, "width": width, "height": height, "scale": 1 } }),
            Some(s),
        );
        base64_decode(r["data"].as_str().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Standard base64 decoding (padding allowed).
pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("bad base64"),
        }
    };
    let clean: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    out
}

/// Width and height of a PNG from its IHDR chunk.
pub fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let w = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(png[20..24].try_into().unwrap());
    (w, h)
}
