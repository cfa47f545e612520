//! Tests of suite loading, validation errors (location, path, hint) and resolution.

use std::path::{Path, PathBuf};

use super::*;

/// `fixtures/testdata/suite` of the workspace (this crate is crates/suite; tests run in
/// its directory).
fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/testdata/suite")
}

fn full() -> Suite {
    load(&testdata().join("suites/full.toml")).unwrap_or_else(|e| panic!("{e}"))
}

/// A throwaway project: `suites/` and `fixtures/` with a few fixture files.
struct Project {
    dir: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let fx = dir.path().join("fixtures");
        std::fs::create_dir_all(fx.join("tools")).unwrap();
        std::fs::create_dir_all(fx.join("repo")).unwrap();
        std::fs::create_dir_all(dir.path().join("suites")).unwrap();
        std::fs::write(fx.join("tools/weather.json"), "{\"t\": 4}").unwrap();
        std::fs::write(fx.join("repo/a.txt"), "alpha").unwrap();
        Self { dir }
    }

    fn origin(&self) -> PathBuf {
        self.dir.path().join("suites/t.toml")
    }

    fn parse(&self, text: &str) -> Result<Suite, SuiteError> {
        parse(text, &self.origin())
    }

    fn err(&self, text: &str) -> SuiteError {
        match self.parse(text) {
            Ok(_) => panic!("expected an error for:\n{text}"),
            Err(e) => e,
        }
    }
}

/// 1-based (line, column) of the first occurrence of `needle` in `text`.
fn pos(text: &str, needle: &str) -> (usize, usize) {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in text"));
    line_col(text, at)
}

/// 1-based (line, column) of byte offset `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    (line, col)
}

#[track_caller]
fn assert_at(e: &SuiteError, kind: SuiteErrorKind, text: &str, needle: &str, path: &str) {
    assert_eq!(e.kind(), kind, "{e}");
    assert_eq!(
        (e.line().unwrap(), e.column().unwrap()),
        pos(text, needle),
        "{e}"
    );
    assert_eq!(e.path(), Some(path), "{e}");
}

const TOOLS: &str = r#"
[[tools]]
name = "weather"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
response_file = "tools/weather.json"

[[tools]]
name = "read_file"
parameters = { type = "object", properties = { path = { type = "string" } }, required = ["path"] }
read_root = "repo"
path_argument = "path"
"#;

fn with_tools(jobs: &str) -> String {
    format!("{TOOLS}\n{jobs}")
}

const AGENTIC: &str = r#"
[[jobs]]
name = "a"
kind = "agentic"
mode = "model"
task = "t"
tools = ["weather"]
"#;

// ---------------------------------------------------------------- loading

#[test]
fn full_fixture_suite_loads_with_defaults_and_resolved_paths() {
    let s = full();
    let root = testdata().canonicalize().unwrap();
    assert_eq!(s.name, "full");
    // The suite lives in suites/, so fixtures/ resolves against its parent.
    assert_eq!(s.fixtures_root, root.join("fixtures"));
    assert_eq!(s.project_root, root);
    assert_eq!(s.seed, 42);
    assert!(s.capture_timeline);
    assert_eq!(s.endpoint, None);
    assert_eq!(s.request_timeout, std::time::Duration::from_secs(60));
    assert_eq!(s.idle_timeout, std::time::Duration::from_secs(30));
    assert_eq!(s.max_event_bytes, 16 * 1024 * 1024);
    assert_eq!(s.telemetry.sample_period_ms, 25);
    assert_eq!(s.telemetry.metrics_period_ms, 100);
    assert_eq!(s.telemetry.gpu, GpuMode::Off);
    assert_eq!(s.engine, EngineProfile::Auto);
    let ids: Vec<&str> = s.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(
        ids,
        ["full::lookup", "full::replay", "full::ctx", "full::harness"]
    );
    let lookup = &s.jobs[0];
    assert_eq!(lookup.max_tokens, 64);
    assert_eq!(lookup.repeat, 1);
    assert_eq!(lookup.checks.len(), 2);
    let JobKind::Agentic(a) = &lookup.kind else {
        panic!("agentic")
    };
    assert_eq!(a.mode, AgenticMode::Model);
    assert_eq!(a.max_steps, 6);
    assert_eq!(a.max_repeated_tool_calls, 3);
    let JobKind::Agentic(r) = &s.jobs[1].kind else {
        panic!("agentic")
    };
    assert_eq!(r.mode, AgenticMode::Scripted);
    assert_eq!(r.max_steps, 8);
    assert_eq!(
        r.script[1].arguments,
        serde_json::json!({"city": "Bergen", "days": 1})
    );
    let JobKind::Context(c) = &s.jobs[2].kind else {
        panic!("context")
    };
    assert_eq!(c.sizes, [256, 1024]);
    assert!(c.shared_prefix);
    assert_eq!(
        c.filler.as_deref(),
        Some(root.join("fixtures/filler/lorem.txt").as_path())
    );
    let JobKind::Swe(w) = &s.jobs[3].kind else {
        panic!("swe")
    };
    assert_eq!(w.cwd, root);
    assert_eq!(w.timeout, std::time::Duration::from_secs(30));
    assert_eq!(w.env.get("HARNESS_MODE").map(String::as_str), Some("quick"));
    let rf = s.tool("read_file").unwrap();
    assert_eq!(rf.latency, std::time::Duration::from_millis(5));
    assert_eq!(
        rf.source,
        ToolSource::ReadRoot {
            root: root.join("fixtures/repo"),
            path_argument: "path".into()
        }
    );
    assert_eq!(
        s.tool("forecast").unwrap().parameters,
        serde_json::json!({"type": "object", "properties": {}})
    );
    assert!(s.is_set("seed"));
    assert!(s.is_set("jobs[0].max_steps"));
    assert!(!s.is_set("jobs[1].max_steps"));
}

#[test]
fn fixtures_root_prefers_the_suite_dir_then_its_parent_then_fixtures_dir() {
    let p = Project::new();
    // suites/t.toml has no suites/fixtures → ../fixtures.
    let s = p.parse(&with_tools(AGENTIC)).unwrap();
    assert_eq!(
        s.fixtures_root,
        p.dir.path().canonicalize().unwrap().join("fixtures")
    );
    // A suite next to fixtures/ uses it.
    let top = p.dir.path().join("top.toml");
    let s = parse(&with_tools(AGENTIC), &top).unwrap();
    assert_eq!(
        s.fixtures_root,
        p.dir.path().canonicalize().unwrap().join("fixtures")
    );
    assert_eq!(s.name, "top");
    // fixtures_dir overrides, relative to the suite file.
    let alt = p.dir.path().join("alt");
    std::fs::create_dir_all(alt.join("tools")).unwrap();
    std::fs::create_dir_all(alt.join("repo")).unwrap();
    std::fs::write(alt.join("tools/weather.json"), "{}").unwrap();
    let text = format!("fixtures_dir = \"../alt\"\n{}", with_tools(AGENTIC));
    let s = p.parse(&text).unwrap();
    assert_eq!(s.fixtures_root, alt.canonicalize().unwrap());
    let e = p.err(&format!("fixtures_dir = \"nope\"\n{}", with_tools(AGENTIC)));
    assert_eq!(e.kind(), SuiteErrorKind::Fixture);
    assert_eq!(e.path(), Some("fixtures_dir"));
}

#[test]
fn unreadable_file_is_an_io_error_without_location() {
    let e = load(Path::new("/nonexistent/suite.toml")).unwrap_err();
    assert_eq!(e.kind(), SuiteErrorKind::Io);
    assert_eq!(e.location(), None);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/suite.toml: cannot read"),
        "{e}"
    );
}

// ---------------------------------------------------------------- unknown keys (C31)

#[test]
fn c31_job_key_typo_suggests_the_real_key() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}max_stpes = 4\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "max_stpes",
        "jobs[0].max_stpes",
    );
    assert_eq!(e.hint(), Some("did you mean `max_steps`?"));
    let (line, col) = pos(&text, "max_stpes");
    assert_eq!(
        e.to_string(),
        format!(
            "{}:{line}:{col}: unknown field `max_stpes` in `jobs[0]`; did you mean `max_steps`?",
            p.origin().display()
        )
    );
}

#[test]
fn c31_top_level_typo_suggests_capture_timeline() {
    let p = Project::new();
    let text = format!("seed = 1\ncapture_timline = true\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "capture_timline",
        "capture_timline",
    );
    assert_eq!(
        e.message(),
        "unknown field `capture_timline` at the top level"
    );
    assert_eq!(e.hint(), Some("did you mean `capture_timeline`?"));
    assert_eq!((e.line(), e.column()), (Some(2), Some(1)));
}

#[test]
fn c31_typo_inside_a_table_names_the_dotted_path() {
    let p = Project::new();
    let text = format!("[telemetry]\nsample_perod_ms = 10\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "sample_perod_ms",
        "telemetry.sample_perod_ms",
    );
    assert_eq!(e.hint(), Some("did you mean `sample_period_ms`?"));
    // Gate tables (GateSpec, PercentileBounds) are walked too.
    let text = format!(
        "{}\n[jobs.gates]\nttft_ms = {{ p99 = 1.0, p95x = 2.0 }}\n",
        with_tools(AGENTIC)
    );
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "p95x",
        "jobs[0].gates.ttft_ms.p95x",
    );
    assert_eq!(e.hint(), Some("did you mean `p95`?"));
}

#[test]
fn c31_case_input_fails_before_any_io_on_the_unknown_table() {
    // The field case's input verbatim: `[load]` is not a table of this schema.
    let text = "[endpoint]\nbase_url = \"http://127.0.0.1:8000/v1\"\nmodel = \"m\"\n\n[load]\nconcurency = 64\nrate_rps = 5.0\n";
    let p = Project::new();
    let e = p.err(text);
    assert_at(&e, SuiteErrorKind::UnknownTable, text, "load", "load");
    assert_eq!(
        e.message(),
        "unknown table `[load]`: a suite has no such table"
    );
    assert!(e.hint().unwrap().contains("`[[jobs]]`"), "{e}");
    // Without `[load]`, the `[endpoint]` table is a wrong type: endpoint is a URL string.
    let text = "[endpoint]\nbase_url = \"http://127.0.0.1:8000/v1\"\n";
    let e = p.err(text);
    assert_eq!(e.kind(), SuiteErrorKind::WrongType, "{e}");
    assert_eq!(e.path(), Some("endpoint"));
    assert!(e.message().contains("expected a string"), "{e}");
}

#[test]
fn unknown_table_close_to_a_real_one_gets_a_hint() {
    let p = Project::new();
    let text = format!("[telemtry]\ngpu = \"off\"\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownTable,
        &text,
        "telemtry",
        "telemtry",
    );
    assert_eq!(e.hint(), Some("did you mean `telemetry`?"));
}

#[test]
fn misplaced_key_says_where_it_belongs() {
    let p = Project::new();
    let text = format!("max_steps = 3\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::UnknownField);
    assert_eq!(e.hint(), Some("`max_steps` belongs in a `[[jobs]]` table"));
}

#[test]
fn key_of_another_job_kind_is_an_error() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}sizes = [1]\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::WrongKindField,
        &text,
        "sizes",
        "jobs[0].sizes",
    );
    assert_eq!(
        e.message(),
        "`sizes` is a key of `context` jobs, but `jobs[0]` has `kind = \"agentic\"`"
    );
    let text = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [8]\nmax_steps = 2\n";
    let e = p.err(text);
    assert_at(
        &e,
        SuiteErrorKind::WrongKindField,
        text,
        "max_steps",
        "jobs[0].max_steps",
    );
}

#[test]
fn job_key_lists_cover_exactly_the_raw_job_fields() {
    use super::fields::struct_fields;
    use super::raw::{RawJob, common_job_keys, kind_job_keys, load_job_keys, request_job_keys};
    let mut listed: Vec<&str> = common_job_keys().to_vec();
    for k in JobKindName::ALL {
        listed.extend(kind_job_keys(k));
    }
    listed.extend(load_job_keys());
    listed.extend(request_job_keys());
    listed.sort_unstable();
    let mut fields = struct_fields::<RawJob>().to_vec();
    fields.sort_unstable();
    assert_eq!(listed, fields);
}

// ---------------------------------------------------------------- types and syntax

#[test]
fn wrong_type_is_located_at_the_value() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}max_steps = \"8\"\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::WrongType,
        &text,
        "\"8\"",
        "jobs[0].max_steps",
    );
    assert!(
        e.message().contains("expected a non-negative integer"),
        "{e}"
    );
}

#[test]
fn unknown_enum_value_suggests_a_variant() {
    let p = Project::new();
    let text = format!("engine = \"vlm\"\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_at(&e, SuiteErrorKind::InvalidValue, &text, "\"vlm\"", "engine");
    assert_eq!(e.hint(), Some("did you mean `vllm`?"));
    let text = with_tools(&AGENTIC.replace("agentic", "agentc"));
    let e = p.err(&text);
    assert_eq!(e.path(), Some("jobs[0].kind"));
    assert_eq!(e.hint(), Some("did you mean `agentic`?"));
}

#[test]
fn syntax_error_is_located() {
    let p = Project::new();
    let text = "seed = 1\nseed = 2\n";
    let e = p.err(text);
    assert_eq!(e.kind(), SuiteErrorKind::Syntax);
    assert_eq!((e.line(), e.column()), (Some(2), Some(1)));
}

#[test]
fn a_suite_needs_jobs() {
    let p = Project::new();
    let e = p.err("seed = 1\n");
    assert_eq!(e.kind(), SuiteErrorKind::MissingField);
    assert_eq!(e.path(), Some("jobs"));
    assert_eq!(e.message(), "a suite needs at least one `[[jobs]]` table");
}

#[test]
fn missing_required_key_names_its_table() {
    let p = Project::new();
    let text = "[[jobs]]\nkind = \"context\"\nsizes = [1]\n";
    let e = p.err(text);
    assert_eq!(e.kind(), SuiteErrorKind::MissingField, "{e}");
    assert_eq!(e.path(), Some("jobs[0].name"));
    assert_eq!(e.message(), "missing required key `name` in `jobs[0]`");
    assert_eq!(e.line(), Some(1));
}

// ---------------------------------------------------------------- semantic rules

#[test]
fn duplicate_job_and_tool_names() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}{AGENTIC}"));
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::Duplicate);
    assert_eq!(e.path(), Some("jobs[1].name"));
    let first = pos(&text, "name = \"a\"").0;
    assert_eq!(
        e.message(),
        format!("duplicate job name `a` (first declared on line {first})")
    );
    assert!(e.line().unwrap() > first);
    let text = format!(
        "{TOOLS}{}",
        TOOLS
            .split("[[tools]]")
            .nth(1)
            .map(|t| format!("[[tools]]{t}"))
            .unwrap()
    ) + AGENTIC;
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::Duplicate);
    assert_eq!(e.path(), Some("tools[2].name"));
}

#[test]
fn unknown_tool_reference_suggests_a_declared_tool() {
    let p = Project::new();
    let text = with_tools(&AGENTIC.replace("[\"weather\"]", "[\"weather\", \"wether\"]"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownReference,
        &text,
        "\"wether\"",
        "jobs[0].tools[1]",
    );
    assert_eq!(e.hint(), Some("did you mean `weather`?"));
}

#[test]
fn script_on_a_model_job_and_missing_mode() {
    let p = Project::new();
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.script]]\ntool = \"weather\"\narguments = {{ city = \"Oslo\" }}\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::WrongKindField,
        &text,
        "script]]",
        "jobs[0].script",
    );
    let text = with_tools(&AGENTIC.replace("mode = \"model\"\n", ""));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::MissingField,
        &text,
        "[[jobs]]",
        "jobs[0]",
    );
    assert_eq!(e.message(), "agentic job `a` has no `mode`");
}

#[test]
fn scripted_job_rules() {
    let p = Project::new();
    let scripted = AGENTIC.replace("\"model\"", "\"scripted\"");
    // No script at all.
    let e = p.err(&with_tools(&scripted));
    assert_eq!(e.kind(), SuiteErrorKind::MissingField);
    // A step calling a tool the job does not offer.
    let text = with_tools(&format!(
        "{scripted}\n[[jobs.script]]\ntool = \"read_file\"\narguments = {{ path = \"a.txt\" }}\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownReference,
        &text,
        "\"read_file\"\narguments",
        "jobs[0].script[0].tool",
    );
    // Arguments that do not fit the tool's parameters.
    let text = with_tools(&format!(
        "{scripted}\n[[jobs.script]]\ntool = \"weather\"\narguments = {{ city = 3 }}\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "{ city = 3 }",
        "jobs[0].script[0].arguments",
    );
    assert!(e.message().contains("`city` must be of type string"), "{e}");
    // max_steps smaller than script + final answer.
    let text = with_tools(&format!(
        "{scripted}max_steps = 1\n\n[[jobs.script]]\ntool = \"weather\"\narguments = {{ city = \"Oslo\" }}\n"
    ));
    let e = p.err(&text);
    assert_eq!(e.path(), Some("jobs[0].max_steps"));
    assert!(e.message().contains("makes 2 LLM calls"), "{e}");
}

/// A `[[tools.responses]]` tool with (`default`) or without a default, called by a script.
fn table_tool_suite(default: bool, mode: &str, steps: &str) -> String {
    let default = if default {
        "default_text = \"none\"\n"
    } else {
        ""
    };
    format!(
        "[[tools]]\nname = \"lookup\"\n{default}\
         parameters = {{ type = \"object\", properties = {{ key = {{ type = \"string\" }} }} }}\n\
         [[tools.responses]]\nwhen = {{ key = \"k0\" }}\ntext = \"zero\"\n\
         [[tools.responses]]\nwhen = {{ key = \"k1\" }}\ntext = \"one\"\n\
         [[jobs]]\nname = \"a\"\nkind = \"agentic\"\nmode = \"{mode}\"\ntask = \"t\"\n\
         tools = [\"lookup\"]\n{steps}"
    )
}

#[test]
fn a_script_step_no_response_row_matches_is_located_at_its_arguments() {
    let p = Project::new();
    let step = |args: &str| format!("[[jobs.script]]\ntool = \"lookup\"\narguments = {args}\n");
    // The second step's arguments match no `when` and the tool has no default.
    let steps = format!("{}{}", step("{ key = \"k1\" }"), step("{ key = \"k2\" }"));
    let text = table_tool_suite(false, "scripted", &steps);
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "{ key = \"k2\" }",
        "jobs[0].script[1].arguments",
    );
    assert!(e.message().contains("tool `lookup`"), "{e}");
    assert!(e.message().contains("no default"), "{e}");
    // No arguments at all (`{}`) is located at the step.
    let text = table_tool_suite(false, "scripted", "[[jobs.script]]\ntool = \"lookup\"\n");
    assert_eq!(p.err(&text).path(), Some("jobs[0].script[0].arguments"));
    // Matching arguments, or a default response, load.
    for text in [
        table_tool_suite(false, "scripted", &step("{ key = \"k0\" }")),
        table_tool_suite(true, "scripted", &step("{ key = \"k2\" }")),
        // Model-driven jobs are matched only at run time.
        table_tool_suite(false, "model", ""),
    ] {
        p.parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

#[test]
fn context_and_swe_required_keys() {
    let p = Project::new();
    let text = "[[jobs]]\nname = \"c\"\nkind = \"context\"\n";
    let e = p.err(text);
    assert_eq!(e.kind(), SuiteErrorKind::MissingField);
    assert_eq!(e.message(), "context job `c` has no `sizes`");
    assert_eq!((e.line(), e.path()), (Some(1), Some("jobs[0]")));
    let text = "[[jobs]]\nname = \"s\"\nkind = \"swe\"\n";
    let e = p.err(text);
    assert_eq!(e.message(), "swe job `s` has no `command`");
    let text = "[[jobs]]\nname = \"s\"\nkind = \"swe\"\ncommand = [\"true\"]\nenv = { INFERSCOPE_MODEL = \"x\" }\n";
    let e = p.err(text);
    assert_eq!(e.path(), Some("jobs[0].env.INFERSCOPE_MODEL"));
    let text = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [4, 0]\n";
    let e = p.err(text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        text,
        "0]",
        "jobs[0].sizes[1]",
    );
}

#[test]
fn check_rules_missing_operand_wrong_key_invalid_regex_and_path() {
    let p = Project::new();
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"contains\"\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::MissingField,
        &text,
        "[[jobs.checks]]",
        "jobs[0].checks[0]",
    );
    assert_eq!(e.message(), "a `contains` check needs `value`");
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"contains\"\nvalue = \"x\"\npattern = \"y\"\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::WrongKindField,
        &text,
        "pattern",
        "jobs[0].checks[0].pattern",
    );
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"regex\"\npattern = \"(unclosed\"\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "\"(unclosed\"",
        "jobs[0].checks[0].pattern",
    );
    assert!(
        e.message().starts_with("invalid regex: unclosed group"),
        "{e}"
    );
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"json_path\"\npath = \"$.[\"\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "\"$.[\"",
        "jobs[0].checks[0].path",
    );
    assert!(e.message().starts_with("invalid JSON path"), "{e}");
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"tool_called\"\ntool = \"read_file\"\nmin_times = 1\n"
    ));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownReference,
        &text,
        "\"read_file\"\nmin_times",
        "jobs[0].checks[0].tool",
    );
    let text = with_tools(&format!(
        "{AGENTIC}\n[[jobs.checks]]\nkind = \"contains\"\nvalue = \"x\"\ntarget = \"stdout\"\n"
    ));
    let e = p.err(&text);
    assert_eq!(e.path(), Some("jobs[0].checks[0].target"));
    let text = "[[jobs]]\nname = \"s\"\nkind = \"swe\"\ncommand = [\"true\"]\n[[jobs.checks]]\nkind = \"contains\"\nvalue = \"ok\"\n";
    let e = p.err(text);
    assert_eq!(
        e.hint(),
        Some("set `target = \"stdout\"` to check the harness's output")
    );
}

#[test]
fn fixture_files_must_exist_under_the_root() {
    let p = Project::new();
    let text = format!(
        "{AGENTIC}\n[[tools]]\nname = \"weather\"\nresponse_file = \"tools/missing.json\"\n"
    );
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::Fixture,
        &text,
        "\"tools/missing.json\"",
        "tools[0].response_file",
    );
    let text = format!(
        "{AGENTIC}\n[[tools]]\nname = \"weather\"\nresponse_file = \"fixtures/tools/weather.json\"\n"
    );
    let e = p.err(&text);
    assert_eq!(
        e.hint(),
        Some("paths are relative to the fixtures root; did you mean `tools/weather.json`?")
    );
    let text =
        format!("{AGENTIC}\n[[tools]]\nname = \"weather\"\nresponse_file = \"../suites/t.toml\"\n");
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::Fixture);
    assert!(e.message().contains("`..` is not allowed"), "{e}");
    let text =
        format!("{AGENTIC}\n[[tools]]\nname = \"weather\"\nresponse_file = \"/etc/hostname\"\n");
    let e = p.err(&text);
    assert!(e.message().contains("must be relative"), "{e}");
    // A symlink inside fixtures/ pointing outside is refused at load time.
    let outside = p.dir.path().join("secret.txt");
    std::fs::write(&outside, "s").unwrap();
    std::os::unix::fs::symlink(&outside, p.dir.path().join("fixtures/tools/link.json")).unwrap();
    let text =
        format!("{AGENTIC}\n[[tools]]\nname = \"weather\"\nresponse_file = \"tools/link.json\"\n");
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::Fixture);
    assert!(e.message().contains("outside the fixtures root"), "{e}");
}

#[test]
fn tool_declaration_rules() {
    let p = Project::new();
    let jobs = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [1]\n";
    let e = p.err(&format!("[[tools]]\nname = \"x\"\n{jobs}"));
    assert_eq!(e.kind(), SuiteErrorKind::MissingField);
    assert_eq!(e.path(), Some("tools[0]"));
    let text = format!(
        "[[tools]]\nname = \"x\"\nresponse_file = \"tools/weather.json\"\nread_root = \"repo\"\npath_argument = \"p\"\n{jobs}"
    );
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "read_root",
        "tools[0].read_root",
    );
    let text =
        format!("[[tools]]\nname = \"x\"\nread_root = \"repo\"\npath_argument = \"file\"\n{jobs}");
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::UnknownReference);
    assert_eq!(e.path(), Some("tools[0].path_argument"));
    let text =
        format!("[[tools]]\nname = \"Bad-Name\"\nresponse_file = \"tools/weather.json\"\n{jobs}");
    assert_eq!(p.err(&text).path(), Some("tools[0].name"));
    let text = format!(
        "[[tools]]\nname = \"x\"\nresponse_file = \"tools/weather.json\"\ndefault_text = \"d\"\n{jobs}"
    );
    assert_eq!(p.err(&text).kind(), SuiteErrorKind::WrongKindField);
    // A response row whose `when` cannot fit the parameters can never match.
    let text = format!(
        "[[tools]]\nname = \"x\"\nparameters = {{ type = \"object\", properties = {{ city = {{ type = \"string\" }} }}, additionalProperties = false }}\n[[tools.responses]]\nwhen = {{ cty = \"Oslo\" }}\ntext = \"t\"\n{jobs}"
    );
    let e = p.err(&text);
    assert_eq!(e.path(), Some("tools[0].responses[0].when"));
    assert!(e.message().contains("unexpected argument `cty`"), "{e}");
    let text = format!(
        "[[tools]]\nname = \"x\"\nparameters = {{ type = \"string\" }}\nresponse_file = \"tools/weather.json\"\n{jobs}"
    );
    assert_eq!(p.err(&text).path(), Some("tools[0].parameters"));
}

#[test]
fn value_ranges_are_checked() {
    let p = Project::new();
    for (line, path) in [
        ("request_timeout_s = 0.0", "request_timeout_s"),
        ("idle_timeout_s = -1.0", "idle_timeout_s"),
        ("max_event_bytes = 0", "max_event_bytes"),
        ("endpoint = \"ftp://x\"", "endpoint"),
        ("model = \"\"", "model"),
        ("name = \"has space\"", "name"),
    ] {
        let e = p.err(&format!("{line}\n{}", with_tools(AGENTIC)));
        assert_eq!(e.kind(), SuiteErrorKind::InvalidValue, "{line}: {e}");
        assert_eq!(e.path(), Some(path), "{line}");
        assert_eq!(e.line(), Some(1), "{line}");
    }
    let e = p.err(&with_tools(&format!(
        "{AGENTIC}max_repeated_tool_calls = 1\n"
    )));
    assert_eq!(e.path(), Some("jobs[0].max_repeated_tool_calls"));
}

const CONTEXT: &str = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [16]\n";

#[test]
fn suite_gate_values_are_located_and_name_the_suite_table() {
    let p = Project::new();
    for (line, needle, path) in [
        ("ttft_ms = { p99 = -1.0 }", "-1.0", "gates.ttft_ms.p99"),
        ("ttft_ms = { p99 = nan }", "nan", "gates.ttft_ms.p99"),
        ("e2e_ms = { mean = inf }", "inf", "gates.e2e_ms.mean"),
        ("max_error_rate = 1.5", "1.5", "gates.max_error_rate"),
        (
            "min_cache_hit_rate = -0.2",
            "-0.2",
            "gates.min_cache_hit_rate",
        ),
        ("regression_pct = -3", "-3", "gates.regression_pct"),
        ("ttft_ms = {}", "{}", "gates.ttft_ms"),
    ] {
        let text = format!("name = \"b\"\n[gates]\n{line}\n{CONTEXT}");
        let e = p.err(&text);
        assert_at(&e, SuiteErrorKind::InvalidValue, &text, needle, path);
        let gate = path.strip_prefix("gates.").unwrap();
        assert!(
            e.message()
                .starts_with(&format!("`{gate}` in the suite's `[gates]`: ")),
            "{line}: {e}"
        );
        assert!(!e.message().contains("job"), "{line}: {e}");
    }
    let e = p.err(&format!("[gates]\nttft_ms = {{}}\n{CONTEXT}"));
    assert!(e.message().contains("sets no threshold"), "{e}");
}

#[test]
fn job_gate_values_are_located_and_name_the_job() {
    let p = Project::new();
    // Inline in the job and as a `[jobs.gates]` header, each over a valid suite table.
    for (text, needle, path) in [
        (
            format!("[gates]\nmax_error_rate = 0.1\n{CONTEXT}gates = {{ max_error_rate = 1.5 }}\n"),
            "1.5",
            "jobs[0].gates.max_error_rate",
        ),
        (
            format!("{CONTEXT}[jobs.gates]\nitl_ms = {{ p50 = 1.0 }}\nttft_ms = {{}}\n"),
            "{}",
            "jobs[0].gates.ttft_ms",
        ),
        (
            format!("{CONTEXT}[jobs.gates]\ntpot_ms = {{ p95 = -4.0 }}\n"),
            "-4.0",
            "jobs[0].gates.tpot_ms.p95",
        ),
    ] {
        let e = p.err(&text);
        assert_at(&e, SuiteErrorKind::InvalidValue, &text, needle, path);
        assert!(e.message().contains("in the gates of job `c`"), "{e}");
    }
}

#[test]
fn the_first_bad_gate_in_file_order_is_reported() {
    let p = Project::new();
    // Evaluation order would report `ttft_ms.p99` first; the file has `max_error_rate` first.
    let text = format!("[gates]\nmax_error_rate = 2.0\nttft_ms = {{ p99 = -1.0 }}\n{CONTEXT}");
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "2.0",
        "gates.max_error_rate",
    );
}

#[test]
fn overhead_budgets_are_validated_with_a_location() {
    let p = Project::new();
    for (line, needle, path) in [
        ("pairs = 0", "0", "overhead.pairs"),
        (
            "max_workload_effect_pct = -1.0",
            "-1.0",
            "overhead.max_workload_effect_pct",
        ),
        (
            "max_workload_effect_pct = nan",
            "nan",
            "overhead.max_workload_effect_pct",
        ),
        (
            "max_workload_effect_pct = inf",
            "inf",
            "overhead.max_workload_effect_pct",
        ),
        (
            "max_runner_cpu_pct = -5.0",
            "-5.0",
            "overhead.max_runner_cpu_pct",
        ),
    ] {
        let text = format!("[overhead]\n{line}\n{CONTEXT}");
        let e = p.err(&text);
        assert_at(&e, SuiteErrorKind::InvalidValue, &text, needle, path);
        let key = path.strip_prefix("overhead.").unwrap();
        assert!(
            e.message()
                .starts_with(&format!("`{key}` in `[overhead]`: ")),
            "{line}: {e}"
        );
    }
    let s = p
        .parse(&format!(
            "[overhead]\npairs = 1\nmax_workload_effect_pct = 0.0\n{CONTEXT}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.overhead.pairs, 1);
}

// ---------------------------------------------------------------- secrets

#[test]
fn a_literal_api_key_is_rejected_without_echoing_it() {
    let p = Project::new();
    let text = format!("api_key = \"sk-SECRET-MARKER\"\n{}", with_tools(AGENTIC));
    let e = p.err(&text);
    assert_at(&e, SuiteErrorKind::Secret, &text, "api_key", "api_key");
    assert!(e.hint().unwrap().contains("api_key_env"), "{e}");
    assert!(!e.to_string().contains("SECRET-MARKER"));
    // The graphical rendering has no source snippet, so the secret is not printed.
    let rendered = render(&e);
    assert!(!rendered.contains("SECRET-MARKER"), "{rendered}");
    // Anywhere, including a free-form env table.
    let text =
        "[[jobs]]\nname = \"s\"\nkind = \"swe\"\ncommand = [\"true\"]\nenv = { API_KEY = \"x\" }\n";
    let e = p.err(text);
    assert_eq!(e.kind(), SuiteErrorKind::Secret);
    assert_eq!(e.path(), Some("jobs[0].env.API_KEY"));
}

#[test]
fn api_key_env_must_be_a_name_and_is_resolved_from_the_environment() {
    let p = Project::new();
    let e = p.err(&format!(
        "api_key_env = \"sk-abc123-MARKER\"\n{}",
        with_tools(AGENTIC)
    ));
    assert_eq!(e.kind(), SuiteErrorKind::InvalidValue);
    assert!(!e.to_string().contains("MARKER"), "{e}");
    let s = p
        .parse(&format!(
            "api_key_env = \"BENCH_KEY\"\n{}",
            with_tools(AGENTIC)
        ))
        .unwrap();
    assert_eq!(
        s.api_key_with(|n| (n == "BENCH_KEY").then(|| "k-123".into()))
            .unwrap(),
        Some("k-123".to_string())
    );
    let e = s.api_key_with(|_| None).unwrap_err();
    assert_eq!(e.kind(), SuiteErrorKind::EnvVar);
    assert_eq!(
        e.message(),
        "environment variable `BENCH_KEY` (named by `api_key_env`) is not set"
    );
    assert_eq!((e.line(), e.path()), (Some(1), Some("api_key_env")));
    let e = s.api_key_with(|_| Some("".into())).unwrap_err();
    assert!(e.message().ends_with("is set but empty"));
    let none = p.parse(&with_tools(AGENTIC)).unwrap();
    assert_eq!(none.api_key().unwrap(), None);
}

// ---------------------------------------------------------------- rendering

fn render(e: &SuiteError) -> String {
    let mut out = String::new();
    miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
        .render_report(&mut out, e)
        .unwrap();
    out
}

#[test]
fn miette_rendering_shows_the_line_label_and_hint() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}max_stpes = 4\n"));
    let e = p.err(&text);
    // `render` keeps the headline short: location and hint appear once, below it.
    let pretty = e.render(false);
    assert!(
        pretty.contains("× unknown field `max_stpes` in `jobs[0]`\n"),
        "{pretty}"
    );
    assert_eq!(pretty.matches("did you mean").count(), 1, "{pretty}");
    // The value under an unknown key is never echoed: masked in the snippet.
    assert!(pretty.contains("max_stpes = *\n"), "{pretty}");
    let out = render(&e);
    assert!(out.contains("suite::unknown_field"), "{out}");
    assert!(out.contains("max_stpes = *"), "{out}");
    assert!(out.contains("unknown field"), "{out}");
    assert!(out.contains("help: did you mean `max_steps`?"), "{out}");
    let (line, col) = pos(&text, "max_stpes");
    assert!(out.contains(&format!("t.toml:{line}:{col}")), "{out}");
}

// ---------------------------------------------------------------- resolution

#[test]
fn dry_run_shows_capture_timeline_default_suite_and_flag() {
    let p = Project::new();
    let s = p.parse(&with_tools(AGENTIC)).unwrap();
    let r = resolve(&s, &RunOverrides::default());
    let text = r.dry_run_text();
    assert!(
        text.contains("\ncapture_timeline: false (default)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nendpoint: simulated (built-in) (default)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nmodel: inferscope-sim (default)\n"),
        "{text}"
    );
    assert!(
        text.contains("\nrequest_timeout_s: 120 (default)\n"),
        "{text}"
    );
    let flagged = resolve(
        &s,
        &RunOverrides {
            capture_timeline: true,
            ..Default::default()
        },
    );
    assert_eq!(flagged.capture_timeline.source, SettingSource::Flag);
    assert!(
        flagged
            .dry_run_text()
            .contains("\ncapture_timeline: true (flag)\n")
    );
    let s = p
        .parse(&format!(
            "capture_timeline = false\n{}",
            with_tools(AGENTIC)
        ))
        .unwrap();
    let text = resolve(&s, &RunOverrides::default()).dry_run_text();
    assert!(
        text.contains("\ncapture_timeline: false (suite)\n"),
        "{text}"
    );
    // The flag overrides a suite's false.
    let r = resolve(
        &s,
        &RunOverrides {
            capture_timeline: true,
            ..Default::default()
        },
    );
    assert_eq!(
        (r.capture_timeline.value, r.capture_timeline.source),
        (true, SettingSource::Flag)
    );
}

#[test]
fn dry_run_lists_every_setting_and_merged_job_gates() {
    let s = full();
    let text = resolve(&s, &RunOverrides::default()).dry_run_text();
    for line in [
        "suite: full (default)",
        "capture_timeline: true (suite)",
        "seed: 42 (suite)",
        "engine: auto (default)",
        "request_timeout_s: 60 (suite)",
        "idle_timeout_s: 30 (default)",
        "max_event_bytes: 16777216 (default)",
        "telemetry.sample_period_ms: 25 (suite)",
        "telemetry.metrics_period_ms: 100 (default)",
        "telemetry.metrics_url: the simulator's /metrics (default)",
        "telemetry.gpu: off (suite)",
        "gates: ttft_ms.p50=100.0, ttft_ms.p99=2000.0, max_error_rate=0.0 (suite)",
        "tools.read_file: read_root repo (path_argument `path`), latency_ms 5",
        "tools.weather: 3 response(s), default text, latency_ms 0",
        "jobs: 4 of 4 selected",
        "job full::lookup (agentic)",
        "  max_steps: 6 (suite)",
        "  max_tokens: 64 (default)",
        "  gates: ttft_ms.p50=100.0, ttft_ms.p99=500.0, max_error_rate=0.0 (suite)",
        "  checks: contains(final_answer), tool_called(weather, min 1)",
        "  script[0]: read_file {\"path\":\"src/lib.rs\"}",
        "  sizes: [256, 1024] (suite)",
        "  timeout_s: 30 (suite)",
        "  env: [HARNESS_MODE] (values not shown) (suite)",
        "api_key_env: none (default)",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in:\n{text}"
        );
    }
}

#[test]
fn endpoint_and_model_flags() {
    let s = full();
    let r = resolve(
        &s,
        &RunOverrides {
            endpoint: Some("http://127.0.0.1:9/v1/".into()),
            ..Default::default()
        },
    );
    assert_eq!(
        r.endpoint.value,
        EndpointSetting::Url("http://127.0.0.1:9/v1".into())
    );
    assert_eq!(r.endpoint.source, SettingSource::Flag);
    assert_eq!(r.model.value, None);
    let e = r.model_name().unwrap_err();
    assert_eq!(e.kind(), SuiteErrorKind::MissingField);
    assert!(e.hint().unwrap().contains("--model"));
    let text = r.dry_run_text();
    assert!(
        text.contains("\nendpoint: http://127.0.0.1:9/v1 (flag)\n"),
        "{text}"
    );
    assert!(
        text.contains("\ntelemetry.metrics_url: http://127.0.0.1:9/metrics (default)\n"),
        "{text}"
    );
    assert_eq!(
        r.metrics_url("http://127.0.0.1:9/v1").as_deref(),
        Some("http://127.0.0.1:9/metrics")
    );
    let r = resolve(
        &s,
        &RunOverrides {
            endpoint: Some("http://h/v1".into()),
            model: Some("tiny".into()),
            ..Default::default()
        },
    );
    assert_eq!(r.model_name().unwrap(), "tiny");
    assert_eq!(r.model.source, SettingSource::Flag);
    assert!(
        RunOverrides {
            endpoint: Some("localhost:8000".into()),
            ..Default::default()
        }
        .validate()
        .is_err()
    );
    assert!(
        RunOverrides {
            endpoint: Some("http://localhost:8000/v1".into()),
            ..Default::default()
        }
        .validate()
        .is_ok()
    );
}

#[test]
fn filter_matches_substrings_and_globs() {
    assert!(filter_matches("look", "full::lookup"));
    assert!(!filter_matches("Look", "full::lookup"));
    assert!(filter_matches("full::*", "full::lookup"));
    assert!(filter_matches("*::ctx", "full::ctx"));
    assert!(!filter_matches("*::ctx", "full::ctx2"));
    assert!(filter_matches("f*l*p", "full::lookup"));
    assert!(filter_matches("*", "x::y"));
    assert!(!filter_matches("full::*x", "full::lookup"));
    let s = full();
    let r = resolve(
        &s,
        &RunOverrides {
            filter: Some("*::re*".into()),
            ..Default::default()
        },
    );
    let ids: Vec<&str> = r.jobs.iter().map(|j| j.job.id.as_str()).collect();
    assert_eq!(ids, ["full::replay"]);
    assert!(
        r.dry_run_text()
            .contains("\nfilter: *::re* (flag)\njobs: 1 of 4 selected\n")
    );
    let r = resolve(
        &s,
        &RunOverrides {
            filter: Some("nothing".into()),
            ..Default::default()
        },
    );
    assert!(r.jobs.is_empty());
}

#[test]
fn list_text_has_one_job_per_line_with_kind() {
    assert_eq!(
        list_text(&full()),
        "full::lookup (agentic)\nfull::replay (agentic)\nfull::ctx (context)\nfull::harness (swe)\n"
    );
}

#[test]
fn metrics_url_default_replaces_v1() {
    assert_eq!(metrics_url_for("http://h:8000/v1"), "http://h:8000/metrics");
    assert_eq!(
        metrics_url_for("http://h:8000/v1/"),
        "http://h:8000/metrics"
    );
    assert_eq!(metrics_url_for("http://h:8000"), "http://h:8000/metrics");
}

// ---------------------------------------------------------------- load keys

#[test]
fn load_keys_parse_into_a_load_spec() {
    use crate::load_spec::{Arrival, LoadSpec, Stop, Sweep};
    let p = Project::new();
    let text = with_tools(&format!(
        "{AGENTIC}count = 8\nwarmup = 2\nsweep = {{ concurrency = [1, 4, 16] }}\n"
    ));
    let s = p.parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.jobs[0].load,
        Some(LoadSpec {
            concurrency: None,
            rate: None,
            arrival: Arrival::Poisson,
            stop: Stop::Count(8),
            warmup: 2,
            sweep: Some(Sweep::Concurrency(vec![1, 4, 16])),
            aggregation: Default::default(),
        })
    );
    let text = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [8, 16]\nrepeat = 3\n\
                rate = 20\narrival = \"constant\"\nconcurrency = 2\n";
    let s = p.parse(text).unwrap_or_else(|e| panic!("{e}"));
    let l = s.jobs[0].load.clone().unwrap();
    assert_eq!(l.rate, Some(20.0), "an integer rate is accepted");
    assert_eq!(l.arrival, Arrival::Constant);
    assert_eq!(l.concurrency, Some(2));
    assert_eq!(
        l.stop,
        Stop::Count(6),
        "default: len(sizes) x repeat requests"
    );
    let text = with_tools(&format!("{AGENTIC}rate = 2.5\nduration_s = 1.5\n"));
    let l = p.parse(&text).unwrap().jobs[0].load.clone().unwrap();
    assert_eq!(l.stop, Stop::Duration(1_500_000_000));
    assert!(
        p.parse(&with_tools(AGENTIC)).unwrap().jobs[0]
            .load
            .is_none()
    );
}

#[test]
fn load_key_typos_are_located_with_a_hint() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}concurency = 4\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "concurency",
        "jobs[0].concurency",
    );
    assert_eq!(e.hint(), Some("did you mean `concurrency`?"));
    let text = with_tools(&format!("{AGENTIC}sweep = {{ concurency = [1, 2] }}\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::UnknownField,
        &text,
        "concurency",
        "jobs[0].sweep.concurency",
    );
    assert_eq!(e.hint(), Some("did you mean `concurrency`?"));
    let text = with_tools(&format!("{AGENTIC}rate = 1.0\narrival = \"poison\"\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "\"poison\"",
        "jobs[0].arrival",
    );
    assert_eq!(e.hint(), Some("did you mean `poisson`?"));
    // `aggregation` is validated like every other key, located at its value.
    let text = with_tools(&format!("{AGENTIC}count = 4\naggregation = \"steaming\"\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "\"steaming\"",
        "jobs[0].aggregation",
    );
    assert_eq!(e.hint(), Some("did you mean `streaming`?"));
    let text = with_tools(&format!("{AGENTIC}aggregation = 3\n"));
    assert_eq!(p.err(&text).kind(), SuiteErrorKind::WrongType);
    let text = with_tools(&format!(
        "{AGENTIC}count = 4\naggregation = \"streaming\"\n"
    ));
    let s = p.parse(&text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.jobs[0].load.as_ref().map(|l| l.aggregation),
        Some(crate::load_spec::Aggregation::Streaming)
    );
    let text = with_tools(&format!("{AGENTIC}rate = \"fast\"\n"));
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::WrongType,
        &text,
        "\"fast\"",
        "jobs[0].rate",
    );
}

#[test]
fn load_keys_on_a_swe_job_are_a_wrong_kind() {
    let p = Project::new();
    let text = "[[jobs]]\nname = \"w\"\nkind = \"swe\"\ncommand = [\"true\"]\nconcurrency = 4\n";
    let e = p.err(text);
    assert_at(
        &e,
        SuiteErrorKind::WrongKindField,
        text,
        "concurrency",
        "jobs[0].concurrency",
    );
    assert!(e.message().contains("`agentic` and `context`"), "{e}");
}

#[test]
fn load_semantic_rules() {
    let p = Project::new();
    let cases: [(&str, &str, &str); 9] = [
        (
            "arrival = \"constant\"\n",
            "\"constant\"",
            "jobs[0].arrival",
        ),
        ("concurrency = 0\n", "0", "jobs[0].concurrency"),
        ("rate = -1.0\n", "-1.0", "jobs[0].rate"),
        ("count = 3\nduration_s = 2.0\n", "2.0", "jobs[0].duration_s"),
        ("count = 3\nrepeat = 2\n", "3", "jobs[0].count"),
        (
            "sweep = { concurrency = [1, 0 ] }\n",
            "0 ]",
            "jobs[0].sweep.concurrency[1]",
        ),
        (
            "sweep = { concurrency = [1], rate = [1.0] }\n",
            "{ concurrency = [1], rate",
            "jobs[0].sweep",
        ),
        (
            "concurrency = 2\nsweep = { concurrency = [1, 4] }\n",
            "2\n",
            "jobs[0].concurrency",
        ),
        ("duration_s = 0.0\n", "0.0", "jobs[0].duration_s"),
    ];
    for (extra, needle, path) in cases {
        let text = with_tools(&format!("{AGENTIC}{extra}"));
        let e = p.err(&text);
        assert_eq!(e.path(), Some(path), "{extra}: {e}");
        let kind = e.kind();
        assert!(
            matches!(kind, SuiteErrorKind::InvalidValue),
            "{extra}: {kind:?} {e}"
        );
        // Located at the offending value, searched from where the extra keys begin.
        let from = text.find(extra).unwrap();
        let at = from + text[from..].find(needle).unwrap();
        assert_eq!(
            (e.line().unwrap(), e.column().unwrap()),
            line_col(&text, at),
            "{extra}: {e}"
        );
    }
    let text = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [8]\ncount = 2\nwarmup = 5\n";
    let e = p.err(text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        text,
        "5\n",
        "jobs[0].warmup",
    );
    let text = with_tools(&format!("{AGENTIC}sweep = {{}}\n"));
    assert_eq!(p.err(&text).kind(), SuiteErrorKind::MissingField);
}

#[test]
fn dry_run_shows_load_settings() {
    let p = Project::new();
    let text = with_tools(&format!(
        "{AGENTIC}rate = 4\ncount = 10\nsweep = {{ rate = [1.0, 2.0] }}\n"
    ));
    let err = p.err(&text);
    assert_eq!(err.path(), Some("jobs[0].rate"), "rate and a rate sweep");
    let text = with_tools(&format!(
        "{AGENTIC}concurrency = 3\ncount = 10\nwarmup = 1\nsweep = {{ rate = [1.0, 2.0] }}\n"
    ));
    let s = p.parse(&text).unwrap_or_else(|e| panic!("{e}"));
    let out = resolve(&s, &RunOverrides::default()).dry_run_text();
    assert!(out.contains("  concurrency: 3 (suite)"), "{out}");
    assert!(out.contains("  count: 10 (suite)"), "{out}");
    assert!(out.contains("  arrival: poisson (default)"), "{out}");
    assert!(out.contains("  sweep: rate [1.0, 2.0] (suite)"), "{out}");
    assert!(
        out.contains("  load: open loop (poisson arrivals), concurrency 3, sweep rate"),
        "{out}"
    );
}

#[test]
fn names_that_would_make_an_invalid_timeline_id_are_refused_where_written() {
    use crate::timeline::ids::{MAX_ID_LEN, is_valid_case_id, is_valid_id};
    let p = Project::new();
    let job = |suite: &str, job: &str| {
        format!(
            "name = \"{suite}\"\n\n[[jobs]]\nname = \"{job}\"\nkind = \"context\"\nsizes = [8]\n"
        )
    };
    // The longest accepted id, with the longest suffix the runner appends at the widest
    // counters, still passes the timeline's own checks.
    let suite = "s".repeat(MAX_JOB_ID_LEN - "::j".len());
    let s = p.parse(&job(&suite, "j")).unwrap_or_else(|e| panic!("{e}"));
    let id = &s.jobs[0].id;
    assert_eq!(id.len(), MAX_JOB_ID_LEN);
    let w = u32::MAX;
    let request = format!("{id}.tp{w}.{w}.s{w}.r{w}");
    assert_eq!(
        request.len(),
        MAX_ID_LEN,
        "the reserve is exactly the longest suffix"
    );
    assert!(is_valid_id(&request), "{request}");
    assert!(is_valid_case_id(&format!("{id}#p{w}.{w}/s{w}r{w}")));
    assert!(is_valid_id(&format!("{id}.t{w}.llm{w}")));

    // A suite name too long for any job (the reviewer's 5000 characters), at `name`.
    let long = "n".repeat(5000);
    let text = job(&long, "j");
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::InvalidValue, "{e}");
    assert_eq!(e.path(), Some("name"));
    assert_eq!((e.line(), e.column()), (Some(1), Some(8)));
    assert!(e.message().contains("too long"), "{}", e.message());
    assert!(e.message().contains("5000 bytes"), "{}", e.message());
    assert!(
        e.message().len() < 400,
        "the name is not echoed: {}",
        e.message()
    );
    // One byte over the suite-name limit.
    let e = p.err(&job(&"n".repeat(MAX_JOB_ID_LEN - 2), "j"));
    assert_eq!(e.path(), Some("name"));

    // A job name that makes `suite::job` one byte too long, at `jobs[0].name`.
    let text = job("s", &"j".repeat(MAX_JOB_ID_LEN - "s::".len() + 1));
    let e = p.err(&text);
    assert_eq!(e.kind(), SuiteErrorKind::InvalidValue, "{e}");
    assert_eq!(e.path(), Some("jobs[0].name"));
    assert_eq!((e.line(), e.column()), (Some(4), Some(8)));
    assert!(e.message().contains("too long"), "{}", e.message());
    assert!(
        e.message().contains(&format!("at most {MAX_JOB_ID_LEN}")),
        "{}",
        e.message()
    );
    // A 5000-character job name.
    let e = p.err(&job("s", &"j".repeat(5000)));
    assert_eq!(e.path(), Some("jobs[0].name"));
    // The same job name under a short enough suite name is fine.
    p.parse(&job("s", &"j".repeat(MAX_JOB_ID_LEN - "s::".len())))
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_suite_named_after_a_too_long_file_is_refused() {
    let p = Project::new();
    let origin = p
        .dir
        .path()
        .join(format!("suites/{}.toml", "f".repeat(200)));
    let e = parse(
        "[[jobs]]\nname = \"j\"\nkind = \"context\"\nsizes = [8]\n",
        &origin,
    )
    .unwrap_err();
    assert_eq!(e.path(), Some("name"));
    assert!(e.message().contains("too long"), "{}", e.message());
}

// ---------------------------------------------------------------- every error in one pass

#[test]
fn parse_all_reports_a_key_a_type_and_a_semantic_error_in_one_pass() {
    let p = Project::new();
    let text = with_tools(&format!(
        "endpoint = \"ftp://nope\"\n{AGENTIC}max_stpes = 4\n\
         [[jobs]]\nname = \"b\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = \"four\"\n"
    ));
    // `endpoint` after the tools' tables would belong to a table: put it first.
    let text = format!(
        "endpoint = \"ftp://nope\"\n{}",
        text.replacen("endpoint = \"ftp://nope\"\n", "", 1)
    );
    let errs = parse_all(&text, &p.origin()).expect_err("three errors");
    let got: Vec<(SuiteErrorKind, Option<&str>)> =
        errs.iter().map(|e| (e.kind(), e.path())).collect();
    assert_eq!(
        got,
        vec![
            (SuiteErrorKind::InvalidValue, Some("endpoint")),
            (SuiteErrorKind::UnknownField, Some("jobs[0].max_stpes")),
            (SuiteErrorKind::WrongType, Some("jobs[1].max_tokens")),
        ],
        "{errs:#?}"
    );
    assert_at(
        &errs[1],
        SuiteErrorKind::UnknownField,
        &text,
        "max_stpes",
        "jobs[0].max_stpes",
    );
    assert_eq!(errs[1].hint(), Some("did you mean `max_steps`?"));
    // `parse` keeps the staged pipeline's first problem: the key walk's.
    assert_eq!(p.err(&text).path(), Some("jobs[0].max_stpes"));
}

#[test]
fn parse_all_reports_each_failing_job_and_tool_once() {
    let p = Project::new();
    // Two jobs with a semantic problem each and a tool with one: three errors, and the
    // job naming the broken tool is not reported again for it.
    let tool = "[[tools]]\nname = \"weather\"\nparameters = { type = \"object\" }\n\
                response_file = \"tools/missing.json\"\n";
    let text = &format!(
        "{tool}{AGENTIC}{}",
        r#"
[[jobs]]
name = "b"
kind = "agentic"
mode = "model"
task = "t"
max_steps = 0

[[jobs]]
name = "b"
kind = "context"
sizes = [16]
"#
    );
    let errs = parse_all(text, &p.origin()).expect_err("errors");
    let got: Vec<(SuiteErrorKind, Option<&str>)> =
        errs.iter().map(|e| (e.kind(), e.path())).collect();
    assert_eq!(got.len(), 3, "{errs:#?}");
    assert_eq!(got[0].0, SuiteErrorKind::Fixture, "{errs:#?}");
    assert!(
        got[1].1.is_some_and(|p| p.starts_with("jobs[1]")),
        "{errs:#?}"
    );
    assert_eq!(
        got[2],
        (SuiteErrorKind::Duplicate, Some("jobs[2].name")),
        "{errs:#?}"
    );
}

#[test]
fn a_suite_with_one_error_has_exactly_that_error_in_parse_all() {
    let p = Project::new();
    let text = with_tools(&format!("{AGENTIC}max_stpes = 4\n"));
    let errs = parse_all(&text, &p.origin()).expect_err("one error");
    assert_eq!(errs.len(), 1, "{errs:#?}");
    // The snippet frames the location once and repeats neither message nor hint.
    let snippet = errs[0].snippet(false).expect("a snippet");
    assert!(snippet.trim_start().starts_with("╭─["), "{snippet}");
    assert!(!snippet.contains("did you mean"), "{snippet}");
    assert!(!snippet.contains("suite::"), "{snippet}");
    assert!(snippet.contains("max_stpes = *"), "{snippet}");
}

// ---------------------------------------------------------------- the reference page

/// `docs/suite.md` names every key of every table the schema accepts (a key added to
/// `raw.rs` without documentation fails here).
#[test]
fn the_suite_reference_names_every_key() {
    use super::fields::struct_fields;
    use super::raw::*;
    let doc =
        std::fs::read_to_string(testdata().join("../../../docs/suite.md")).expect("docs/suite.md");
    let tables: [(&str, &[&str]); 11] = [
        ("top level", struct_fields::<RawSuite>()),
        ("telemetry", struct_fields::<RawTelemetry>()),
        ("prometheus", struct_fields::<RawPrometheus>()),
        ("tools", struct_fields::<RawTool>()),
        ("tools.responses", struct_fields::<RawResponse>()),
        ("jobs", struct_fields::<RawJob>()),
        ("jobs.script", struct_fields::<RawScriptStep>()),
        ("sweep", struct_fields::<RawSweep>()),
        ("gates", struct_fields::<crate::gate::spec::GateSpec>()),
        (
            "overhead",
            struct_fields::<crate::gate::spec::OverheadSpec>(),
        ),
        ("checks", struct_fields::<crate::grade::RawCheck>()),
    ];
    for (table, keys) in tables {
        assert!(!keys.is_empty(), "{table}: no keys probed");
        for k in keys {
            assert!(
                doc.contains(&format!("`{k}`")) || doc.contains(&format!("[{k}]")),
                "docs/suite.md does not name `{k}` of {table}"
            );
        }
    }
}

#[test]
fn a_refused_value_is_not_also_reported_missing() {
    // Break-it review: a bad `kind`, `mode` or gate threshold was reported twice — as
    // invalid, then as missing (`missing required key kind`, `has no mode`, `sets no
    // threshold`) once the refused value had been removed for the next pass.
    let p = Project::new();
    let cases = [
        (
            with_tools(&AGENTIC.replace("kind = \"agentic\"", "kind = \"agentc\"")),
            "jobs[0].kind",
        ),
        (
            with_tools(&AGENTIC.replace("mode = \"model\"", "mode = \"scrpted\"")),
            "jobs[0].mode",
        ),
        (
            format!(
                "[gates]\nttft_ms = {{ p99 = \"2000\" }}\n{}",
                with_tools(AGENTIC)
            ),
            "gates.ttft_ms.p99",
        ),
    ];
    for (text, path) in cases {
        let errs = parse_all(&text, &p.origin()).expect_err("one error");
        let got: Vec<(SuiteErrorKind, Option<&str>)> =
            errs.iter().map(|e| (e.kind(), e.path())).collect();
        assert_eq!(got.len(), 1, "{path}: {errs:#?}");
        assert_eq!(got[0].1, Some(path), "{errs:#?}");
        assert_ne!(got[0].0, SuiteErrorKind::MissingField, "{errs:#?}");
    }
}

// ---------------------------------------------------------------- dataset and size caps

/// A suite with one context job reading `fixtures/{file}` as `dataset = { … keys }`.
fn dataset_job(file: &str, keys: &str) -> String {
    format!(
        "[[jobs]]\nname = \"c\"\nkind = \"context\"\n\
         dataset = {{ path = \"{file}\", {keys} }}\n"
    )
}

#[test]
fn a_dataset_length_or_block_past_the_prompt_cap_is_a_located_error() {
    // Break-it review: `length_scale = 1e9` or `block_tokens = 2000000000` passed `check`
    // and `run` aborted allocating the prompt (no report).
    let p = Project::new();
    let fx = p.dir.path().join("fixtures");
    std::fs::write(
        fx.join("m.jsonl"),
        "{\"timestamp\":0,\"input_length\":5,\"output_length\":1,\"hash_ids\":[1]}\n\
         {\"timestamp\":1,\"input_length\":512,\"output_length\":10,\"hash_ids\":[2]}\n",
    )
    .unwrap();
    let cases = [
        (
            "format = \"mooncake\", length_scale = 1e9",
            "jobs[0].dataset.path",
            "m.jsonl:1: field `input_length`: 5 × length_scale 1000000000 → 5000000000 \
             prompt tokens; a prompt size must be at most 10000000 tokens",
        ),
        (
            // 512 × 20000 = 10,240,000 tokens: line 2 only.
            "format = \"mooncake\", length_scale = 20000.0",
            "jobs[0].dataset.path",
            "m.jsonl:2: field `input_length`: 512 × length_scale 20000 → 10240000 prompt \
             tokens; a prompt size must be at most 10000000 tokens",
        ),
        (
            "format = \"mooncake\", block_tokens = 2000000000",
            "jobs[0].dataset.block_tokens",
            "`block_tokens` must be at most 10000000 tokens",
        ),
        (
            // Past u32: the same message, not a type error.
            "format = \"mooncake\", block_tokens = 1000000000000",
            "jobs[0].dataset.block_tokens",
            "`block_tokens` must be at most 10000000 tokens",
        ),
    ];
    for (keys, path, message) in cases {
        let text = dataset_job("m.jsonl", keys);
        let errs = parse_all(&text, &p.origin()).expect_err(keys);
        assert_eq!(errs.len(), 1, "{keys}: {errs:#?}");
        assert_eq!(
            errs[0].kind(),
            SuiteErrorKind::InvalidValue,
            "{keys}: {errs:#?}"
        );
        assert_eq!(errs[0].path(), Some(path), "{keys}: {errs:#?}");
        assert_eq!(errs[0].line(), Some(4), "{keys}: {errs:#?}");
        assert!(errs[0].to_string().contains(message), "{keys}: {}", errs[0]);
    }
    // Scaled output lengths have the same cap.
    std::fs::write(
        fx.join("o.jsonl"),
        "{\"prompt\": \"a\", \"output_tokens\": 8}\n{\"prompt\": \"b\", \"output_tokens\": 6000}\n",
    )
    .unwrap();
    let text = dataset_job("o.jsonl", "format = \"jsonl\", length_scale = 2000.0");
    let e = p.err(&text);
    assert_eq!(e.path(), Some("jobs[0].dataset.path"), "{e}");
    assert!(
        e.to_string().contains(
            "o.jsonl:2: field `output_tokens`: 6000 × length_scale 2000 → 12000000 output \
             tokens; an output length must be at most 10000000 tokens"
        ),
        "{e}"
    );
    // At the cap it loads.
    let text = dataset_job("m.jsonl", "format = \"mooncake\", block_tokens = 10000000");
    p.parse(&text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_prompt_size_past_u32_is_the_one_cap_error() {
    // Break-it review: `sizes = [1000000000000]` said "has no `sizes`" (false) and "expected
    // a non-negative integer" (it is one).
    let p = Project::new();
    for (sizes, message) in [
        (
            "[16, 1000000000000]",
            "a prompt size must be at most 10000000 tokens",
        ),
        (
            "[16, 20000000]",
            "a prompt size must be at most 10000000 tokens",
        ),
        ("[-1]", "expected a non-negative integer"),
    ] {
        let text = CONTEXT.replace("[16]", sizes);
        let errs = parse_all(&text, &p.origin()).expect_err(sizes);
        assert_eq!(errs.len(), 1, "{sizes}: {errs:#?}");
        assert!(
            errs[0].to_string().contains(message),
            "{sizes}: {}",
            errs[0]
        );
        assert!(
            errs[0]
                .path()
                .is_some_and(|x| x.starts_with("jobs[0].sizes[")),
            "{sizes}: {errs:#?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_tokenizer_path_that_is_a_symlink_is_a_located_error() {
    // Break-it review: a symlinked tokenizer.json passed `check`, then `run` failed its
    // setup reading it (the bounded reader never follows a symlink).
    let p = Project::new();
    let suites = p.dir.path().join("suites");
    std::fs::write(suites.join("tok.json"), "{}").unwrap();
    std::os::unix::fs::symlink("tok.json", suites.join("lnk.json")).unwrap();
    let text = format!("tokenizer = \"lnk.json\"\n{CONTEXT}");
    let e = p.err(&text);
    assert_at(
        &e,
        SuiteErrorKind::InvalidValue,
        &text,
        "\"lnk.json\"",
        "tokenizer",
    );
    assert!(e.to_string().contains("is a symlink"), "{e}");
    // The file itself is accepted.
    p.parse(&format!("tokenizer = \"tok.json\"\n{CONTEXT}"))
        .unwrap_or_else(|e| panic!("{e}"));
}
