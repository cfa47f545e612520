use inferscope_bench::attribution::{
    MAX_MARKER_ERRORS, StepKind, StepMarker, parse_step_markers, step_markers_to_jsonl,
    write_step_markers,
};
use inferscope_bench::run_dir::{MarkerReadError, read_step_markers};

const GOOD: &str = r#"{"step_id":7,"kind":"llm_call","t_start_unix_ns":1726000010000000000,"t_end_unix_ns":1726000010200000000}"#;

#[test]
fn nanoseconds_are_exact_integers() {
    // 1726000010000000001 is not representable in f64 (it would round to …000000000).
    let text = r#"{"step_id":1,"kind":"tool","t_start_unix_ns":1726000010000000001,"t_end_unix_ns":1726000010000000003}"#;
    let m = parse_step_markers(text).unwrap();
    assert_eq!(m[0].t_start_unix_ns, 1_726_000_010_000_000_001);
    assert_eq!(m[0].t_end_unix_ns - m[0].t_start_unix_ns, 2);
    assert_eq!(m[0].kind, StepKind::Tool);
}

#[test]
fn floats_negatives_and_overflow_are_rejected_with_line_numbers() {
    let cases = [
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":1.7e18,"t_end_unix_ns":1726000010200000000}"#,
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":1726000010000000000.0,"t_end_unix_ns":1726000010200000000}"#,
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":-5,"t_end_unix_ns":1726000010200000000}"#,
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":18446744073709551616,"t_end_unix_ns":1726000010200000000}"#,
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":"1726000010000000000","t_end_unix_ns":1726000010200000000}"#,
        r#"{"step_id":1.0,"kind":"llm_call","t_start_unix_ns":1,"t_end_unix_ns":2}"#,
    ];
    for bad in cases {
        let text = format!("{GOOD}\n\n{bad}\n{GOOD}\n");
        let err = parse_step_markers(&text).unwrap_err();
        assert_eq!(err.bad_lines, 1, "{bad}");
        assert_eq!(err.errors.len(), 1);
        // Line 3: the blank line 2 still counts.
        assert_eq!(err.errors[0].line, 3, "{bad}");
        assert!(err.to_string().contains("line 3"), "{err}");
    }
}

#[test]
fn float_error_message_names_the_type() {
    let text = r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":1.7e18,"t_end_unix_ns":2}"#;
    let err = parse_step_markers(text).unwrap_err();
    assert!(
        err.errors[0].message.contains("floating point"),
        "{}",
        err.errors[0].message
    );
}

#[test]
fn unknown_kind_and_missing_fields_are_errors() {
    let text = concat!(
        r#"{"step_id":1,"kind":"harness","t_start_unix_ns":1,"t_end_unix_ns":2}"#,
        "\n",
        r#"{"step_id":2,"kind":"tool","t_start_unix_ns":1}"#,
        "\n",
        "not json\n",
    );
    let err = parse_step_markers(text).unwrap_err();
    assert_eq!(err.bad_lines, 3);
    let lines: Vec<usize> = err.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, vec![1, 2, 3]);
}

#[test]
fn error_list_is_bounded_but_counted() {
    let text = "x\n".repeat(MAX_MARKER_ERRORS + 5);
    let err = parse_step_markers(&text).unwrap_err();
    assert_eq!(err.errors.len(), MAX_MARKER_ERRORS);
    assert_eq!(err.bad_lines, MAX_MARKER_ERRORS + 5);
    assert!(err.to_string().contains("5 more"));
}

#[test]
fn bom_crlf_blank_lines_and_extra_fields_are_accepted() {
    let text = format!(
        "\u{feff}{GOOD}\r\n\r\n   \r\n{}\r\n",
        r#"{"step_id":8,"kind":"tool","t_start_unix_ns":1,"t_end_unix_ns":2,"trajectory":"t1","name":"search","framework":"deepagents"}"#
    );
    let m = parse_step_markers(&text).unwrap();
    assert_eq!(m.len(), 2);
    assert_eq!(m[0].step_id, 7);
    assert_eq!(m[1].trajectory.as_deref(), Some("t1"));
    assert_eq!(m[1].name.as_deref(), Some("search"));
}

#[test]
fn file_order_is_kept_not_sorted() {
    let text = concat!(
        r#"{"step_id":2,"kind":"tool","t_start_unix_ns":50,"t_end_unix_ns":60}"#,
        "\n",
        r#"{"step_id":1,"kind":"llm_call","t_start_unix_ns":10,"t_end_unix_ns":20}"#,
        "\n",
        r#"{"step_id":3,"kind":"tool","t_start_unix_ns":90,"t_end_unix_ns":80}"#,
        "\n",
    );
    let m = parse_step_markers(text).unwrap();
    let ids: Vec<u64> = m.iter().map(|m| m.step_id).collect();
    assert_eq!(ids, vec![2, 1, 3]);
}

#[test]
fn writer_round_trips_and_writes_null_not_absent() {
    let markers = vec![
        StepMarker {
            step_id: 1,
            kind: StepKind::LlmCall,
            t_start_unix_ns: u64::MAX - 10,
            t_end_unix_ns: u64::MAX,
            trajectory: Some("agentic::lookup#0".into()),
            name: Some("chat".into()),
        },
        StepMarker {
            step_id: 2,
            kind: StepKind::Tool,
            t_start_unix_ns: 5,
            t_end_unix_ns: 5,
            trajectory: None,
            name: None,
        },
    ];
    let text = step_markers_to_jsonl(&markers);
    assert_eq!(text.lines().count(), 2);
    assert!(text.ends_with('\n'));
    let second: serde_json::Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
    assert_eq!(second["trajectory"], serde_json::Value::Null);
    assert_eq!(second["name"], serde_json::Value::Null);
    assert!(second.as_object().unwrap().contains_key("trajectory"));
    assert!(text.contains("18446744073709551615"));
    assert_eq!(parse_step_markers(&text).unwrap(), markers);

    let mut buf = Vec::new();
    write_step_markers(&mut buf, &markers).unwrap();
    assert_eq!(String::from_utf8(buf).unwrap(), text);
}

#[test]
fn read_from_file_and_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("steps.jsonl");
    std::fs::write(&path, format!("{GOOD}\n")).unwrap();
    let m = read_step_markers(&path).unwrap();
    assert_eq!(m.markers.len(), 1);

    // A bad line is rejected with its line number; the valid ones are kept.
    std::fs::write(&path, format!("{{\"step_id\":1}}\n{GOOD}\n")).unwrap();
    let m = read_step_markers(&path).unwrap();
    assert_eq!(m.markers.len(), 1);
    assert_eq!(m.lines, [2]);
    assert_eq!(m.rejected[0].line, 1);
    assert_eq!(m.rejected_count, 1);
    assert!(m.problems("steps.jsonl")[0].starts_with("steps.jsonl:1: rejected step marker"));
    let missing = dir.path().join("nope.jsonl");
    assert!(matches!(
        read_step_markers(&missing),
        Err(MarkerReadError::Io { .. })
    ));
}
