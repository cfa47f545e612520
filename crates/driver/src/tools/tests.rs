//! Tests of fixture tools: OpenAI tool entries, response tables, fixed responses,
//! argument validation and the read-root sandbox.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::suite;

/// `fixtures/testdata/suite` of the workspace (this crate is crates/driver; tests run in
/// its directory).
fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/testdata/suite")
}

fn registry() -> ToolRegistry {
    let s = suite::load(&testdata().join("suites/full.toml")).unwrap_or_else(|e| panic!("{e}"));
    ToolRegistry::new(&s).unwrap()
}

#[track_caller]
fn assert_err(r: &ToolResult, code: ToolErrorCode) {
    assert_eq!(r.status, ToolStatus::Error, "{r:?}");
    assert_eq!(r.error_code, Some(code), "{r:?}");
    let v: serde_json::Value = serde_json::from_str(&r.content).unwrap();
    assert_eq!(v["error"]["code"], code.as_str());
    assert!(v["error"]["message"].is_string());
}

#[track_caller]
fn assert_ok(r: &ToolResult, content: &str) {
    assert_eq!(r.status, ToolStatus::Ok, "{r:?}");
    assert_eq!(r.error_code, None);
    assert_eq!(r.content, content);
}

#[test]
fn openai_tools_are_function_entries_in_the_requested_order() {
    let reg = registry();
    let v = reg.openai_tools(&["weather".into(), "read_file".into(), "nope".into()]);
    assert_eq!(v.len(), 2);
    assert_eq!(
        v[0],
        json!({"type": "function", "function": {
            "name": "weather",
            "description": "Current weather for a city",
            "parameters": {"type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"]}
        }})
    );
    assert_eq!(v[1]["function"]["name"], "read_file");
    assert_eq!(
        reg.openai_tools(&["forecast".into()])[0]["function"]["parameters"],
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn response_table_matches_by_parsed_json_equality() {
    let reg = registry();
    let oslo = std::fs::read_to_string(testdata().join("fixtures/tools/weather.json")).unwrap();
    let bergen = std::fs::read_to_string(testdata().join("fixtures/tools/bergen.json")).unwrap();
    assert_ok(&reg.execute("weather", r#"{"city":"Oslo"}"#), &oslo);
    assert_ok(&reg.execute("weather", r#" { "city" : "Oslo" } "#), &oslo);
    // Key order and number spelling do not matter.
    assert_ok(
        &reg.execute("weather", r#"{"days":1,"city":"Bergen"}"#),
        &bergen,
    );
    assert_ok(
        &reg.execute("weather", r#"{"city":"Bergen","days":1.0}"#),
        &bergen,
    );
    assert_ok(&reg.execute("weather", r#"{"city":"Tromsø"}"#), "snow");
    // No row matches → the tool's default.
    assert_ok(
        &reg.execute("weather", r#"{"city":"Bergen","days":2}"#),
        "no data",
    );
    // No row and no default → no_matching_response.
    assert_ok(&reg.execute("strict", r#"{"q":"a"}"#), "A");
    assert_err(
        &reg.execute("strict", r#"{"q":"b"}"#),
        ToolErrorCode::NoMatchingResponse,
    );
}

#[test]
fn fixed_response_ignores_arguments_and_accepts_empty_arguments() {
    let reg = registry();
    let oslo = std::fs::read_to_string(testdata().join("fixtures/tools/weather.json")).unwrap();
    assert_ok(&reg.execute("forecast", ""), &oslo);
    assert_ok(&reg.execute("forecast", "{}"), &oslo);
    assert_ok(&reg.execute("forecast", r#"{"anything": [1, 2]}"#), &oslo);
}

#[test]
fn arguments_are_validated_against_the_declared_schema() {
    let reg = registry();
    assert_err(
        &reg.execute("weather", "{not json"),
        ToolErrorCode::BadArguments,
    );
    assert_err(&reg.execute("weather", "[1]"), ToolErrorCode::BadArguments);
    assert_err(&reg.execute("weather", "{}"), ToolErrorCode::BadArguments);
    assert_err(
        &reg.execute("weather", r#"{"city": 3}"#),
        ToolErrorCode::BadArguments,
    );
    assert_err(
        &reg.execute("weather", r#"{"city":"Oslo","days":1.5}"#),
        ToolErrorCode::BadArguments,
    );
    let r = reg.execute("weather", r#"{"city": 3}"#);
    assert!(
        r.content.contains("`city` must be of type string"),
        "{}",
        r.content
    );
}

#[test]
fn unknown_tool_is_an_error_with_no_latency() {
    let r = registry().execute("rm_rf", "{}");
    assert_err(&r, ToolErrorCode::UnknownTool);
    assert_eq!(r.latency, Duration::ZERO);
}

#[test]
fn latency_is_returned_not_slept() {
    let reg = registry();
    let r = reg.execute("read_file", r#"{"path":"src/lib.rs"}"#);
    assert_eq!(r.latency, Duration::from_millis(5));
    // Errors of a declared tool carry its latency too (the call still took that long).
    assert_eq!(
        reg.execute("read_file", r#"{"path":"nope"}"#).latency,
        Duration::from_millis(5)
    );
    assert_eq!(
        reg.execute("weather", r#"{"city":"Oslo"}"#).latency,
        Duration::ZERO
    );
}

#[test]
fn read_tool_reads_files_under_its_root() {
    let reg = registry();
    let lib = std::fs::read_to_string(testdata().join("fixtures/repo/src/lib.rs")).unwrap();
    assert_ok(&reg.execute("read_file", r#"{"path":"src/lib.rs"}"#), &lib);
    assert_ok(
        &reg.execute("read_file", r#"{"path":"./src/lib.rs"}"#),
        &lib,
    );
    assert_err(
        &reg.execute("read_file", r#"{"path":"src/missing.rs"}"#),
        ToolErrorCode::NotFound,
    );
    assert_err(
        &reg.execute("read_file", r#"{"path":"src"}"#),
        ToolErrorCode::NotFound,
    );
    assert_err(
        &reg.execute("read_file", r#"{"path":""}"#),
        ToolErrorCode::BadArguments,
    );
    assert_err(
        &reg.execute("read_file", r#"{"path":7}"#),
        ToolErrorCode::BadArguments,
    );
}

#[test]
fn read_tool_refuses_parent_and_absolute_paths() {
    let reg = registry();
    for p in [
        "../tools/weather.json",
        "src/../src/lib.rs",
        "..",
        "/etc/passwd",
        "//etc/passwd",
    ] {
        let args = json!({ "path": p }).to_string();
        let r = reg.execute("read_file", &args);
        assert_err(&r, ToolErrorCode::SandboxViolation);
        assert!(
            !r.content.contains("testdata"),
            "host path leaked: {}",
            r.content
        );
    }
}

/// A project whose read root `fixtures/repo` holds symlinks in and out of it.
fn symlink_project() -> (tempfile::TempDir, ToolRegistry) {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fixtures");
    std::fs::create_dir_all(fx.join("repo/sub")).unwrap();
    std::fs::create_dir_all(fx.join("repo-evil")).unwrap();
    std::fs::write(fx.join("repo/a.txt"), "alpha").unwrap();
    std::fs::write(fx.join("repo-evil/x.txt"), "EVIL-PAYLOAD").unwrap();
    std::fs::write(fx.join("other.txt"), "OTHER-PAYLOAD").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "OUTSIDE-PAYLOAD").unwrap();
    // Inside the root: allowed.
    symlink("a.txt", fx.join("repo/inner")).unwrap();
    symlink("../a.txt", fx.join("repo/sub/up_inside")).unwrap();
    // Leaving the root: to the project, to the fixtures root, to a sibling whose name
    // shares the root's prefix, through a directory link, to an absolute path.
    symlink("../../outside.txt", fx.join("repo/escape")).unwrap();
    symlink("../other.txt", fx.join("repo/to_fixtures")).unwrap();
    symlink("../repo-evil/x.txt", fx.join("repo/prefix_twin")).unwrap();
    symlink("..", fx.join("repo/updir")).unwrap();
    symlink(dir.path().join("outside.txt"), fx.join("repo/absolute")).unwrap();
    symlink("missing-target", fx.join("repo/dangling")).unwrap();
    let text = r#"
[[tools]]
name = "read_file"
parameters = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
read_root = "repo"
path_argument = "path"

[[jobs]]
name = "j"
kind = "agentic"
mode = "model"
task = "t"
tools = ["read_file"]
"#;
    let s = suite::parse(text, &dir.path().join("suite.toml")).unwrap_or_else(|e| panic!("{e}"));
    let reg = ToolRegistry::new(&s).unwrap();
    (dir, reg)
}

#[test]
fn read_tool_follows_symlinks_only_inside_its_root() {
    let (dir, reg) = symlink_project();
    let host = dir.path().display().to_string();
    let read = |p: &str| reg.execute("read_file", &json!({ "path": p }).to_string());
    assert_ok(&read("inner"), "alpha");
    assert_ok(&read("sub/up_inside"), "alpha");
    for p in [
        "escape",
        "to_fixtures",
        "prefix_twin",
        "updir/other.txt",
        "absolute",
    ] {
        let r = read(p);
        assert_err(&r, ToolErrorCode::SandboxViolation);
        // Neither the target's content nor a host path reaches the model.
        for leak in ["PAYLOAD", &host] {
            assert!(!r.content.contains(leak), "{p}: {}", r.content);
        }
    }
    assert_err(&read("dangling"), ToolErrorCode::NotFound);
}

#[test]
fn registry_reports_a_response_file_removed_after_load() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("fixtures");
    std::fs::create_dir_all(&fx).unwrap();
    std::fs::write(fx.join("r.txt"), "r").unwrap();
    let text = "[[tools]]\nname = \"t\"\nresponse_file = \"r.txt\"\n[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [1]\n";
    let s = suite::parse(text, &dir.path().join("s.toml")).unwrap();
    std::fs::remove_file(fx.join("r.txt")).unwrap();
    let e = ToolRegistry::new(&s).unwrap_err();
    assert!(
        matches!(e, RegistryError::Read { ref tool, .. } if tool == "t"),
        "{e}"
    );
}

#[test]
fn json_equality_is_numeric_and_order_insensitive() {
    assert!(json_values_equal(
        &json!({"a": 1, "b": [1, 2]}),
        &json!({"b": [1.0, 2e0], "a": 1})
    ));
    assert!(!json_values_equal(
        &json!({"a": 1}),
        &json!({"a": 1, "b": null})
    ));
    assert!(!json_values_equal(&json!([1, 2]), &json!([2, 1])));
    assert!(!json_values_equal(&json!("1"), &json!(1)));
    assert!(json_values_equal(&json!(u64::MAX), &json!(u64::MAX)));
    assert!(!json_values_equal(
        &json!(9007199254740993_i64),
        &json!(9007199254740992_i64)
    ));
    assert!(arguments_equal(
        r#"{"p": "a", "n": 2}"#,
        r#"{"n":2.0,"p":"a"}"#
    ));
    assert!(arguments_equal("", "{}"));
    assert!(!arguments_equal(r#"{"p": "a"}"#, r#"{"p": "b"}"#));
    assert!(arguments_equal("{bad", "{bad"));
}

#[test]
fn schema_validation_covers_type_required_enum_items_and_additional_properties() {
    let schema = json!({
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["c", "f"]},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opt": {"type": ["string", "null"]}
        },
        "required": ["n"],
        "additionalProperties": false
    });
    assert!(
        validate_arguments(
            &schema,
            &json!({"n": 3, "unit": "c", "tags": ["a"], "opt": null})
        )
        .is_ok()
    );
    assert!(validate_arguments(&schema, &json!({"n": 3.0})).is_ok());
    assert_eq!(
        validate_arguments(&schema, &json!({})).unwrap_err(),
        "missing required argument `n`"
    );
    assert_eq!(
        validate_arguments(&schema, &json!({"n": 1, "unit": "k"})).unwrap_err(),
        "`unit` is not one of the allowed values"
    );
    assert_eq!(
        validate_arguments(&schema, &json!({"n": 1, "tags": ["a", 2]})).unwrap_err(),
        "`tags[1]` must be of type string, found number"
    );
    assert_eq!(
        validate_arguments(&schema, &json!({"n": 1, "x": 0})).unwrap_err(),
        "unexpected argument `x`"
    );
    assert!(validate_arguments(&schema, &json!({"n": 1, "opt": 5})).is_err());
}

#[test]
fn toml_values_convert_to_json() {
    let t: toml::Table =
        toml::from_str("a = 1\nb = 2.5\nc = [true, \"x\"]\nd = 1979-05-27\n[e]\nf = 0").unwrap();
    assert_eq!(
        serde_json::Value::Object(table_to_json(&t).unwrap()),
        json!({"a": 1, "b": 2.5, "c": [true, "x"], "d": "1979-05-27", "e": {"f": 0}})
    );
    assert!(toml_to_json(&toml::Value::Float(f64::NAN)).is_err());
}
