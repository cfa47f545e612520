//! Structural key checks on the spanned document, before serde: a literal `api_key`
//! anywhere, unknown keys and tables (with a did-you-mean hint over the keys that table
//! accepts), and keys of another job kind (field case C31: a typo is never silently
//! ignored).

use toml::de::{DeTable, DeValue};

use super::ctx::Ctx;
use super::doc::{array_tables, join, sorted_entries, str_of};
use super::error::{SuiteError, SuiteErrorKind};
use super::fields::{did_you_mean, struct_fields};
use super::model::JobKindName;
use super::raw::{
    RawJob, RawPrometheus, RawResponse, RawScriptStep, RawSuite, RawSweep, RawTelemetry, RawTool,
    common_job_keys, kind_job_keys, load_job_keys, load_kinds, request_job_keys,
};
use crate::gate::spec::{GateSpec, OverheadSpec, PercentileBounds};
use crate::grade::RawCheck;

/// Runs every structural check; returns every problem in file order (secrets alone when
/// there is a literal secret: the other checks run on a file without one).
pub(crate) fn check(root: &DeTable<'_>, ctx: &Ctx) -> Vec<SuiteError> {
    let mut w = Walker {
        ctx,
        errors: Vec::new(),
    };
    w.secrets("", root);
    if w.errors.is_empty() {
        w.suite(root);
    }
    let mut errors = w.errors;
    errors.sort_by_key(|e| e.location().map(|l| l.offset));
    errors
}

struct Walker<'c> {
    ctx: &'c Ctx,
    errors: Vec<SuiteError>,
}

/// Which table of the schema a table is, for messages and hints.
#[derive(Clone, Copy)]
enum Where {
    Top,
    Other,
}

impl Walker<'_> {
    /// A key named `api_key` (any case) anywhere, free-form tables included.
    fn secrets(&mut self, prefix: &str, t: &DeTable<'_>) {
        for (k, v) in sorted_entries(t) {
            let path = join(prefix, k.get_ref());
            if k.get_ref().eq_ignore_ascii_case("api_key") {
                self.errors.push(
                    self.ctx
                        .err(
                            k.span(),
                            SuiteErrorKind::Secret,
                            Some(path.clone()),
                            format!(
                                "`{path}`: a suite never holds a secret; the API key comes from \
                                 an environment variable"
                            ),
                        )
                        .with_hint(Some(
                            "use `api_key_env = \"NAME\"` with the name of the environment \
                             variable that holds the key"
                                .into(),
                        )),
                );
            }
            self.secrets_in(&path, v.get_ref());
        }
    }

    fn secrets_in(&mut self, path: &str, v: &DeValue<'_>) {
        match v {
            DeValue::Table(t) => self.secrets(path, t),
            DeValue::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    self.secrets_in(&format!("{path}[{i}]"), e.get_ref());
                }
            }
            _ => {}
        }
    }

    fn suite(&mut self, root: &DeTable<'_>) {
        self.keys("", root, struct_fields::<RawSuite>(), Where::Top);
        if let Some(DeValue::Table(t)) = root.get("telemetry").map(|v| v.get_ref()) {
            self.keys(
                "telemetry",
                t,
                struct_fields::<RawTelemetry>(),
                Where::Other,
            );
            if let Some(DeValue::Table(p)) = t.get("prometheus").map(|v| v.get_ref()) {
                self.keys(
                    "telemetry.prometheus",
                    p,
                    struct_fields::<RawPrometheus>(),
                    Where::Other,
                );
            }
        }
        if let Some(DeValue::Table(t)) = root.get("gates").map(|v| v.get_ref()) {
            self.gates("gates", t);
        }
        if let Some(DeValue::Table(t)) = root.get("overhead").map(|v| v.get_ref()) {
            self.keys("overhead", t, struct_fields::<OverheadSpec>(), Where::Other);
        }
        if let Some(v) = root.get("tools") {
            for (i, tool) in array_tables(v.get_ref()) {
                let p = format!("tools[{i}]");
                self.keys(&p, tool, struct_fields::<RawTool>(), Where::Other);
                if let Some(r) = tool.get("responses") {
                    for (j, resp) in array_tables(r.get_ref()) {
                        let rp = format!("{p}.responses[{j}]");
                        self.keys(&rp, resp, struct_fields::<RawResponse>(), Where::Other);
                    }
                }
            }
        }
        if let Some(v) = root.get("jobs") {
            for (i, job) in array_tables(v.get_ref()) {
                self.job(&format!("jobs[{i}]"), job);
            }
        }
    }

    fn gates(&mut self, path: &str, t: &DeTable<'_>) {
        self.keys(path, t, struct_fields::<GateSpec>(), Where::Other);
        for (k, v) in sorted_entries(t) {
            if let DeValue::Table(b) = v.get_ref() {
                self.keys(
                    &join(path, k.get_ref()),
                    b,
                    struct_fields::<PercentileBounds>(),
                    Where::Other,
                );
            }
        }
    }

    fn job(&mut self, path: &str, job: &DeTable<'_>) {
        let all = struct_fields::<RawJob>();
        let kind = str_of(job, "kind")
            .and_then(|k| JobKindName::ALL.into_iter().find(|n| n.as_str() == k));
        match kind {
            None => self.keys(path, job, all, Where::Other),
            Some(kind) => {
                let (load, request): (&[&str], &[&str]) = if load_kinds().contains(&kind) {
                    (load_job_keys(), request_job_keys())
                } else {
                    (&[], &[])
                };
                let allowed: Vec<&str> = common_job_keys()
                    .iter()
                    .chain(kind_job_keys(kind))
                    .chain(load)
                    .chain(request)
                    .copied()
                    .collect();
                for (k, _) in sorted_entries(job) {
                    let key = k.get_ref().as_ref();
                    if allowed.contains(&key) {
                        continue;
                    }
                    // A key that belongs to other job kinds: what it is, and the hint.
                    let kinds: Vec<&str> = load_kinds().iter().map(|k| k.as_str()).collect();
                    let wrong_kind = if load_job_keys().contains(&key) {
                        Some((
                            format!("`{key}` is a load key of `{}` jobs", kinds.join("` and `")),
                            "a swe harness drives the endpoint itself; run it under load from \
                             the harness"
                                .to_string(),
                        ))
                    } else if request_job_keys().contains(&key) {
                        Some((
                            format!(
                                "`{key}` is a request key of `{}` jobs",
                                kinds.join("` and `")
                            ),
                            "a swe harness sends its own requests; set it in the harness"
                                .to_string(),
                        ))
                    } else {
                        JobKindName::ALL
                            .into_iter()
                            .find(|other| kind_job_keys(*other).contains(&key))
                            .map(|owner| {
                                (
                                    format!("`{key}` is a key of `{}` jobs", owner.as_str()),
                                    format!(
                                        "`{}` jobs accept {}",
                                        kind.as_str(),
                                        quoted(kind_job_keys(kind))
                                    ),
                                )
                            })
                    };
                    match wrong_kind {
                        Some((what, hint)) => self.errors.push(
                            self.ctx
                                .err(
                                    k.span(),
                                    SuiteErrorKind::WrongKindField,
                                    Some(join(path, key)),
                                    format!(
                                        "{what}, but `{path}` has `kind = \"{}\"`",
                                        kind.as_str()
                                    ),
                                )
                                .with_hint(Some(hint)),
                        ),
                        None => self.unknown(path, k, job.get(key), &allowed, Where::Other),
                    }
                }
            }
        }
        if let Some(DeValue::Table(g)) = job.get("gates").map(|v| v.get_ref()) {
            self.gates(&join(path, "gates"), g);
        }
        if let Some(c) = job.get("checks") {
            for (j, check) in array_tables(c.get_ref()) {
                let cp = format!("{path}.checks[{j}]");
                self.keys(&cp, check, struct_fields::<RawCheck>(), Where::Other);
            }
        }
        if let Some(DeValue::Table(sw)) = job.get("sweep").map(|v| v.get_ref()) {
            self.keys(
                &join(path, "sweep"),
                sw,
                struct_fields::<RawSweep>(),
                Where::Other,
            );
        }
        if let Some(s) = job.get("script") {
            for (j, step) in array_tables(s.get_ref()) {
                let sp = format!("{path}.script[{j}]");
                self.keys(&sp, step, struct_fields::<RawScriptStep>(), Where::Other);
            }
        }
    }

    /// Reports every key of `t` not in `allowed`.
    fn keys(&mut self, path: &str, t: &DeTable<'_>, allowed: &[&str], at: Where) {
        for (k, v) in sorted_entries(t) {
            if !allowed.contains(&k.get_ref().as_ref()) {
                self.unknown(path, k, Some(v), allowed, at);
            }
        }
    }

    fn unknown(
        &mut self,
        table: &str,
        key: &serde_spanned::Spanned<std::borrow::Cow<'_, str>>,
        value: Option<&serde_spanned::Spanned<DeValue<'_>>>,
        allowed: &[&str],
        at: Where,
    ) {
        let name = key.get_ref().as_ref();
        let path = join(table, name);
        let is_table = matches!(value.map(|v| v.get_ref()), Some(DeValue::Table(_)));
        let place = match at {
            Where::Top => "at the top level".to_string(),
            Where::Other => format!("in `{table}`"),
        };
        let suggestion = did_you_mean(name, allowed.iter().copied());
        let (kind, message) = if is_table {
            (
                SuiteErrorKind::UnknownTable,
                match at {
                    Where::Top => format!("unknown table `[{name}]`: a suite has no such table"),
                    Where::Other => format!("unknown table `{name}` {place}"),
                },
            )
        } else {
            (
                SuiteErrorKind::UnknownField,
                format!("unknown field `{name}` {place}"),
            )
        };
        let hint = match suggestion {
            Some(s) => Some(format!("did you mean `{s}`?")),
            None => match (at, is_table) {
                (Where::Top, true) => Some(
                    "a suite's tables are `[telemetry]`, `[gates]`, `[overhead]`, \
                     `[[tools]]` and `[[jobs]]`"
                        .to_string(),
                ),
                _ => {
                    elsewhere(name).or_else(|| Some(format!("expected one of {}", quoted(allowed))))
                }
            },
        };
        self.errors.push(
            self.ctx
                .err(key.span(), kind, Some(path), message)
                .with_hint(hint),
        );
    }
}

/// Where a key that is misplaced in this table belongs, if it is a key of another table.
fn elsewhere(name: &str) -> Option<String> {
    let homes: [(&str, &[&str]); 5] = [
        ("the top level", struct_fields::<RawSuite>()),
        ("`[telemetry]`", struct_fields::<RawTelemetry>()),
        ("a `[[jobs]]` table", struct_fields::<RawJob>()),
        ("a `[[tools]]` table", struct_fields::<RawTool>()),
        ("`[gates]`", struct_fields::<GateSpec>()),
    ];
    homes
        .iter()
        .find(|(_, keys)| keys.contains(&name))
        .map(|(home, _)| format!("`{name}` belongs in {home}"))
}

fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
