//! `[telemetry] prometheus` and `gpu_devices`: located errors (file:line:col, the dotted
//! key) before any request, exit 2; valid tables show in `--dry-run`.

use super::{run, text};

const JOB: &str = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [8]\n";

/// `check` of a suite whose `[telemetry]` is `telemetry`: (exit, stderr).
fn check(telemetry: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.toml");
    std::fs::write(&p, format!("name = \"t\"\n[telemetry]\n{telemetry}\n{JOB}")).unwrap();
    let o = run(&["check", p.to_str().unwrap()]);
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn prometheus_table_errors_are_located() {
    for (line, at, needle) in [
        (
            r#"prometheus = { selector = '{job="v"}' }"#,
            "t.toml:3:14",
            "needs `url`",
        ),
        (
            r#"prometheus = { url = "ftp://p:9090" }"#,
            "t.toml:3:22",
            "telemetry.prometheus.url",
        ),
        (
            r#"prometheus = { url = "http://p:9090/api/v1/query_range" }"#,
            "t.toml:3:22",
            "base URL",
        ),
        (
            r#"prometheus = { url = "http://p:9090", selector = 'job="v"' }"#,
            "t.toml:3:50",
            "label matchers in braces",
        ),
        (
            r#"prometheus = { url = "http://p:9090", selector = '{__name__="x"}' }"#,
            "t.toml:3:50",
            "__name__",
        ),
        (
            r#"prometheus = { url = "http://p:9090", wait_s = -1 }"#,
            "t.toml:3:48",
            "telemetry.prometheus.wait_s",
        ),
        (
            r#"prometheus = { url = "http://p:9090", wiat_s = 1 }"#,
            "t.toml:3:39",
            "did you mean `wait_s`?",
        ),
        (
            r#"prometheus = { url = "http://user:secret@p:9090" }"#,
            "t.toml:3:22",
            "credentials",
        ),
    ] {
        let (code, err) = check(line);
        assert_eq!(code, Some(2), "{line}: {err}");
        assert!(err.contains(at), "{line}: want {at}: {err}");
        assert!(err.contains(needle), "{line}: want {needle}: {err}");
        // The message itself never repeats a credential (the source snippet below it
        // shows the file's own line).
        let message = err.lines().next().unwrap_or("");
        assert!(
            !message.contains("secret"),
            "a credential was echoed: {message}"
        );
    }
}

#[test]
fn gpu_devices_errors_are_located() {
    for (line, at, needle) in [
        ("gpu_devices = []", "t.toml:3:15", "is empty"),
        (
            "gpu_devices = [0, -1]",
            "t.toml:3:19",
            "telemetry.gpu_devices[1]",
        ),
        ("gpu_devices = [\"gpu0\"]", "t.toml:3:16", "UUID"),
        ("gpu_devices = [1, 1]", "t.toml:3:19", "repeats device 1"),
        (
            "gpu = \"off\"\ngpu_devices = [0]",
            "t.toml:4:15",
            "samples none",
        ),
    ] {
        let (code, err) = check(line);
        assert_eq!(code, Some(2), "{line}: {err}");
        assert!(err.contains(at), "{line}: want {at}: {err}");
        assert!(err.contains(needle), "{line}: want {needle}: {err}");
    }
}

#[test]
fn valid_tables_show_in_the_dry_run() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"t\"\n[telemetry]\ngpu_devices = [1, \"GPU-5f3a\", \"MIG-77\"]\n\
             prometheus = {{ url = \"http://127.0.0.1:9090/\", selector = '{{job=\"vllm\"}}' }}\n{JOB}"
        ),
    )
    .unwrap();
    let o = run(&["run", p.to_str().unwrap(), "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("telemetry.gpu_devices: [1, GPU-5f3a, MIG-77]"),
        "{out}"
    );
    assert!(
        out.contains(
            "telemetry.prometheus: http://127.0.0.1:9090 selector {job=\"vllm\"} (queried after the run, wait up to 10 s)"
        ),
        "{out}"
    );
}
