//! Tests of check parsing and evaluation.

use serde_json::json;

use super::*;

fn check(toml_text: &str) -> Check {
    toml::from_str::<Check>(toml_text).unwrap_or_else(|e| panic!("{e}"))
}

fn check_err(toml_text: &str) -> String {
    toml::from_str::<Check>(toml_text)
        .unwrap_err()
        .message()
        .to_string()
}

fn answer(a: &str) -> GradeSubject<'_> {
    GradeSubject {
        final_answer: Some(a),
        stdout: None,
        tool_calls: &[],
        valid_tool_calls: &[],
        choices: &[],
    }
}

fn one(c: &Check, s: &GradeSubject<'_>) -> CheckResult {
    evaluate(std::slice::from_ref(c), s).remove(0)
}

#[test]
fn checks_deserialize_per_kind_with_defaults() {
    let c = check("kind = \"contains\"\nvalue = \"Oslo\"");
    assert!(
        matches!(c, Check::Contains { ref value, target: CheckTarget::FinalAnswer } if value == "Oslo")
    );
    let c = check("kind = \"tool_called\"\ntool = \"read_file\"");
    assert!(matches!(c, Check::ToolCalled { min_times: 1, .. }));
    let c = check("kind = \"regex\"\npattern = \"^ok$\"\ntarget = \"stdout\"");
    assert_eq!(c.target(), Some(CheckTarget::Stdout));
    let c = check("kind = \"json_path\"\npath = \"$.a\"\nequals = { b = [1, 2] }");
    assert!(matches!(c, Check::JsonPath { equals: Some(ref v), .. } if *v == json!({"b": [1, 2]})));
}

#[test]
fn check_errors_name_the_key() {
    assert_eq!(
        check_err("kind = \"equals\""),
        "a `equals` check needs `value`"
    );
    assert_eq!(
        check_err("kind = \"regex\"\npattern = \"a\"\nvalue = \"b\""),
        "`value` does not apply to a `regex` check (it takes `pattern`, `target`, `choice`)"
    );
    assert_eq!(
        check_err("kind = \"tool_called\"\ntool = \"t\"\ntarget = \"stdout\""),
        "`target` does not apply to a `tool_called` check (it takes `tool`, `min_times`, `valid_arguments`)"
    );
    assert_eq!(
        check_err("kind = \"regex\"\npattern = \"a{2\""),
        "invalid regex: unclosed counted repetition"
    );
    assert!(check_err("kind = \"json_path\"\npath = \"a.b\"").starts_with("invalid JSON path"));
    assert_eq!(
        check_err("kind = \"tool_called\"\ntool = \"t\"\nmin_times = 0"),
        "`min_times` must be at least 1"
    );
    let raw: RawCheck = toml::from_str("kind = \"contains\"").unwrap();
    let e = Check::try_from(raw).unwrap_err();
    assert_eq!((e.field, e.problem), ("value", CheckProblem::Missing));
    assert!(toml::from_str::<Check>("kind = \"contains\"\nvalue = \"x\"\nvlaue = \"y\"").is_err());
}

#[test]
fn contains_equals_regex() {
    let c = check("kind = \"contains\"\nvalue = \"Oslo\"");
    assert!(one(&c, &answer("It rains in Oslo.")).passed);
    let r = one(&c, &answer("It rains in Bergen."));
    assert!(!r.passed);
    // Reasons carry sizes, never content.
    assert_eq!(
        r.reason.as_deref(),
        Some("final_answer (19 bytes) does not contain the expected text")
    );
    assert_eq!(r.check, "contains(final_answer)");

    let c = check("kind = \"equals\"\nvalue = \"42\"");
    assert!(one(&c, &answer("  42\n")).passed);
    assert!(!one(&c, &answer("42.0")).passed);

    let c = check("kind = \"regex\"\npattern = \"(?i)^answer: \\\\d+$\"");
    assert!(one(&c, &answer("Answer: 42")).passed);
    let r = one(&c, &answer("Answer: forty-two"));
    assert_eq!(
        r.reason.as_deref(),
        Some("final_answer (17 bytes) does not match the pattern")
    );
}

#[test]
fn absent_targets_fail_with_a_reason() {
    let c = check("kind = \"contains\"\nvalue = \"x\"");
    let r = one(&c, &GradeSubject::default());
    assert_eq!(
        (r.passed, r.reason.as_deref()),
        (false, Some("no final answer"))
    );
    let c = check("kind = \"contains\"\nvalue = \"ok\"\ntarget = \"stdout\"");
    let r = one(&c, &answer("ok"));
    assert_eq!(r.reason.as_deref(), Some("no stdout captured"));
    let s = GradeSubject {
        final_answer: None,
        stdout: Some("tests: ok\n"),
        tool_calls: &[],
        valid_tool_calls: &[],
        choices: &[],
    };
    assert!(one(&c, &s).passed);
}

#[test]
fn tool_called_counts_calls() {
    let calls = vec!["read_file".to_string(), "search".into(), "read_file".into()];
    let s = GradeSubject {
        final_answer: Some("x"),
        stdout: None,
        tool_calls: &calls,
        valid_tool_calls: &calls,
        choices: &[],
    };
    assert!(
        one(
            &check("kind = \"tool_called\"\ntool = \"read_file\"\nmin_times = 2"),
            &s
        )
        .passed
    );
    let r = one(
        &check("kind = \"tool_called\"\ntool = \"read_file\"\nmin_times = 3"),
        &s,
    );
    assert_eq!(
        r.reason.as_deref(),
        Some("`read_file` called 2 time(s), at least 3 required")
    );
    assert_eq!(r.check, "tool_called(read_file, min 3)");
    assert!(!one(&check("kind = \"tool_called\"\ntool = \"write\""), &s).passed);
}

#[test]
fn json_path_exists_equals_and_unparsable() {
    let exists = check("kind = \"json_path\"\npath = \"$.city\"");
    assert!(one(&exists, &answer(r#"{"city": "Oslo"}"#)).passed);
    let r = one(&exists, &answer(r#"{"town": "Oslo"}"#));
    assert_eq!(r.reason.as_deref(), Some("`$.city` matches nothing"));

    let eq = check("kind = \"json_path\"\npath = \"$.answer\"\nequals = 42");
    assert!(one(&eq, &answer(r#"{"answer": 42.0}"#)).passed);
    assert!(one(&eq, &answer("```json\n{\"answer\": 42}\n```")).passed);
    let r = one(&eq, &answer(r#"{"answer": "42"}"#));
    assert_eq!(
        r.reason.as_deref(),
        Some("`$.answer` matches a different value")
    );
    assert_eq!(r.check, "json_path(final_answer, $.answer ==)");

    let r = one(&eq, &answer("The answer is 42."));
    assert!(!r.passed);
    assert_eq!(
        r.reason.as_deref(),
        Some("final_answer is not JSON (line 1, column 1: syntax error)")
    );

    let many = check("kind = \"json_path\"\npath = \"$.items[*].id\"\nequals = [1, 2]");
    assert!(one(&many, &answer(r#"{"items": [{"id": 1}, {"id": 2}]}"#)).passed);
    let r = one(&many, &answer(r#"{"items": [{"id": 2}, {"id": 1}]}"#));
    assert_eq!(
        r.reason.as_deref(),
        Some("`$.items[*].id` matches 2 nodes whose array differs from the expected value")
    );
}

#[test]
fn evaluate_returns_one_result_per_check_in_order() {
    let checks = vec![
        check("kind = \"contains\"\nvalue = \"a\""),
        check("kind = \"contains\"\nvalue = \"z\""),
    ];
    let rs = evaluate(&checks, &answer("abc"));
    assert_eq!(
        rs.iter().map(|r| r.passed).collect::<Vec<_>>(),
        [true, false]
    );
    assert_eq!(
        serde_json::to_value(&rs[0]).unwrap(),
        json!({"check": "contains(final_answer)", "passed": true, "reason": null})
    );
    assert!(evaluate(&[], &answer("x")).is_empty());
}

/// `valid_arguments = true` counts only calls whose arguments passed the tool's schema: a
/// call the tool refused as `bad_arguments` is a call, never a valid one.
#[test]
fn tool_called_with_valid_arguments_counts_only_validated_calls() {
    let calls = vec!["get_weather".to_string(), "get_weather".into()];
    let valid = vec!["get_weather".to_string()];
    let s = GradeSubject {
        final_answer: Some("x"),
        stdout: None,
        tool_calls: &calls,
        valid_tool_calls: &valid,
        choices: &[],
    };
    let strict = check(
        "kind = \"tool_called\"\ntool = \"get_weather\"\nmin_times = 2\nvalid_arguments = true",
    );
    assert_eq!(
        strict.describe(),
        "tool_called(get_weather, min 2, valid arguments)"
    );
    let r = one(&strict, &s);
    assert!(!r.passed);
    assert_eq!(
        r.reason.as_deref(),
        Some(
            "`get_weather` called with valid arguments 1 time(s) (2 call(s) in all), at least 2 required"
        )
    );
    let any = check("kind = \"tool_called\"\ntool = \"get_weather\"\nmin_times = 2");
    assert!(one(&any, &s).passed);
    let none = GradeSubject {
        valid_tool_calls: &[],
        ..s
    };
    assert!(
        !one(
            &check("kind = \"tool_called\"\ntool = \"get_weather\"\nvalid_arguments = true"),
            &none
        )
        .passed
    );
}
