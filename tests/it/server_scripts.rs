//! `scripts/vllm.sh` keeps no server alive past the shell that started it: the server runs
//! in its own session (so its process tree is one group), and a watchdog there ends it when
//! that shell is gone — a CI timeout or an OOM kill of the test's process group runs no
//! EXIT trap. A fake `python` (a loopback `http.server` answering `GET /v1/models`) stands
//! in for vLLM in a fake venv under a temporary `XDG_CACHE_HOME`.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn alive(pid: i32) -> bool {
    // A zombie (exited, not yet reaped) is not alive.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(") ").next().map(|r| !r.starts_with('Z')))
        .unwrap_or(false)
}

#[test]
fn a_vllm_server_dies_with_the_shell_that_started_it() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: no python3");
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let xdg = tmp.path().join("xdg");
    let venv = Command::new("bash")
        .args(["-c", "source scripts/vllm.sh && _vllm_venv"])
        .current_dir(repo)
        .env("XDG_CACHE_HOME", &xdg)
        .output()
        .unwrap();
    let venv = String::from_utf8(venv.stdout).unwrap().trim().to_string();
    assert!(venv.starts_with(xdg.to_str().unwrap()), "{venv}");
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("v1")).unwrap();
    std::fs::write(root.join("v1/models"), "{\"data\":[]}").unwrap();
    std::fs::create_dir_all(format!("{venv}/bin")).unwrap();
    std::fs::write(format!("{venv}/.inferscope-complete"), "").unwrap();
    let python = format!("{venv}/bin/python");
    std::fs::write(
        &python,
        format!(
            "#!/bin/bash\nwhile [ $# -gt 0 ]; do [ \"$1\" = --port ] && port=$2; shift; done\n\
             exec python3 -m http.server \"$port\" --bind 127.0.0.1 --directory {}\n",
            root.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let model = tmp.path().join("model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("config.json"), "{}").unwrap();
    let pid_file = tmp.path().join("server.pid");
    // The test's shell, in a process group of its own (as a CI step is): it starts the
    // server with its EXIT trap set, then waits; the whole group is then SIGKILLed.
    let mut shell = Command::new("bash")
        .args([
            "-c",
            "set -eu; source scripts/vllm.sh; trap vllm_stop EXIT; vllm_start \"$1\"; \
             echo \"$VLLM_PID\" > \"$2\"; sleep 300",
            "driver",
            model.to_str().unwrap(),
            pid_file.to_str().unwrap(),
        ])
        .current_dir(repo)
        .env("XDG_CACHE_HOME", &xdg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let server: i32 = loop {
        if let Some(p) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the fake server never became ready"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(alive(server));
    let group = shell.id() as i32;
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is touched.
    assert_eq!(unsafe { libc::kill(-group, libc::SIGKILL) }, 0);
    shell.wait().unwrap();
    let t1 = Instant::now();
    while alive(server) && t1.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let survived = alive(server);
    if survived {
        // SAFETY: as above; the leftover is stopped before the assertion fails.
        unsafe { libc::kill(-server, libc::SIGKILL) };
    }
    assert!(
        !survived,
        "server {server} outlived the killed shell's group"
    );
}
