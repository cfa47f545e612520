//! The `run --dry-run` preview: every resolved setting with its source
//! (docs/suite.md), as structured rows and as text.

use std::fmt::Write as _;
use std::path::Path;

use super::model::{JobKind, ResponseBody, Suite, ToolSource};
use super::resolve::{
    EndpointSetting, ResolvedJob, ResolvedSuite, SettingSource, flatten, metrics_url_for,
};

/// One resolved setting as shown by `--dry-run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSetting {
    /// Dotted key as in the suite (`capture_timeline`, `telemetry.gpu`, `max_steps`,
    /// `tools.read_file`, `script[0]`).
    pub key: String,
    /// The effective value, rendered; secrets never appear (only `api_key_env`'s name,
    /// env keys without values).
    pub value: String,
    /// Where it came from; `None` for derived facts (file paths, counts, tools, checks).
    pub source: Option<SettingSource>,
}

/// Collects rows; `prefix` is the dotted path of the table whose keys are looked up in
/// the suite to tell `suite` from `default`.
struct Rows<'a> {
    suite: &'a Suite,
    prefix: String,
    rows: Vec<ResolvedSetting>,
}

impl Rows<'_> {
    fn push(&mut self, key: &str, value: impl ToString, source: Option<SettingSource>) {
        self.rows.push(ResolvedSetting {
            key: key.to_string(),
            value: value.to_string(),
            source,
        });
    }

    /// A fact with no source.
    fn fact(&mut self, key: &str, value: impl ToString) {
        self.push(key, value, None);
    }

    /// A setting from the file (`suite`) or a default; `file_key` is the key looked up.
    fn keyed(&mut self, key: &str, file_key: &str, value: impl ToString) {
        let path = format!("{}{file_key}", self.prefix);
        let source = if self.suite.is_flagged(&path) {
            SettingSource::Flag
        } else if self.suite.is_set(&path) {
            SettingSource::Suite
        } else {
            SettingSource::Default
        };
        self.push(key, value, Some(source));
    }

    /// [`Rows::keyed`] with the same display and file key.
    fn file(&mut self, key: &str, value: impl ToString) {
        self.keyed(key, key, value);
    }
}

/// A path relative to the fixtures root for display.
fn rel(s: &Suite, p: &Path) -> String {
    p.strip_prefix(&s.fixtures_root)
        .unwrap_or(p)
        .display()
        .to_string()
}

fn secs(d: std::time::Duration) -> String {
    d.as_secs_f64().to_string()
}

/// The `[telemetry]` rows: periods, metrics and its URL (given, derived from the endpoint
/// `endpoint`, or the simulator's), the engine process, GPUs and Prometheus.
fn telemetry_rows(r: &mut Rows<'_>, endpoint: &EndpointSetting) {
    let t = &r.suite.telemetry;
    r.file("telemetry.sample_period_ms", t.sample_period_ms);
    r.file("telemetry.metrics_period_ms", t.metrics_period_ms);
    r.file("telemetry.metrics", t.metrics);
    let metrics_url = match (&t.metrics_url, endpoint) {
        _ if !t.metrics => "none (metrics off)".to_string(),
        (Some(u), _) => u.clone(),
        (None, EndpointSetting::Url(u)) => metrics_url_for(u),
        (None, EndpointSetting::Simulated) => "the simulator's /metrics".to_string(),
    };
    r.file("telemetry.metrics_url", metrics_url);
    r.file(
        "telemetry.engine_pid",
        t.engine_pid.map_or("none".to_string(), |p| p.to_string()),
    );
    r.file("telemetry.include_descendants", t.include_descendants);
    r.file("telemetry.gpu", t.gpu.as_str());
    r.file(
        "telemetry.gpu_devices",
        match &t.gpu_devices {
            None => "none (CUDA_VISIBLE_DEVICES, else every GPU)".to_string(),
            Some(l) => format!(
                "[{}]",
                l.iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    );
    r.file(
        "telemetry.prometheus",
        match &t.prometheus {
            None => "none".to_string(),
            Some(p) => format!(
                "{} selector {} (queried after the run, wait up to {} s)",
                p.url,
                if p.selector.is_empty() {
                    "none"
                } else {
                    &p.selector
                },
                p.wait_s
            ),
        },
    );
}

/// One row per tool: its response source and latency.
fn tool_rows(r: &mut Rows<'_>) {
    let s = r.suite;
    for tool in &r.suite.tools {
        let source = match &tool.source {
            ToolSource::File(p) => format!("response_file {}", rel(s, p)),
            ToolSource::ReadRoot {
                root,
                path_argument,
            } => format!(
                "read_root {} (path_argument `{path_argument}`)",
                rel(s, root)
            ),
            ToolSource::Table { responses, default } => {
                let d = match default {
                    None => "none".to_string(),
                    Some(ResponseBody::Text(_)) => "text".to_string(),
                    Some(ResponseBody::File(p)) => rel(s, p),
                };
                format!("{} response(s), default {d}", responses.len())
            }
        };
        let v = format!("{source}, latency_ms {}", tool.latency.as_millis());
        r.fact(&format!("tools.{}", tool.name), v);
    }
}

impl ResolvedSuite {
    /// Suite-wide settings in display order: identity and paths, endpoint, model,
    /// `api_key_env`, `capture_timeline`, seed, engine, timeouts, telemetry, gates,
    /// overhead, tools, filter and the number of selected jobs.
    pub fn suite_settings(&self) -> Vec<ResolvedSetting> {
        let s = &self.suite;
        let mut r = Rows {
            suite: s,
            prefix: String::new(),
            rows: Vec::new(),
        };
        r.keyed("suite", "name", &s.name);
        r.fact("file", s.file.display());
        r.keyed("fixtures_root", "fixtures_dir", s.fixtures_root.display());
        r.fact("project_root", s.project_root.display());
        let endpoint = match &self.endpoint.value {
            EndpointSetting::Simulated => "simulated (built-in)".to_string(),
            EndpointSetting::Url(u) => u.clone(),
        };
        r.push("endpoint", endpoint, Some(self.endpoint.source));
        let model = self
            .model
            .value
            .clone()
            .unwrap_or_else(|| "none (required: set `model` or pass --model)".into());
        r.push("model", model, Some(self.model.source));
        let key_env = match &s.api_key_env {
            Some(v) => format!("{v} (value not shown)"),
            None => "none".into(),
        };
        r.file("api_key_env", key_env);
        r.push(
            "capture_timeline",
            self.capture_timeline.value,
            Some(self.capture_timeline.source),
        );
        r.file("seed", s.seed);
        r.file("engine", s.engine.as_str());
        let tokenizer = match &s.tokenizer {
            super::model::TokenizerSource::File(p) => {
                format!("{} ({})", p.display(), s.tokenizer.label())
            }
            t => t.label().to_string(),
        };
        r.file("tokenizer", tokenizer);
        r.file("request_timeout_s", secs(s.request_timeout));
        r.file("idle_timeout_s", secs(s.idle_timeout));
        r.file("max_event_bytes", s.max_event_bytes);
        telemetry_rows(&mut r, &self.endpoint.value);
        r.file("gates", flatten(&s.gates));
        r.file("overhead", flatten(&s.overhead));
        tool_rows(&mut r);
        r.push(
            "filter",
            self.filter.as_deref().unwrap_or("none"),
            self.filter.as_ref().map(|_| SettingSource::Flag),
        );
        r.fact(
            "jobs",
            format!("{} of {} selected", self.jobs.len(), s.jobs.len()),
        );
        r.rows
    }

    /// One selected job's settings: common ones, kind-specific ones, merged gates and
    /// check descriptions.
    pub fn job_settings(&self, rj: &ResolvedJob) -> Vec<ResolvedSetting> {
        let s = &self.suite;
        let j = &rj.job;
        let mut r = Rows {
            suite: s,
            prefix: format!("jobs[{}].", j.index),
            rows: Vec::new(),
        };
        if let Some(d) = &j.description {
            r.fact("description", format!("{d:?}"));
        }
        r.file("max_tokens", j.max_tokens);
        r.file("temperature", j.temperature);
        if !matches!(j.kind, JobKind::Swe(_)) {
            r.file(
                "n",
                j.n.map_or("1 (not sent)".to_string(), |n| n.to_string()),
            );
        }
        r.file("repeat", j.repeat);
        match &j.kind {
            JobKind::Agentic(a) => {
                r.file("mode", a.mode.as_str());
                r.file(
                    "system",
                    a.system
                        .as_ref()
                        .map_or("none".to_string(), |x| format!("{x:?}")),
                );
                r.file("task", format!("{:?}", a.task));
                r.file("tools", format!("[{}]", a.tools.join(", ")));
                r.file("max_steps", a.max_steps);
                r.file("max_repeated_tool_calls", a.max_repeated_tool_calls);
                if !a.tool_choice.is_empty() {
                    r.file("tool_choice", a.tool_choice.join(", then "));
                }
                for (k, step) in a.script.iter().enumerate() {
                    r.fact(
                        &format!("script[{k}]"),
                        format!("{} {}", step.tool, step.arguments),
                    );
                }
            }
            JobKind::Context(c) => {
                let sizes: Vec<String> = c.sizes.iter().map(u32::to_string).collect();
                r.file("sizes", format!("[{}]", sizes.join(", ")));
                r.file("shared_prefix", c.shared_prefix);
                r.file(
                    "filler",
                    c.filler
                        .as_ref()
                        .map_or("built-in".to_string(), |f| rel(s, f)),
                );
            }
            JobKind::Swe(w) => {
                r.file("command", format!("{:?}", w.command));
                r.fact("cwd", w.cwd.display());
                r.file("timeout_s", secs(w.timeout));
                let env: Vec<&str> = w.env.keys().map(String::as_str).collect();
                r.file("env", format!("[{}] (values not shown)", env.join(", ")));
            }
        }
        if let Some(l) = &j.load {
            let opt = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
            r.file("concurrency", opt(l.concurrency.map(|c| c.to_string())));
            r.file("rate", opt(l.rate.map(|x| format!("{x}/s"))));
            r.file(
                "arrival",
                if l.is_open() {
                    l.arrival.as_str()
                } else {
                    "none (closed loop)"
                },
            );
            match l.stop {
                super::load_spec::Stop::Count(n) => r.file("count", n),
                super::load_spec::Stop::Duration(ns) => r.file("duration_s", ns as f64 / 1e9),
            }
            r.file("warmup", l.warmup);
            r.file("aggregation", l.aggregation.as_str());
            let sweep = match &l.sweep {
                None => "none".to_string(),
                Some(super::load_spec::Sweep::Concurrency(v)) => format!("concurrency {v:?}"),
                Some(super::load_spec::Sweep::Rate(v)) => format!("rate {v:?}"),
            };
            r.file("sweep", sweep);
            r.fact("load", l.describe());
        }
        let gates_source = if s.is_set("gates") || s.is_set(&format!("{}gates", r.prefix)) {
            SettingSource::Suite
        } else {
            SettingSource::Default
        };
        r.push("gates", flatten(&rj.gates), Some(gates_source));
        r.fact(
            "built-in gates",
            match &j.kind {
                JobKind::Swe(_) => "harness_exit == 0 (the harness's exit status)".to_string(),
                _ if rj.gates.max_error_rate.is_none() => "successful_requests >= 1, \
                    max_error_rate <= 0 (a failed request fails the job; declare \
                    max_error_rate to tolerate some)"
                    .to_string(),
                _ => "successful_requests >= 1".to_string(),
            },
        );
        let checks: Vec<String> = j.checks.iter().map(|c| c.describe()).collect();
        r.fact(
            "checks",
            if checks.is_empty() {
                "none".to_string()
            } else {
                checks.join(", ")
            },
        );
        r.rows
    }

    /// The `run --dry-run` text: a headline, then [`ResolvedSuite::suite_settings`] as
    /// `key: value (source)` lines, then per selected job a `job <id> (<kind>)` line and
    /// its [`ResolvedSuite::job_settings`] indented by two spaces. Sends nothing.
    pub fn dry_run_text(&self) -> String {
        let mut o = String::from("dry run: resolved settings (nothing is sent)\n");
        let line = |o: &mut String, indent: usize, row: &ResolvedSetting| {
            let _ = write!(o, "{:indent$}{}: {}", "", row.key, row.value);
            if let Some(src) = row.source {
                let _ = write!(o, " ({})", src.as_str());
            }
            o.push('\n');
        };
        for row in self.suite_settings() {
            line(&mut o, 0, &row);
        }
        for rj in &self.jobs {
            let _ = writeln!(o, "job {} ({})", rj.job.id, rj.job.kind_name().as_str());
            for row in self.job_settings(rj) {
                line(&mut o, 2, &row);
            }
        }
        o
    }
}
