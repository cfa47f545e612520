//! Framing tests: field cases C03, C04 (+ variant B), C05, C30, and the framer against
//! eventsource-stream (the field parser it replaced) on arbitrary streams and read splits.

use super::*;
use crate::record::{RequestStatus, TokenSource};

const MS: u64 = 1_000_000;

fn reads(parts: &[(u64, &str)]) -> Vec<(u64, Bytes)> {
    parts
        .iter()
        .map(|&(ms, s)| (ms * MS, Bytes::copy_from_slice(s.as_bytes())))
        .collect()
}

fn head() -> RequestHead {
    RequestHead {
        request_id: "t".into(),
        stream: true,
        ..RequestHead::default()
    }
}

/// `bytes` as reads cut at `cuts` (positions within `bytes`, any order), read `i` arriving
/// at `i` ns.
fn split_reads(bytes: &[u8], mut cuts: Vec<usize>) -> Vec<(u64, Bytes)> {
    cuts.sort_unstable();
    cuts.dedup();
    let mut reads = Vec::new();
    let mut prev = 0;
    for (i, &c) in cuts.iter().chain(std::iter::once(&bytes.len())).enumerate() {
        reads.push((i as u64, Bytes::copy_from_slice(&bytes[prev..c])));
        prev = c;
    }
    reads
}

fn arrivals_ms(events: &[SseEvent]) -> Vec<u64> {
    events.iter().map(|e| e.arrival_ns / MS).collect()
}

#[test]
fn c03_comments_and_dataless_events_dispatch_nothing() {
    let r = reads(&[
        (15000, ": keep-alive\n\n"),
        (30000, ":\n\n"),
        (
            30500,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        ),
        (31000, ": ping\n\nevent: ping\n\n"),
        (
            31200,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n",
        ),
        (31201, "data: [DONE]\n\n"),
    ]);
    // Every read counts as liveness: the longest silence is 15 s < the 20 s idle timeout.
    let longest_gap = r
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .chain(std::iter::once(r[0].0))
        .max()
        .unwrap();
    assert_eq!(longest_gap, 15_000 * MS);
    let (events, err) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 3, "0 extra events: {events:?}");
    assert_eq!(arrivals_ms(&events), vec![30500, 31200, 31201]);
    assert!(events.iter().all(|e| e.event_type.is_none()));
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.status, RequestStatus::Success);
    assert_eq!(rec.ttft_ms(), Some(31200.0));
    assert_eq!(rec.output.text, "ok");
    assert_eq!(rec.first_byte_ns, Some(15_000 * MS));
}

#[test]
fn c04_events_split_across_reads_and_coalesced_in_one_read() {
    let e1 = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
    let e2 = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\n";
    let r1 = "data: {\"choices\":[{\"ind";
    assert!(e1.starts_with(r1));
    let r2 = format!("{}{}da", &e1[r1.len()..], e2);
    let r = reads(&[(100, r1), (130, &r2), (150, "ta: [DONE]\n\n")]);
    let (events, err) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(arrivals_ms(&events), vec![130, 130, 150]);
    assert_eq!(events[2].data, "[DONE]");
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.status, RequestStatus::Success);
    assert_eq!(rec.output.text, "Hello");
    assert_eq!(rec.token_event_count, 2);
    assert_eq!(rec.ttft_ms(), Some(130.0));
    assert_eq!(rec.itl_ms(), vec![0.0]);
    assert_eq!(rec.e2e_ms(), Some(150.0));
    assert_eq!(rec.error, None);
}

#[test]
fn c04b_multi_line_data_is_joined_with_lf() {
    let r = reads(&[
        (
            10,
            "data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"x\"}}]}\n\n",
        ),
        (11, "data: [DONE]\n\n"),
    ]);
    let (events, err) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(
        events[0].data,
        "{\"choices\":[{\"index\":0,\n\"delta\":{\"content\":\"x\"}}]}"
    );
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert!(rec.is_success());
    assert_eq!(rec.output.text, "x");
}

fn c05_reads() -> Vec<(u64, Bytes)> {
    reads(&[
        (
            100,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\r\n\r\n",
        ),
        (
            110,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"}}]}\n\r\n",
        ),
        (
            120,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"c\"}}]}\r\r",
        ),
        (
            130,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"d\"}}]}\r",
        ),
        (140, "\n\r\n"),
        (
            145,
            "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"e\"}}]}\n\n",
        ),
        (
            146,
            "data:  {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"f\"}}]}\n\n",
        ),
        (150, "data:[DONE]\n\n"),
    ])
}

#[test]
fn c05_line_ending_variants_and_optional_space() {
    let (events, err) = frame_reads(c05_reads(), DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    // No event held until a later read, no phantom events.
    assert_eq!(
        arrivals_ms(&events),
        vec![100, 110, 120, 140, 145, 146, 150]
    );
    // Only the first space after the colon is stripped.
    assert!(events[5].data.starts_with(" {"));
    assert_eq!(events[6].data, "[DONE]");
    let rec = replay_reads(c05_reads(), DEFAULT_MAX_EVENT_BYTES, head());
    assert!(rec.is_success());
    assert_eq!(rec.output.text, "abcdef");
    assert_eq!(rec.ttft_ms(), Some(100.0));
    assert_eq!(rec.itl_ms(), vec![10.0, 10.0, 20.0, 5.0, 1.0]);
    assert_eq!(rec.e2e_ms(), Some(150.0));
}

#[test]
fn c05_byte_by_byte_reads_give_the_same_events() {
    let whole: Vec<u8> = c05_reads()
        .into_iter()
        .flat_map(|(_, b)| b.to_vec())
        .collect();
    let r: Vec<(u64, Bytes)> = whole
        .iter()
        .enumerate()
        .map(|(i, &b)| (i as u64, Bytes::copy_from_slice(&[b])))
        .collect();
    let (events, err) = frame_reads(r, DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 7);
    let (reference, _) = frame_reads(c05_reads(), DEFAULT_MAX_EVENT_BYTES);
    let data: Vec<_> = events.iter().map(|e| e.data.as_str()).collect();
    let want: Vec<_> = reference.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(data, want);
}

#[test]
fn crlf_split_across_reads_is_one_line_end() {
    let r = reads(&[(1, "data: x\r"), (2, "\ndata: y\r"), (3, "\n\r"), (4, "\n")]);
    let (events, err) = frame_reads(r, DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].data, "x\ny");
    // The blank line's CR arrived at 3 ms: the event is complete then, not at 4 ms.
    assert_eq!(events[0].arrival_ns, 3 * MS);
}

#[test]
fn event_type_field_is_kept() {
    let r = reads(&[(
        5,
        "event: error\r\ndata: {\"message\":\"bad request\"}\r\n\r\n",
    )]);
    let (events, _) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert_eq!(events[0].event_type.as_deref(), Some("error"));
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.failure_code, Some(FailureCode::StreamError));
    assert_eq!(rec.error.as_deref(), Some("bad request"));
}

#[test]
fn c07d_unknown_field_then_eof_is_incomplete() {
    let r = reads(&[
        (
            200,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Par\"}}]}\n\n",
        ),
        (230, "error: {\"code\":500}\n\n"),
    ]);
    let (events, err) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 1);
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.failure_code, Some(FailureCode::IncompleteStream));
}

fn c30_event() -> (String, usize) {
    let args = format!("{{\"blob\":\"{}\"}}", "a".repeat(3_145_728));
    let encoded = serde_json::to_string(&args).unwrap();
    let event = format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"id\":\"c\",\"type\":\"function\",\"function\":{{\"name\":\"put\",\"arguments\":{encoded}}}}}]}}}}]}}\n\n"
    );
    (event, args.chars().count())
}

fn in_64k_reads(s: &str) -> Vec<(u64, Bytes)> {
    let mut out: Vec<(u64, Bytes)> = s
        .as_bytes()
        .chunks(64 * 1024)
        .enumerate()
        .map(|(i, c)| (i as u64 * MS, Bytes::copy_from_slice(c)))
        .collect();
    let t = out.len() as u64 * MS;
    out.push((t, Bytes::from_static(b"data: [DONE]\n\n")));
    out
}

#[test]
fn c30_three_mib_event_parses_under_the_default_cap() {
    let (event, args_len) = c30_event();
    assert_eq!(args_len, 3_145_739);
    let rec = replay_reads(in_64k_reads(&event), DEFAULT_MAX_EVENT_BYTES, head());
    assert!(rec.is_success(), "{:?}", rec.error);
    assert_eq!(rec.output.tool_calls.len(), 1);
    assert_eq!(
        rec.output.tool_calls[0].arguments.chars().count(),
        3_145_739
    );
    assert_eq!(rec.output.tool_calls[0].name, "put");
    assert_eq!(rec.token_source(), Some(TokenSource::ClientEstimate));
}

#[test]
fn c30_event_over_the_cap_fails_with_bounded_memory() {
    let (event, _) = c30_event();
    let cap = 1024 * 1024;
    // Memory: the splitter never holds more than the cap plus one read.
    let mut framer = SseFramer::new(cap);
    let mut dispatched = 0;
    let mut failed_at = None;
    for (i, chunk) in event.as_bytes().chunks(64 * 1024).enumerate() {
        let pushed = framer.push(chunk, |_| {
            dispatched += 1;
            ControlFlow::Continue(())
        });
        match pushed {
            Ok(_) => assert!(framer.buffered() <= cap),
            Err(FrameError::TooLarge { buffered, limit }) => {
                assert!(buffered > limit && buffered <= cap + 64 * 1024);
                failed_at = Some(i);
                break;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(failed_at, Some(16), "fails on the read that crosses 1 MiB");
    assert_eq!(dispatched, 0);

    let rec = replay_reads(in_64k_reads(&event), cap, head());
    assert_eq!(rec.status, RequestStatus::Failed);
    assert_eq!(rec.failure_code, Some(FailureCode::EventTooLarge));
    assert!(rec.error.as_deref().unwrap().contains("max_event_bytes"));
}

#[test]
fn complete_event_over_the_cap_in_one_read_also_fails_after_earlier_events() {
    let small = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n";
    let big = format!("data: {}\n\n", "x".repeat(200));
    let r = vec![(MS, Bytes::from(format!("{small}{big}")))];
    let (events, err) = frame_reads(r, 100);
    assert_eq!(
        events.len(),
        1,
        "the event before the oversized one is delivered"
    );
    assert!(matches!(
        err,
        Some(SseError::EventTooLarge { limit: 100, .. })
    ));
}

#[test]
fn invalid_utf8_fails_instead_of_buffering_forever() {
    let r = vec![
        (MS, Bytes::from_static(b"data: {\"x\":\"\xff\"}\n\n")),
        (2 * MS, Bytes::from_static(b"data: [DONE]\n\n")),
    ];
    let (events, err) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert!(events.is_empty());
    assert!(matches!(err, Some(SseError::InvalidUtf8)));
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.failure_code, Some(FailureCode::MalformedEvent));
}

#[test]
fn utf8_split_across_reads_is_fine() {
    let s =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"é→\"}}]}\n\ndata: [DONE]\n\n";
    let bytes = s.as_bytes();
    let cut = s.find('é').unwrap() + 1; // inside the 2-byte char
    let r = vec![
        (MS, Bytes::copy_from_slice(&bytes[..cut])),
        (2 * MS, Bytes::copy_from_slice(&bytes[cut..])),
    ];
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert!(rec.is_success());
    assert_eq!(rec.output.text, "é→");
    assert_eq!(rec.ttft_ms(), Some(2.0));
}

#[test]
fn bom_and_leading_blank_lines_are_harmless() {
    // eventsource-stream 0.2.3 alone panics on a leading BOM; here it is dropped.
    let ev = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"z\"},\"finish_reason\":\"stop\"}]}\n\n";
    let r = reads(&[(1, &format!("\u{feff}\n\n{ev}"))]);
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert!(rec.is_success());
    assert_eq!(rec.output.text, "z");
    // BOM split across reads.
    let bom = "\u{feff}".as_bytes();
    let r = vec![
        (MS, Bytes::copy_from_slice(&bom[..1])),
        (2 * MS, Bytes::copy_from_slice(&bom[1..])),
        (3 * MS, Bytes::copy_from_slice(ev.as_bytes())),
    ];
    let (events, err) = frame_reads(r, DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 1);
    // A second BOM is not stripped (it becomes part of an unknown field name) and does
    // not panic either.
    let r = reads(&[(1, &format!("\u{feff}\u{feff}data: x\n\n{ev}"))]);
    let (events, err) = frame_reads(r, DEFAULT_MAX_EVENT_BYTES);
    assert!(err.is_none());
    assert_eq!(events.len(), 1);
    assert!(events[0].data.contains("\"z\""));
}

#[test]
fn truncated_final_event_is_not_dispatched() {
    let r = reads(&[
        (
            1,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
        ),
        (
            2,
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n",
        ),
    ]);
    let (events, _) = frame_reads(r.clone(), DEFAULT_MAX_EVENT_BYTES);
    assert_eq!(events.len(), 1);
    let rec = replay_reads(r, DEFAULT_MAX_EVENT_BYTES, head());
    assert_eq!(rec.failure_code, Some(FailureCode::IncompleteStream));
}

mod prop {
    use super::*;
    use proptest::prelude::*;

    const STREAM: &str = "\u{feff}: hello\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: error\r\ndata: x\rdata: y\r\r\
data:z\n\n: ping\n\nevent: ping\n\ndata:  two spaces\n\r\nid: 7\nretry: 10\ndata: é→\r\n\n";

    fn framed(reads: Vec<(u64, Bytes)>) -> Vec<(Option<String>, String)> {
        let (events, err) = frame_reads(reads, DEFAULT_MAX_EVENT_BYTES);
        assert!(err.is_none());
        events.into_iter().map(|e| (e.event_type, e.data)).collect()
    }

    proptest! {
        /// However the bytes are split into reads, the same events come out.
        #[test]
        fn any_read_split_gives_the_same_events(cuts in proptest::collection::vec(0..STREAM.len(), 0..20)) {
            let reads = split_reads(STREAM.as_bytes(), cuts);
            let whole = framed(vec![(0, Bytes::from_static(STREAM.as_bytes()))]);
            prop_assert_eq!(whole.len(), 5);
            prop_assert_eq!(framed(reads), whole);
        }
    }

    #[test]
    fn reference_events_of_the_property_stream() {
        let got = framed(vec![(0, Bytes::from_static(STREAM.as_bytes()))]);
        let want: Vec<(Option<String>, String)> = vec![
            (None, "{\"a\":1}".into()),
            (Some("error".into()), "x\ny".into()),
            (None, "z".into()),
            (None, " two spaces".into()),
            (None, "é→".into()),
        ];
        assert_eq!(got, want);
    }
}

/// The framer against eventsource-stream 0.2.3, the field parser it replaced: on any
/// stream of SSE lines (every field kind, comments, blank lines, all three line endings)
/// split into reads anywhere, the same events come out. eventsource-stream is given the
/// whole stream in one piece (it holds a read-final CR, and panics on a BOM, so neither
/// is generated here; C05 and `bom_and_leading_blank_lines_are_harmless` cover them).
mod against_eventsource_stream {
    use super::*;
    use eventsource_stream::Eventsource;
    use proptest::prelude::*;

    fn line() -> impl Strategy<Value = String> {
        let value = "[a-z :{}\"é→]{0,8}";
        prop_oneof![
            value.prop_map(|v| format!("data: {v}")),
            value.prop_map(|v| format!("data:{v}")),
            Just("data".to_string()),
            value.prop_map(|v| format!("event: {v}")),
            Just("event: message".to_string()),
            Just("event:".to_string()),
            value.prop_map(|v| format!(":{v}")),
            value.prop_map(|v| format!("id: {v}")),
            Just("retry: 10".to_string()),
            value.prop_map(|v| format!("x{v}: y")),
            Just(String::new()),
            Just(String::new()),
        ]
    }

    fn eol() -> impl Strategy<Value = &'static str> {
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]
    }

    fn reference(stream: &str) -> Vec<(Option<String>, String)> {
        let mut whole = stream.to_string();
        if whole.ends_with('\r') {
            // A final CR is a complete line end; the crate would wait for a possible LF.
            whole.push('\n');
        }
        let source = futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from(whole))]);
        let mut events = source.eventsource();
        let mut out = Vec::new();
        while let Some(Some(item)) = futures_util::StreamExt::next(&mut events).now_or_never() {
            let ev = item.expect("eventsource-stream parses generated lines");
            out.push(((ev.event != "message").then_some(ev.event), ev.data));
        }
        out
    }

    use futures_util::FutureExt;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn same_events_as_eventsource_stream(
            lines in proptest::collection::vec((line(), eol()), 0..40),
            mut cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let stream: String = lines.iter().map(|(l, e)| format!("{l}{e}")).collect();
            cuts.retain(|&c| c < stream.len());
            let reads = split_reads(stream.as_bytes(), cuts);
            let (events, err) = frame_reads(reads, DEFAULT_MAX_EVENT_BYTES);
            prop_assert!(err.is_none());
            let got: Vec<(Option<String>, String)> =
                events.into_iter().map(|e| (e.event_type, e.data)).collect();
            prop_assert_eq!(got, reference(&stream));
        }
    }
}
