// No prompt, response, tool payload or error text can reach a timeline artifact
// (docs/artifacts.md "Timeline capture rules"; R005, T001 in docs/artifacts.md "Requirement ids").
// A marker is planted in every string input the timeline API accepts, shaped like the
// free text it stands for; the only text that enters an artifact is a closed name or a
// validated id.

use std::sync::Arc;

use inferscope_bench::timeline::{
    FailureCode, ManifestInfo, ManualClock, Phase, SinkConfig, SpanContext, SpanEnd, SpanName,
    TimelineSink, verify,
};

const MARK: &str = "SECRET-MARKER-";

fn payloads() -> Vec<String> {
    vec![
        format!("{MARK}prompt: summarize the patient record of Jane Doe"),
        format!("{MARK}response\n```json\n{{\"answer\": 42}}\n```"),
        format!("{{\"path\": \"../../etc/passwd\", \"note\": \"{MARK}tool-args\"}}"),
        format!("[{{\"file\": \"notes.txt\", \"content\": \"{MARK}tool-result\"}}]"),
        format!("error: connection reset by peer ({MARK}error-text)"),
        format!("{MARK}<script>alert(1)</script>"),
        format!("{MARK}tab\there"),
        format!("{}{MARK}too-long", "a".repeat(130)),
    ]
}

#[test]
fn secret_markers_never_reach_events_or_manifest() {
    let p = payloads();

    // Config inputs: run id, tool names, clock domain.
    for s in &p {
        assert!(TimelineSink::new(Arc::new(ManualClock::new(0, "d")), SinkConfig::new(s)).is_err());
        let mut c = SinkConfig::new("run-1");
        c.tool_names = vec![s.clone()];
        let err = TimelineSink::new(Arc::new(ManualClock::new(0, "d")), c).unwrap_err();
        assert!(!err.to_string().contains(MARK), "error echoes input: {err}");
        assert!(
            TimelineSink::new(Arc::new(ManualClock::new(0, s)), SinkConfig::new("run-1")).is_err()
        );
        assert_eq!(FailureCode::from_code(s), None);
    }

    let clock = Arc::new(ManualClock::new(1_726_000_000_000_000_000, "mono:h:1:1"));
    let mut cfg = SinkConfig::new("run-1");
    cfg.tool_names = vec!["read_file".into()];
    let sink = TimelineSink::new(clock.clone(), cfg).unwrap();
    let exec = sink
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    let mut offered = 0u64;
    for (i, s) in p.iter().enumerate() {
        clock.set(i as u64 * 100 + 1);
        // Span inputs: fixture name, case id, request id (start and end).
        assert!(
            sink.span_start(SpanName::Fixture(s), Some(exec), SpanContext::default())
                .is_none()
        );
        let as_case = SpanContext {
            case_id: Some(s),
            ..SpanContext::default()
        };
        assert!(
            sink.span_start(SpanName::ChatCompletion, Some(exec), as_case)
                .is_none()
        );
        let as_req = SpanContext {
            request_id: Some(s),
            ..SpanContext::default()
        };
        assert!(
            sink.span_start(SpanName::ChatCompletion, Some(exec), as_req)
                .is_none()
        );
        let ok = sink
            .span_start(SpanName::ChatCompletion, Some(exec), SpanContext::default())
            .unwrap();
        assert!(!sink.span_end(
            ok,
            SpanEnd::failed(Some(FailureCode::StreamError)).with_request_id(s)
        ));
        assert!(sink.span_end(ok, SpanEnd::failed(Some(FailureCode::StreamError))));
        offered += 4;
    }
    // Bare markers are not tool names either (uppercase, '-').
    assert!(
        sink.span_start(
            SpanName::Fixture("SECRET-MARKER-1"),
            None,
            SpanContext::default()
        )
        .is_none()
    );
    offered += 1;
    assert!(sink.span_end(exec, SpanEnd::completed()));
    let summary = sink.finalize(false);
    assert_eq!(summary.rejected.total(), offered);

    let dir = tempfile::tempdir().unwrap();
    for s in &p {
        let bad = ManifestInfo {
            telemetry_session_id: Some(s.clone()),
            ..Default::default()
        };
        let err = sink.persist(dir.path(), &bad).unwrap_err();
        assert!(!err.to_string().contains(MARK));
    }
    sink.persist(dir.path(), &ManifestInfo::default()).unwrap();

    let mut artifacts = 0;
    for entry in std::fs::read_dir(dir.path().join("timeline")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains(MARK), "marker in artifact");
        assert!(
            !text.contains("Jane Doe") && !text.contains("passwd") && !text.contains("<script>")
        );
        artifacts += 1;
    }
    assert_eq!(artifacts, 2);
    let report = verify(dir.path());
    assert!(report.ok());
    assert!(!report.to_string().contains(MARK));
    // What was kept: the phase and one failed request per payload, nothing else.
    assert_eq!(report.events.len(), 2 + 2 * p.len());
}

#[test]
fn reader_messages_never_quote_artifact_text() {
    use inferscope_bench::timeline::ManualClock;
    let clock = Arc::new(ManualClock::new(0, "mono:h:1:1"));
    let sink = TimelineSink::new(clock, SinkConfig::new("run-1")).unwrap();
    sink.span_start(SpanName::SweHarness, None, SpanContext::default())
        .unwrap();
    sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    sink.persist(dir.path(), &ManifestInfo::default()).unwrap();
    // A tampered line with a marker as a value, a marker as a key, and a broken manifest.
    let events = dir.path().join("timeline/events.jsonl");
    let text = std::fs::read_to_string(&events).unwrap();
    let bad = text.replacen(
        "\"request_id\":null",
        &format!("\"request_id\":{{\"{MARK}k\":\"{MARK}v\"}}"),
        1,
    ) + &format!("{{\"{MARK}key\":1}}\n");
    std::fs::write(&events, bad).unwrap();
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    assert!(!report.to_string().contains(MARK), "{report}");
    let manifest = dir.path().join("timeline/manifest.json");
    std::fs::write(
        &manifest,
        format!("{{\"schema\": \"{MARK}\", \"{MARK}\": 1}}"),
    )
    .unwrap();
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    assert!(!report.to_string().contains(MARK), "{report}");
}
