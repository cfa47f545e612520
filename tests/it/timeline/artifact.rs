// Persistence and the validating reader: round trip, cancel, unavailable, persistence
// failure, tamper detection (hash, length), unknown fields, numbers, sequence, parents,
// span matching in complete vs partial captures, line and manifest bounds.

use std::path::Path;
use std::sync::Arc;

use inferscope_bench::timeline::reader::{ErrorKind, Gap, Unavailable};
use inferscope_bench::timeline::{
    Bounds, EndStatus, EventKind, FailureCode, ManifestInfo, ManualClock, PersistError, Phase,
    Quality, QualityReason, SinkConfig, SpanContext, SpanEnd, SpanName, TimelineManifest,
    TimelineSink, VerifyStatus, proc_self_io, verify,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

const ANCHOR: u64 = 1_726_000_000_000_000_000;

struct Run {
    clock: Arc<ManualClock>,
    sink: TimelineSink,
}

fn run_with(bounds: Bounds) -> Run {
    let clock = Arc::new(ManualClock::new(
        ANCHOR,
        "mono:host-a:77:1726000000000000000",
    ));
    let mut cfg = SinkConfig::new("run-20240910-1");
    cfg.tool_names = vec!["read_file".into(), "search".into()];
    cfg.bounds = bounds;
    let sink = TimelineSink::new(clock.clone(), cfg).unwrap();
    Run { clock, sink }
}

/// A small complete run: preparation; request_execution with two overlapping requests
/// and a fixture; grading; every span closed. 14 events.
fn complete_run() -> Run {
    let r = run_with(Bounds::default());
    let (c, s) = (&r.clock, &r.sink);
    let t = |ns: u64| c.set(ns);
    t(1_000);
    let prep = s
        .span_start(
            SpanName::Phase(Phase::Preparation),
            None,
            SpanContext::default(),
        )
        .unwrap();
    t(2_000);
    assert!(s.span_end(prep, SpanEnd::completed()));
    let exec = s
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    t(3_000);
    let case = SpanContext {
        case_id: Some("agentic::lookup#0/step1"),
        request_id: Some("req-1"),
        attempt: Some(1),
    };
    let r1 = s
        .span_start(SpanName::ChatCompletion, Some(exec), case)
        .unwrap();
    t(3_500);
    let r2 = s
        .span_start(
            SpanName::ChatCompletion,
            Some(exec),
            SpanContext {
                case_id: Some("agentic::lookup#1/step1"),
                ..case
            },
        )
        .unwrap();
    t(50_000_000);
    assert!(
        s.span_end(
            r1,
            SpanEnd::completed()
                .with_tokens(Some(812), Some(37))
                .with_request_id("chatcmpl-a1")
        )
    );
    let fx = s
        .span_start(
            SpanName::Fixture("read_file"),
            Some(exec),
            SpanContext {
                case_id: Some("agentic::lookup#0/step2"),
                ..SpanContext::default()
            },
        )
        .unwrap();
    t(60_000_000);
    assert!(s.span_end(r2, SpanEnd::failed(Some(FailureCode::IdleTimeout))));
    assert!(s.span_end(fx, SpanEnd::completed()));
    t(61_000_000);
    assert!(s.span_end(exec, SpanEnd::completed()));
    let grading = s
        .span_start(
            SpanName::Phase(Phase::Grading),
            None,
            SpanContext::default(),
        )
        .unwrap();
    t(62_000_000);
    assert!(s.span_end(grading, SpanEnd::completed()));
    let harness = s
        .span_start(SpanName::SweHarness, None, SpanContext::default())
        .unwrap();
    t(63_000_000);
    assert!(s.span_end(harness, SpanEnd::completed()));
    r
}

fn persisted(r: &Run) -> tempfile::TempDir {
    r.sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    r.sink
        .persist(dir.path(), &ManifestInfo::default())
        .unwrap();
    dir
}

fn events_path(d: &Path) -> std::path::PathBuf {
    d.join("timeline/events.jsonl")
}
fn manifest_path(d: &Path) -> std::path::PathBuf {
    d.join("timeline/manifest.json")
}

/// Rewrites the events (re-hashing them in the manifest, so only the edit is at fault)
/// and then edits the manifest.
fn rewrite(
    d: &Path,
    edit_events: impl FnOnce(String) -> String,
    edit_manifest: impl FnOnce(&mut Value),
) {
    let events = edit_events(std::fs::read_to_string(events_path(d)).unwrap());
    std::fs::write(events_path(d), &events).unwrap();
    let mut m: Value = serde_json::from_slice(&std::fs::read(manifest_path(d)).unwrap()).unwrap();
    m["events"]["byte_length"] = events.len().into();
    m["events"]["sha256"] = hex::encode(Sha256::digest(events.as_bytes())).into();
    edit_manifest(&mut m);
    std::fs::write(manifest_path(d), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

fn kinds(r: &inferscope_bench::timeline::VerifyReport) -> Vec<ErrorKind> {
    r.errors.iter().map(|e| e.kind.clone()).collect()
}

#[test]
fn complete_capture_round_trips() {
    let r = complete_run();
    r.sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    let before = proc_self_io();
    let after = proc_self_io();
    let info = ManifestInfo {
        io_before: before,
        io_after: after,
        telemetry_session_id: Some("sess-9".into()),
    };
    let rep = r.sink.persist(dir.path(), &info).unwrap();
    assert_eq!(rep.quality, Quality::Complete);
    assert_eq!(rep.event_count, 14);
    let bytes = std::fs::read(events_path(dir.path())).unwrap();
    assert_eq!(rep.byte_length, bytes.len() as u64);
    assert_eq!(rep.sha256, hex::encode(Sha256::digest(&bytes)));
    assert!(rep.manifest_bytes <= 16 * 1024);

    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    assert_eq!(report.exit_code(), 0);
    assert!(
        report
            .summary()
            .starts_with("timeline ok: complete, 14 events, 0 dropped")
    );
    let m: &TimelineManifest = report.manifest.as_ref().unwrap();
    assert_eq!(m.schema, "inferscope-bench.timeline/v2");
    assert_eq!(m.schema, inferscope_bench::timeline::SCHEMA);
    assert_eq!(m.run_id, "run-20240910-1");
    assert!(m.timeline_id.starts_with("tl-"));
    assert_eq!(m.telemetry_session_id.as_deref(), Some("sess-9"));
    assert_eq!(m.reference_instant_unix_ns, ANCHOR);
    assert_eq!(m.clock_domain_id, "mono:host-a:77:1726000000000000000");
    assert_eq!(m.start_utc, "2024-09-10T20:26:40.000000000Z");
    assert_eq!(m.events.path, "timeline/events.jsonl");
    assert_eq!(m.end_elapsed_ns, 63_000_000);
    assert_eq!(m.measured_window_io.before, before);
    if let (Some(b), Some(a)) = (before, after) {
        assert_eq!(
            m.measured_window_io.write_bytes_delta,
            Some(a.write_bytes - b.write_bytes)
        );
    }

    let ev = &report.events;
    assert_eq!(ev.len(), 14);
    assert_eq!(ev[0].kind, EventKind::PhaseStart);
    assert_eq!(ev[0].name, "preparation");
    assert_eq!(ev[0].wall_time_utc, "2024-09-10T20:26:40.000001000Z");
    assert_eq!(ev[0].status, None);
    let r1_end = ev
        .iter()
        .find(|e| e.kind == EventKind::RequestEnd && e.completion_tokens.is_some())
        .unwrap();
    assert_eq!(r1_end.prompt_tokens, Some(812));
    assert_eq!(r1_end.completion_tokens, Some(37));
    assert_eq!(r1_end.request_id.as_deref(), Some("chatcmpl-a1"));
    assert_eq!(r1_end.status, Some(EndStatus::Completed));
    let r2_end = ev.iter().find(|e| e.failure_code.is_some()).unwrap();
    assert_eq!(r2_end.failure_code, Some(FailureCode::IdleTimeout));
    // Missing is null in the file, never absent and never 0.
    let first: Value =
        serde_json::from_str(std::str::from_utf8(&bytes).unwrap().lines().next().unwrap()).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "seq",
            "span_id",
            "parent_span_id",
            "kind",
            "name",
            "elapsed_ns",
            "wall_time_utc",
            "clock_domain_id",
            "status",
            "request_id",
            "case_id",
            "attempt",
            "prompt_tokens",
            "completion_tokens",
            "completion_tokens_estimate",
            "failure_code"
        ]
    );
    assert!(first["prompt_tokens"].is_null() && first["status"].is_null());
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(manifest_path(dir.path())).unwrap()).unwrap();
    assert!(
        manifest["measured_window_io"]
            .get("write_bytes_delta")
            .is_some()
    );
    assert_eq!(manifest["quality"], "complete");
    assert_eq!(manifest["quality_reasons"], serde_json::json!([]));
    // No temp files left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path().join("timeline"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn cancelled_run_is_partial_with_unknown_ends_never_closed() {
    let r = run_with(Bounds::default());
    r.clock.set(10);
    let exec = r
        .sink
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    r.clock.set(20);
    let req = r
        .sink
        .span_start(SpanName::ChatCompletion, Some(exec), SpanContext::default())
        .unwrap();
    r.clock.set(30);
    // Ctrl-C: the lead ends in-flight requests as cancelled, then finalizes.
    assert!(r.sink.span_end(req, SpanEnd::cancelled()));
    let s = r.sink.finalize(true);
    assert_eq!(s.quality, Quality::Partial);
    let dir = tempfile::tempdir().unwrap();
    let rep = r
        .sink
        .persist(dir.path(), &ManifestInfo::default())
        .unwrap();
    assert_eq!(
        rep.quality_reasons,
        vec![QualityReason::Cancelled, QualityReason::UnclosedSpans]
    );
    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    assert_eq!(report.unknown_end_spans, vec![exec.get()]);
    assert_eq!(report.events.len(), 3, "no end invented for the phase");
    assert_eq!(report.events[2].status, Some(EndStatus::Cancelled));
    assert_eq!(report.events[2].failure_code, Some(FailureCode::Cancelled));
    assert!(
        report
            .summary()
            .contains("partial (cancelled, unclosed_spans)"),
        "{}",
        report.summary()
    );
    assert!(
        report
            .to_string()
            .contains(&format!("unknown end: span {}", exec.get()))
    );
}

#[test]
fn overflowed_capture_verifies_as_partial() {
    let r = run_with(Bounds {
        max_events: 3,
        ..Bounds::default()
    });
    let p = r
        .sink
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    let a = r
        .sink
        .span_start(SpanName::ChatCompletion, Some(p), SpanContext::default())
        .unwrap();
    assert!(r.sink.span_end(a, SpanEnd::completed()));
    assert!(
        r.sink
            .span_start(SpanName::ChatCompletion, Some(p), SpanContext::default())
            .is_none()
    );
    assert!(!r.sink.span_end(p, SpanEnd::completed()));
    let dir = persisted(&r);
    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    let m = report.manifest.as_ref().unwrap();
    assert_eq!(m.dropped_count, 2);
    assert_eq!(m.dropped.capacity, 2);
    assert_eq!(
        m.quality_reasons,
        vec![
            QualityReason::CapacityExceeded,
            QualityReason::UnclosedSpans
        ]
    );
    assert_eq!(report.gaps, vec![Gap::DroppedEvents { count: 2 }]);
    assert_eq!(report.unknown_end_spans, vec![p.get()]);
}

#[test]
fn no_manifest_is_unavailable_exit_2() {
    // A killed run: events captured in memory, process gone before persistence.
    let r = complete_run();
    let dir = tempfile::tempdir().unwrap();
    drop(r);
    let report = verify(dir.path());
    assert_eq!(report.status(), VerifyStatus::Unavailable);
    assert_eq!(report.unavailable, Some(Unavailable::NoManifest));
    assert_eq!(report.exit_code(), 2);
    assert_eq!(report.quality(), Quality::Unavailable);
    assert!(
        report
            .summary()
            .starts_with("timeline unavailable: no timeline/manifest.json")
    );
    // Killed between the events rename and the manifest rename: still unavailable.
    let dir2 = persisted(&complete_run());
    std::fs::remove_file(manifest_path(dir2.path())).unwrap();
    assert_eq!(
        verify(dir2.path()).unavailable,
        Some(Unavailable::NoManifest)
    );
    // Not a directory at all: bad input.
    let missing = dir.path().join("nope");
    assert_eq!(
        verify(&missing).unavailable,
        Some(Unavailable::RunDirMissing)
    );
    assert_eq!(verify(&missing).exit_code(), 2);
}

#[test]
fn persistence_failure_is_an_error_not_a_panic() {
    // Tests run as root, so a read-only mode would not stop us: put the run directory
    // under a regular file instead.
    let r = complete_run();
    r.sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let run_dir = file.join("run");
    let err = r
        .sink
        .persist(&run_dir, &ManifestInfo::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            PersistError::Io {
                op: "create directory",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("timeline persistence: create directory")
    );
    assert_eq!(verify(&run_dir).exit_code(), 2);
    // The sink is unharmed: persisting elsewhere still works.
    let ok_dir = tempfile::tempdir().unwrap();
    assert!(
        r.sink
            .persist(ok_dir.path(), &ManifestInfo::default())
            .is_ok()
    );
}

#[test]
fn persist_requires_finalize_and_never_overwrites() {
    let r = complete_run();
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        r.sink.persist(dir.path(), &ManifestInfo::default()),
        Err(PersistError::NotFinalized)
    ));
    r.sink.finalize(false);
    r.sink
        .persist(dir.path(), &ManifestInfo::default())
        .unwrap();
    let err = r
        .sink
        .persist(dir.path(), &ManifestInfo::default())
        .unwrap_err();
    assert!(matches!(err, PersistError::AlreadyPersisted(_)), "{err}");
    assert!(verify(dir.path()).ok());
}

#[test]
fn manifest_bound_is_enforced_at_persist() {
    let r = run_with(Bounds {
        max_manifest_bytes: 600,
        ..Bounds::default()
    });
    r.sink
        .span_start(SpanName::SweHarness, None, SpanContext::default())
        .unwrap();
    r.sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    let err = r
        .sink
        .persist(dir.path(), &ManifestInfo::default())
        .unwrap_err();
    assert!(
        matches!(err, PersistError::ManifestTooLarge { limit: 600, .. }),
        "{err}"
    );
    assert!(!manifest_path(dir.path()).exists());
    assert_eq!(verify(dir.path()).exit_code(), 2);
}

#[test]
fn hash_tamper_is_detected() {
    let dir = persisted(&complete_run());
    let text = std::fs::read_to_string(events_path(dir.path())).unwrap();
    // Same length, one digit changed.
    let tampered = text.replacen("\"elapsed_ns\":2000,", "\"elapsed_ns\":2001,", 1);
    assert_ne!(text, tampered);
    assert_eq!(text.len(), tampered.len());
    std::fs::write(events_path(dir.path()), tampered).unwrap();
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    assert!(kinds(&report).contains(&ErrorKind::HashMismatch));
    assert!(
        !kinds(&report)
            .iter()
            .any(|k| matches!(k, ErrorKind::LengthMismatch { .. }))
    );
    assert!(
        report
            .to_string()
            .contains("error: events file SHA-256 differs from the manifest")
    );
}

#[test]
fn length_tamper_is_detected() {
    let dir = persisted(&complete_run());
    let mut text = std::fs::read_to_string(events_path(dir.path())).unwrap();
    let n = text.len() as u64;
    text.push('\n');
    std::fs::write(events_path(dir.path()), text).unwrap();
    let report = verify(dir.path());
    assert!(kinds(&report).contains(&ErrorKind::LengthMismatch {
        manifest: n,
        actual: n + 1
    }));
    assert!(kinds(&report).contains(&ErrorKind::HashMismatch));
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn unknown_fields_are_rejected_in_events_and_manifest() {
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| {
            t.replacen(
                "\"failure_code\":null}",
                "\"failure_code\":null,\"prompt\":\"hi\"}",
                1,
            )
        },
        |_| {},
    );
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    match &report.errors[0] {
        e if e.line == Some(1) => match &e.kind {
            ErrorKind::LineMalformed(msg) => assert!(msg.contains("unknown field"), "{msg}"),
            k => panic!("{k:?}"),
        },
        e => panic!("{e}"),
    }
    let dir = persisted(&complete_run());
    rewrite(dir.path(), |t| t, |m| m["extra"] = "x".into());
    let report = verify(dir.path());
    assert!(
        matches!(&report.errors[0].kind, ErrorKind::ManifestMalformed(m) if m.contains("unknown field"))
    );
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| t,
        |m| m["schema"] = "inferscope-bench.timeline/v9".into(),
    );
    assert_eq!(kinds(&verify(dir.path()))[0], ErrorKind::UnknownSchema);
}

/// A run whose one request ends with a client-estimated completion count (schema v2's
/// `completion_tokens_estimate`), persisted.
fn persisted_with_estimate() -> tempfile::TempDir {
    let r = run_with(Bounds::default());
    r.clock.set(1_000);
    let exec = r
        .sink
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    let req = r
        .sink
        .span_start(
            SpanName::ChatCompletion,
            Some(exec),
            SpanContext {
                case_id: Some("agentic::lookup#0/step1"),
                request_id: Some("req-1"),
                attempt: Some(1),
            },
        )
        .unwrap();
    r.clock.set(2_000);
    assert!(r.sink.span_end(
        req,
        SpanEnd::completed().with_estimated_completion(Some(10), Some(3))
    ));
    r.clock.set(3_000);
    assert!(r.sink.span_end(exec, SpanEnd::completed()));
    persisted(&r)
}

#[test]
fn writer_produces_v2_and_v2_with_an_estimate_verifies() {
    let dir = persisted_with_estimate();
    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    assert_eq!(report.exit_code(), 0);
    assert_eq!(
        report.manifest.as_ref().unwrap().schema,
        "inferscope-bench.timeline/v2"
    );
    let end = report
        .events
        .iter()
        .find(|e| e.kind == EventKind::RequestEnd)
        .unwrap();
    assert_eq!(end.completion_tokens_estimate, Some(3));
    assert_eq!(end.completion_tokens, None);
    // v2 keeps its own rules: an estimate on a start event is invalid.
    let dir = persisted_with_estimate();
    rewrite(
        dir.path(),
        |t| {
            t.replacen(
                "\"completion_tokens_estimate\":null",
                "\"completion_tokens_estimate\":1",
                1,
            )
        },
        |_| {},
    );
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    assert!(
        matches!(report.errors[0].kind, ErrorKind::EventInvalid(_)),
        "{report}"
    );
}

/// Turns a persisted v2 timeline into what a v1 writer made: the manifest says v1 and no
/// line has `completion_tokens_estimate` (hash and length recomputed).
fn as_v1(t: String) -> String {
    t.lines()
        .map(|l| {
            let mut v: serde_json::Map<String, Value> = serde_json::from_str(l).unwrap();
            v.remove("completion_tokens_estimate");
            serde_json::to_string(&v).unwrap() + "\n"
        })
        .collect()
}

#[test]
fn v1_file_without_the_estimate_field_still_verifies() {
    let dir = persisted(&complete_run());
    rewrite(dir.path(), as_v1, |m| {
        m["schema"] = "inferscope-bench.timeline/v1".into()
    });
    let text = std::fs::read_to_string(events_path(dir.path())).unwrap();
    assert!(!text.contains("completion_tokens_estimate"));
    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    assert_eq!(report.exit_code(), 0);
    assert_eq!(report.events.len(), 14);
    assert!(
        report
            .events
            .iter()
            .all(|e| e.completion_tokens_estimate.is_none())
    );
}

#[test]
fn v1_file_with_the_estimate_field_is_rejected() {
    for value in ["3", "null"] {
        let dir = persisted_with_estimate();
        // Every line as v1 except the request end, which keeps the v2-only field.
        rewrite(
            dir.path(),
            |t| {
                t.lines()
                    .map(|l| {
                        if l.contains("\"request_end\"") {
                            let mut v: serde_json::Map<String, Value> =
                                serde_json::from_str(l).unwrap();
                            v.insert(
                                "completion_tokens_estimate".into(),
                                serde_json::from_str(value).unwrap(),
                            );
                            serde_json::to_string(&v).unwrap() + "\n"
                        } else {
                            as_v1(l.to_string())
                        }
                    })
                    .collect()
            },
            |m| m["schema"] = "inferscope-bench.timeline/v1".into(),
        );
        let report = verify(dir.path());
        assert_eq!(report.exit_code(), 1, "{value}: {report}");
        // Only that line is malformed (the rest follow from losing it).
        let malformed: Vec<_> = report
            .errors
            .iter()
            .filter(|e| matches!(e.kind, ErrorKind::LineMalformed(_)))
            .collect();
        assert_eq!(malformed.len(), 1, "{value}: {report}");
        let e = &report.errors[0];
        assert_eq!(e.line, Some(3), "{value}");
        match &e.kind {
            ErrorKind::LineMalformed(msg) => assert!(msg.contains("unknown field"), "{msg}"),
            k => panic!("{value}: {k:?}"),
        }
    }
}

#[test]
fn unknown_schema_reads_no_events() {
    for schema in [
        "inferscope-bench.timeline/v3",
        "inferscope-bench.timeline/v0",
        "",
    ] {
        let dir = persisted_with_estimate();
        rewrite(dir.path(), |t| t, |m| m["schema"] = schema.into());
        let report = verify(dir.path());
        assert_eq!(kinds(&report), [ErrorKind::UnknownSchema], "{schema:?}");
        assert!(report.events.is_empty());
        assert_ne!(report.exit_code(), 0);
        assert!(report.to_string().contains("neither"), "{report}");
    }
}

#[test]
fn negative_and_non_integer_numbers_are_rejected() {
    for bad in [
        "\"attempt\":-1",
        "\"attempt\":1.5",
        "\"attempt\":1e3",
        "\"attempt\":\"1\"",
    ] {
        let dir = persisted(&complete_run());
        rewrite(
            dir.path(),
            |t| t.replacen("\"attempt\":null", bad, 1),
            |_| {},
        );
        let report = verify(dir.path());
        assert!(
            matches!(
                report.errors.first().map(|e| &e.kind),
                Some(ErrorKind::LineMalformed(_))
            ),
            "{bad}: {report}"
        );
    }
}

#[test]
fn duplicate_and_out_of_order_seq_are_errors() {
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| {
            let lines: Vec<&str> = t.lines().collect();
            let mut out: Vec<&str> = lines[..3].to_vec();
            out.push(lines[2]);
            out.extend(&lines[3..]);
            out.join("\n") + "\n"
        },
        |m| m["event_count"] = 15.into(),
    );
    let report = verify(dir.path());
    assert_eq!(report.errors[0].line, Some(4));
    assert_eq!(report.errors[0].kind, ErrorKind::DuplicateSeq);

    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| {
            let mut lines: Vec<&str> = t.lines().collect();
            lines.swap(4, 5);
            lines.join("\n") + "\n"
        },
        |_| {},
    );
    let report = verify(dir.path());
    assert!(
        kinds(&report).contains(&ErrorKind::SeqOutOfOrder { previous: 6 }),
        "{report}"
    );
}

/// Drops the line with `"seq":N,` and records the loss in the manifest as `partial`.
fn drop_line(t: String, seq: u64) -> String {
    let needle = format!("{{\"seq\":{seq},");
    t.lines()
        .filter(|l| !l.starts_with(&needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn unmatched_end_is_an_error_when_complete_and_a_gap_when_partial() {
    // Seq 4 is the start of request span 4 (seq 3 is the execution phase start).
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| drop_line(t, 4),
        |m| m["event_count"] = 13.into(),
    );
    let report = verify(dir.path());
    assert_eq!(report.exit_code(), 1);
    let k = kinds(&report);
    assert!(
        k.contains(&ErrorKind::UnmatchedEnd { span_id: 4 }),
        "{report}"
    );
    assert!(k.contains(&ErrorKind::SeqGap { previous: 3 }), "{report}");

    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| drop_line(t, 4),
        |m| {
            m["event_count"] = 13.into();
            m["quality"] = "partial".into();
            m["dropped"]["unwritten"] = 1.into();
            m["dropped_count"] = 1.into();
            m["quality_reasons"] = serde_json::json!(["events_lost"]);
        },
    );
    let report = verify(dir.path());
    assert!(report.ok(), "{report}");
    assert!(report.gaps.contains(&Gap::SeqGap {
        previous: 3,
        next: 5
    }));
    assert!(
        report
            .gaps
            .iter()
            .any(|g| matches!(g, Gap::MissingStart { span_id: 4, .. }))
    );
    assert!(
        report
            .to_string()
            .contains("end of span 4 whose start is missing")
    );
}

#[test]
fn unmatched_start_in_complete_capture_is_an_error() {
    // Remove the end of the harness span (last line) but leave the manifest complete.
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| drop_line(t, 14),
        |m| m["event_count"] = 13.into(),
    );
    let report = verify(dir.path());
    assert!(
        kinds(&report).contains(&ErrorKind::UnclosedSpanInCompleteCapture { span_id: 13 }),
        "{report}"
    );
    assert_eq!(report.unknown_end_spans, vec![13]);
}

#[test]
fn bad_parent_references_are_errors() {
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| t.replacen("\"parent_span_id\":3,", "\"parent_span_id\":999,", 1),
        |_| {},
    );
    let report = verify(dir.path());
    assert!(
        kinds(&report).contains(&ErrorKind::UnknownParent {
            span_id: 4,
            parent: 999
        }),
        "{report}"
    );
    // The same start/end mismatch is reported for the end, whose parent is still 3.
    assert!(
        kinds(&report).contains(&ErrorKind::EndMismatch { span_id: 4 }),
        "{report}"
    );
}

#[test]
fn clock_binding_to_the_manifest_is_checked() {
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| t.replacen("mono:host-a:77:1726000000000000000", "mono:host-b:1:1", 1),
        |_| {},
    );
    assert!(kinds(&verify(dir.path())).contains(&ErrorKind::ClockDomainMismatch));
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| t.replacen("20:26:40.000001000Z", "20:26:41.000001000Z", 1),
        |_| {},
    );
    assert!(kinds(&verify(dir.path())).contains(&ErrorKind::WallTimeMismatch));
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| {
            t.replacen("\"elapsed_ns\":2000,", "\"elapsed_ns\":500,", 1)
                .replacen("20:26:40.000002000Z", "20:26:40.000000500Z", 1)
        },
        |_| {},
    );
    let report = verify(dir.path());
    assert!(
        kinds(&report).contains(&ErrorKind::ClockRegression {
            previous_ns: 1000,
            elapsed_ns: 500
        }),
        "{report}"
    );
}

#[test]
fn line_and_manifest_size_bounds_are_enforced_on_read() {
    let dir = persisted(&complete_run());
    rewrite(
        dir.path(),
        |t| t,
        |m| m["bounds"]["max_event_bytes"] = 300.into(),
    );
    let report = verify(dir.path());
    assert!(
        report
            .errors
            .iter()
            .any(|e| matches!(e.kind, ErrorKind::LineTooLong { limit: 300, .. })),
        "{report}"
    );

    let dir = persisted(&complete_run());
    let mut m = std::fs::read(manifest_path(dir.path())).unwrap();
    m.extend(std::iter::repeat_n(b' ', 16 * 1024));
    std::fs::write(manifest_path(dir.path()), m).unwrap();
    assert_eq!(
        kinds(&verify(dir.path())),
        vec![ErrorKind::ManifestTooLarge { limit: 16 * 1024 }]
    );
}

#[test]
fn symlinked_manifest_is_refused() {
    let dir = persisted(&complete_run());
    let real = dir.path().join("elsewhere.json");
    std::fs::rename(manifest_path(dir.path()), &real).unwrap();
    std::os::unix::fs::symlink(&real, manifest_path(dir.path())).unwrap();
    let report = verify(dir.path());
    assert_eq!(kinds(&report), vec![ErrorKind::NotRegularFile("manifest")]);
    assert_eq!(report.exit_code(), 1);
}

#[test]
fn inconsistent_manifest_counts_are_errors() {
    let dir = persisted(&complete_run());
    rewrite(dir.path(), |t| t, |m| m["dropped"]["capacity"] = 3.into());
    let report = verify(dir.path());
    assert!(kinds(&report).contains(&ErrorKind::ManifestInvalid(
        "dropped_count != sum of dropped"
    )));
    assert!(kinds(&report).contains(&ErrorKind::ManifestInvalid(
        "quality_reasons inconsistent with counts"
    )));
}
