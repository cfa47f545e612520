//! Run-time resolution: suite values, CLI flags and defaults → every effective setting
//! with its source (`run --dry-run` previews every resolved setting,
//! `capture_timeline` included; docs/suite.md).

use std::ffi::OsString;

use super::error::{SuiteError, SuiteErrorKind};
use super::model::{Job, SIM_MODEL, Suite};
use super::validate::{is_env_name, normalize_endpoint};
use crate::gate::spec::GateSpec;

/// Where an effective setting came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingSource {
    /// Built-in default (docs/suite.md).
    Default,
    /// Written in the suite file.
    Suite,
    /// A command-line flag.
    Flag,
}

impl SettingSource {
    /// `default`, `suite` or `flag`.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingSource::Default => "default",
            SettingSource::Suite => "suite",
            SettingSource::Flag => "flag",
        }
    }
}

/// An effective value and its source.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    /// The effective value.
    pub value: T,
    /// Where it came from.
    pub source: SettingSource,
}

/// The endpoint a run talks to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointSetting {
    /// The built-in simulator, started in-process on a loopback port (every output says
    /// so).
    Simulated,
    /// A base URL such as `http://127.0.0.1:8000/v1` (no trailing slash).
    Url(String),
}

/// Command-line overrides of `run`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOverrides {
    /// `--endpoint URL`: replaces the suite's endpoint (and the simulator).
    pub endpoint: Option<String>,
    /// `--model NAME`.
    pub model: Option<String>,
    /// `--capture-timeline` present → true (overrides the suite's value); absent → the
    /// suite decides.
    pub capture_timeline: bool,
    /// `--filter PATTERN`: substring of the job id, or a glob with `*` matched against
    /// the whole id ([`filter_matches`]).
    pub filter: Option<String>,
}

impl RunOverrides {
    /// Checks the flags themselves (call before [`resolve`]; a bad flag is bad input,
    /// exit 2): `--endpoint` is an http(s) URL, `--model` and `--filter` are non-empty.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(e) = &self.endpoint {
            normalize_endpoint(e).map_err(|m| format!("--endpoint: {m}"))?;
        }
        if self.model.as_deref().is_some_and(|m| m.trim().is_empty()) {
            return Err("--model: empty model name".into());
        }
        if self.filter.as_deref().is_some_and(str::is_empty) {
            return Err("--filter: empty pattern".into());
        }
        Ok(())
    }
}

/// A job selected for the run, with its effective gates.
#[derive(Debug, Clone)]
pub struct ResolvedJob {
    /// The job as loaded.
    pub job: Job,
    /// Suite gates merged with the job's ([`GateSpec::merged_with`]).
    pub gates: GateSpec,
}

/// Every effective setting of one run of one suite.
#[derive(Debug, Clone)]
pub struct ResolvedSuite {
    /// The suite as loaded.
    pub suite: Suite,
    /// `--endpoint` > suite `endpoint` > built-in simulator.
    pub endpoint: Setting<EndpointSetting>,
    /// `--model` > suite `model` > `inferscope-sim` when simulated > `None` (a run
    /// against a real endpoint then fails with [`ResolvedSuite::model_name`]'s error).
    pub model: Setting<Option<String>>,
    /// `--capture-timeline` > suite `capture_timeline` > false.
    pub capture_timeline: Setting<bool>,
    /// The `--filter` pattern, if any.
    pub filter: Option<String>,
    /// The jobs the filter selects, in file order (possibly none).
    pub jobs: Vec<ResolvedJob>,
}

/// Applies `overrides` to `suite`. Flags are assumed valid ([`RunOverrides::validate`]);
/// an endpoint flag is normalized (trailing `/` removed) when it parses.
pub fn resolve(suite: &Suite, overrides: &RunOverrides) -> ResolvedSuite {
    let endpoint = match (&overrides.endpoint, &suite.endpoint) {
        (Some(e), _) => Setting {
            value: EndpointSetting::Url(normalize_endpoint(e).unwrap_or_else(|_| e.clone())),
            source: SettingSource::Flag,
        },
        (None, Some(e)) => Setting {
            value: EndpointSetting::Url(e.clone()),
            source: SettingSource::Suite,
        },
        (None, None) => Setting {
            value: EndpointSetting::Simulated,
            source: SettingSource::Default,
        },
    };
    let model = match (&overrides.model, &suite.model, &endpoint.value) {
        (Some(m), _, _) => Setting {
            value: Some(m.clone()),
            source: SettingSource::Flag,
        },
        (None, Some(m), _) => Setting {
            value: Some(m.clone()),
            source: SettingSource::Suite,
        },
        (None, None, EndpointSetting::Simulated) => Setting {
            value: Some(SIM_MODEL.to_string()),
            source: SettingSource::Default,
        },
        (None, None, EndpointSetting::Url(_)) => Setting {
            value: None,
            source: SettingSource::Default,
        },
    };
    let capture_timeline = if overrides.capture_timeline {
        Setting {
            value: true,
            source: SettingSource::Flag,
        }
    } else if suite.is_set("capture_timeline") {
        Setting {
            value: suite.capture_timeline,
            source: SettingSource::Suite,
        }
    } else {
        Setting {
            value: false,
            source: SettingSource::Default,
        }
    };
    let jobs = suite
        .jobs
        .iter()
        .filter(|j| {
            overrides
                .filter
                .as_deref()
                .is_none_or(|f| filter_matches(f, &j.id))
        })
        .map(|j| ResolvedJob {
            job: j.clone(),
            gates: suite.gates_for(j),
        })
        .collect();
    ResolvedSuite {
        suite: suite.clone(),
        endpoint,
        model,
        capture_timeline,
        filter: overrides.filter.clone(),
        jobs,
    }
}

/// `--filter` matching: a pattern with `*` is a glob over the whole job id (`*` matches
/// any run of characters, including `::`); otherwise a substring match. Case-sensitive.
pub fn filter_matches(pattern: &str, id: &str) -> bool {
    if !pattern.contains('*') {
        return id.contains(pattern);
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = id.chars().collect();
    // Iterative wildcard match with single backtrack point (linear in practice).
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if pi < p.len() && p[pi] == s[si] {
            pi += 1;
            si += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// The default `/metrics` URL of an endpoint: a trailing `/v1` replaced by `/metrics`,
/// else `/metrics` appended (docs/suite.md `telemetry.metrics_url`).
pub fn metrics_url_for(base_url: &str) -> String {
    let b = base_url.trim_end_matches('/');
    match b.strip_suffix("/v1") {
        Some(root) => format!("{root}/metrics"),
        None => format!("{b}/metrics"),
    }
}

/// `list SUITE` output: one line per job, `suite::job (kind)`, in file order.
pub fn list_text(suite: &Suite) -> String {
    suite
        .jobs
        .iter()
        .map(|j| format!("{} ({})\n", j.id, j.kind_name().as_str()))
        .collect()
}

impl Suite {
    /// The API key from the environment variable named by `api_key_env`: `Ok(None)` when
    /// the suite names none; an [`SuiteErrorKind::EnvVar`] error naming the variable (never
    /// a value) when it is unset, empty or not UTF-8.
    pub fn api_key(&self) -> Result<Option<String>, SuiteError> {
        self.api_key_with(|name| std::env::var_os(name))
    }

    /// [`Suite::api_key`] with an explicit environment lookup (tests, embedding).
    pub fn api_key_with(
        &self,
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<String>, SuiteError> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        debug_assert!(is_env_name(var));
        let problem = match lookup(var) {
            Some(v) => match v.into_string() {
                Ok(s) if !s.is_empty() => return Ok(Some(s)),
                Ok(_) => "is set but empty",
                Err(_) => "is not valid UTF-8",
            },
            None => "is not set",
        };
        let message = format!("environment variable `{var}` (named by `api_key_env`) {problem}");
        let err = match &self.api_key_env_span {
            Some(span) => SuiteError::located(
                self.file.clone(),
                &self.text,
                span.clone(),
                SuiteErrorKind::EnvVar,
                Some("api_key_env".into()),
                message,
            ),
            None => SuiteError::plain(self.file.clone(), SuiteErrorKind::EnvVar, message),
        };
        Err(err.with_hint(Some(format!("export {var}=... before the run"))))
    }
}

impl ResolvedSuite {
    /// The effective model, or an error saying how to provide one (no `model` in the
    /// suite, no `--model`, and a real endpoint).
    pub fn model_name(&self) -> Result<&str, SuiteError> {
        self.model.value.as_deref().ok_or_else(|| {
            SuiteError::plain(
                self.suite.file.clone(),
                SuiteErrorKind::MissingField,
                "no model: the suite names an endpoint but no `model`".into(),
            )
            .with_path("model")
            .with_hint(Some(
                "set `model = \"...\"` in the suite or pass --model NAME".into(),
            ))
        })
    }

    /// The API key ([`Suite::api_key`]).
    pub fn api_key(&self) -> Result<Option<String>, SuiteError> {
        self.suite.api_key()
    }

    /// What a run needs before its first request: the API key variable, when named, is
    /// set ([`ResolvedSuite::api_key`]), and a real endpoint has a model
    /// ([`ResolvedSuite::model_name`]; the simulator needs none). The first problem, in
    /// that order.
    pub fn check_endpoint_settings(&self) -> Result<(), SuiteError> {
        self.api_key()?;
        if !matches!(self.endpoint.value, EndpointSetting::Simulated) {
            self.model_name()?;
        }
        Ok(())
    }

    /// The effective `/metrics` URL once the endpoint's base URL is known (for the
    /// simulator, its loopback address): `None` when `telemetry.metrics = false`.
    pub fn metrics_url(&self, base_url: &str) -> Option<String> {
        let t = &self.suite.telemetry;
        if !t.metrics {
            return None;
        }
        Some(
            t.metrics_url
                .clone()
                .unwrap_or_else(|| metrics_url_for(base_url)),
        )
    }
}

/// `a.b=v, c=w` over the non-null leaves of a serializable value; `none` when empty.
pub(crate) fn flatten<T: serde::Serialize>(v: &T) -> String {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Null => {}
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let p = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&p, x, out);
                }
            }
            other => out.push(format!("{prefix}={other}")),
        }
    }
    let mut out = Vec::new();
    if let Ok(j) = serde_json::to_value(v) {
        walk("", &j, &mut out);
    }
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}
