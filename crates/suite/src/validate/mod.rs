//! Semantic validation: defaults, names, cross-references, fixture files (the schema's
//! list of validation errors, each located at the offending key or value).

mod checks;
mod fixtures;
mod job;
mod tool;

use std::path::Path;

use super::ctx::Ctx;
use super::error::{SuiteError, SuiteErrorKind, location_in};
use super::model::*;
use super::raw::{RawJob, RawSuite, RawTool};
use fixtures::Fixtures;

use SuiteErrorKind as K;
pub(crate) use checks::is_env_name;
use checks::{R, check_name, check_suite_name_len, first_problem, gate_spec, seconds};

/// Turns the deserialized file into a [`Suite`], or every problem found: one per
/// top-level key, per tool and per job (a job or tool reports its first problem; a job's
/// reference to a tool that itself failed validation is not reported again).
pub(crate) fn validate(raw: RawSuite, ctx: &Ctx, origin: &Path) -> Result<Suite, Vec<SuiteError>> {
    let mut errs: Vec<SuiteError> = Vec::new();
    let name = suite_name(ctx, raw.name.as_deref(), origin, &mut errs);
    let endpoint = check_endpoint_model_key(ctx, &raw, &mut errs);
    let request_timeout = keep(
        &mut errs,
        seconds(
            ctx,
            "request_timeout_s",
            raw.request_timeout_s,
            DEFAULT_REQUEST_TIMEOUT_S,
        ),
    );
    let idle_timeout = keep(
        &mut errs,
        seconds(
            ctx,
            "idle_timeout_s",
            raw.idle_timeout_s,
            DEFAULT_IDLE_TIMEOUT_S,
        ),
    );
    let max_event_bytes = raw.max_event_bytes.unwrap_or(DEFAULT_MAX_EVENT_BYTES);
    if max_event_bytes == 0 {
        errs.push(ctx.at_value(
            "max_event_bytes",
            K::InvalidValue,
            "`max_event_bytes` must be at least 1".into(),
        ));
    }
    // Tools and jobs resolve fixture paths: without a fixtures root they are not checked.
    let fx = keep(
        &mut errs,
        Fixtures::locate(ctx, origin, raw.fixtures_dir.as_deref()),
    );
    let telemetry = keep(&mut errs, telemetry(ctx, raw.telemetry.unwrap_or_default()));
    let gates = raw.gates.unwrap_or_default();
    keep(
        &mut errs,
        gate_spec(ctx, "gates", "the suite's `[gates]`", &gates),
    );
    let extra_body = keep(&mut errs, extra_body(ctx, raw.extra_body.as_ref()));
    let tokenizer = match &raw.tokenizer {
        None => Some(TokenizerSource::Bytes),
        Some(t) => {
            let base = origin.parent().unwrap_or(Path::new("."));
            keep(
                &mut errs,
                TokenizerSource::parse(t, base)
                    .map_err(|m| ctx.at_value("tokenizer", K::InvalidValue, m)),
            )
        }
    };
    let overhead = raw.overhead.unwrap_or_default();
    if let Err(problems) = crate::gate::validate_overhead(&overhead) {
        errs.push(first_problem(ctx, "overhead", "`[overhead]`", problems));
    }
    let Some(fx) = fx else {
        return Err(errs);
    };

    // Duplicate names are found over every entry, valid or not.
    let (tools, failed_tools) = validate_tools(ctx, &fx, raw.tools, &mut errs);
    let jobs = validate_jobs(ctx, &fx, &tools, &name, raw.jobs, failed_tools, &mut errs);
    let (Some(request_timeout), Some(idle_timeout), Some(telemetry), true) =
        (request_timeout, idle_timeout, telemetry, errs.is_empty())
    else {
        return Err(errs);
    };

    Ok(Suite {
        name,
        description: raw.description,
        file: ctx.file.clone(),
        project_root: fx
            .root
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| fx.root.clone()),
        fixtures_root: fx.root,
        endpoint,
        model: raw.model,
        api_key_env: raw.api_key_env,
        capture_timeline: raw.capture_timeline.unwrap_or(false),
        seed: raw.seed.unwrap_or(0),
        engine: raw.engine.unwrap_or_default(),
        request_timeout,
        idle_timeout,
        max_event_bytes,
        extra_body: extra_body.unwrap_or_default(),
        tokenizer: tokenizer.unwrap_or_default(),
        telemetry,
        gates,
        overhead,
        tools,
        jobs,
        explicit: ctx.index.paths().map(str::to_string).collect(),
        flagged: Default::default(),
        text: ctx.text.clone(),
        api_key_env_span: ctx.index.value_span("api_key_env"),
    })
}

/// `[extra_body]` as a JSON object; a member the product writes itself and
/// never lets a suite replace (`model`, `messages`, `tools`, `stream`, `stream_options`)
/// is an error at its key.
fn extra_body(ctx: &Ctx, t: Option<&toml::Table>) -> R<serde_json::Map<String, serde_json::Value>> {
    const RESERVED: [&str; 5] = ["model", "messages", "tools", "stream", "stream_options"];
    let Some(t) = t else {
        return Ok(serde_json::Map::new());
    };
    if let Some(k) = t.keys().find(|k| RESERVED.contains(&k.as_str())) {
        return Err(ctx
            .at_key(
                &format!("extra_body.{k}"),
                K::InvalidValue,
                format!("`extra_body.{k}` would replace a member the runner writes itself"),
            )
            .with_hint(Some(format!(
                "`extra_body` adds fields the runner does not know; `{k}` comes from the suite \
                 and job keys"
            ))));
    }
    crate::json::table_to_json(t)
        .map_err(|m| ctx.at_value("extra_body", K::InvalidValue, format!("`extra_body`: {m}")))
}

/// The suite's name: `name` when set, else the file's stem; an invalid or too long one is
/// an error in `errs` (and still returned).
fn suite_name(ctx: &Ctx, name: Option<&str>, origin: &Path, errs: &mut Vec<SuiteError>) -> String {
    match name {
        Some(n) => {
            keep(
                errs,
                check_name(n)
                    .and_then(|()| check_suite_name_len(n))
                    .map_err(|m| ctx.at_value("name", K::InvalidValue, m)),
            );
            n.to_string()
        }
        None => {
            let stem = origin
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            keep(
                errs,
                check_name(&stem)
                    .and_then(|()| check_suite_name_len(&stem))
                    .map_err(|m| {
                        ctx.err(
                            0..0,
                            K::InvalidValue,
                            Some("name".into()),
                            format!("the suite is named after its file, and {m}"),
                        )
                        .with_hint(Some("set `name = \"...\"` at the top of the suite".into()))
                    }),
            );
            stem
        }
    }
}

/// The endpoint URL normalized (`None` when unset or invalid), with an error in `errs`
/// for an invalid endpoint, an empty `model` and an `api_key_env` that is not a variable
/// name.
fn check_endpoint_model_key(
    ctx: &Ctx,
    raw: &RawSuite,
    errs: &mut Vec<SuiteError>,
) -> Option<String> {
    let endpoint = match &raw.endpoint {
        None => None,
        Some(e) => match normalize_endpoint(e) {
            Ok(e) => Some(e),
            Err(m) => {
                errs.push(ctx.at_value("endpoint", K::InvalidValue, m));
                None
            }
        },
    };
    if let Some(m) = &raw.model
        && m.trim().is_empty()
    {
        errs.push(ctx.at_value("model", K::InvalidValue, "`model` is empty".into()));
    }
    if let Some(var) = &raw.api_key_env
        && !is_env_name(var)
    {
        // Never echo the value: it may be the key itself.
        errs.push(
            ctx.at_value(
                "api_key_env",
                K::InvalidValue,
                "`api_key_env` must be the NAME of an environment variable \
                 (letters, digits and `_`), not a key"
                    .into(),
            )
            .with_hint(Some(
                "for example `api_key_env = \"OPENAI_API_KEY\"`".into(),
            )),
        );
    }
    endpoint
}

/// Every `[[tools]]` entry validated: the valid tools, and whether any failed. A duplicate
/// name (found over every entry, valid or not) or a tool's first problem goes to `errs`.
fn validate_tools(
    ctx: &Ctx,
    fx: &Fixtures,
    raw_tools: Vec<RawTool>,
    errs: &mut Vec<SuiteError>,
) -> (Vec<ToolSpec>, bool) {
    let mut tools = Vec::new();
    let mut tool_names: Vec<String> = Vec::new();
    let mut failed_tools = false;
    for (i, t) in raw_tools.into_iter().enumerate() {
        let first = tool_names.iter().position(|n| *n == t.name);
        tool_names.push(t.name.clone());
        if let Some(first) = first {
            errs.push(duplicate(
                ctx,
                "tool",
                &t.name,
                &format!("tools[{i}].name"),
                &format!("tools[{first}].name"),
            ));
            continue;
        }
        match tool::tool(ctx, fx, i, t) {
            Ok(spec) => tools.push(spec),
            Err(e) => {
                errs.push(e);
                failed_tools = true;
            }
        }
    }
    (tools, failed_tools)
}

/// Every `[[jobs]]` entry of suite `suite` validated against `tools`: the valid jobs. A
/// duplicate name, a job's first problem (except a reference to a tool that failed, already
/// reported) or a suite without jobs goes to `errs`.
fn validate_jobs(
    ctx: &Ctx,
    fx: &Fixtures,
    tools: &[ToolSpec],
    suite: &str,
    raw_jobs: Vec<RawJob>,
    failed_tools: bool,
    errs: &mut Vec<SuiteError>,
) -> Vec<Job> {
    let mut jobs: Vec<Job> = Vec::new();
    let mut job_names: Vec<String> = Vec::new();
    let mut any_job = false;
    for (i, j) in raw_jobs.into_iter().enumerate() {
        any_job = true;
        let first = job_names.iter().position(|n| *n == j.name);
        job_names.push(j.name.clone());
        if let Some(first) = first {
            errs.push(duplicate(
                ctx,
                "job",
                &j.name,
                &format!("jobs[{i}].name"),
                &format!("jobs[{first}].name"),
            ));
            continue;
        }
        match job::job(ctx, fx, tools, suite, i, j) {
            Ok(job) => jobs.push(job),
            // A tool that failed is already reported; naming it again is noise.
            Err(e) if failed_tools && e.kind() == K::UnknownReference => {}
            Err(e) => errs.push(e),
        }
    }
    if !any_job {
        errs.push(ctx.at_key(
            "jobs",
            K::MissingField,
            "a suite needs at least one `[[jobs]]` table".into(),
        ));
    }
    jobs
}

/// `r`'s value, or `None` with its error kept in `errs`.
fn keep<T>(errs: &mut Vec<SuiteError>, r: R<T>) -> Option<T> {
    r.map_err(|e| errs.push(e)).ok()
}

fn duplicate(ctx: &Ctx, what: &str, name: &str, at: &str, first: &str) -> SuiteError {
    let line = ctx
        .index
        .value_span(first)
        .map(|s| location_in(&ctx.text, &ctx.lines, s).line);
    let msg = match line {
        Some(l) => format!("duplicate {what} name `{name}` (first declared on line {l})"),
        None => format!("duplicate {what} name `{name}`"),
    };
    ctx.at_value(at, K::Duplicate, msg)
}

/// An `http(s)://host...` base URL without a trailing slash. A URL holding `@` anywhere
/// is refused as one with credentials (a password may hold an unencoded `/`, `?` or `#`,
/// so the authority's end cannot be trusted), and the message shows it
/// with everything before its last `@` as `***`.
///
/// A query or fragment is refused too: request paths are appended to the base URL, so
/// `…/v1?api-key=K` would send `…/v1?api-key=K/models`, and a query often carries a key
/// (`?api-key=`, `?sig=`); messages never show one (`?…`).
pub fn normalize_endpoint(e: &str) -> Result<String, String> {
    let t = e.trim();
    if t.contains('@') {
        return Err(format!(
            "`{}`: credentials in the endpoint URL are not allowed; use `api_key_env` \
             (a `@` in a path is written `%40`)",
            crate::redact::url_shown(t)
        ));
    }
    if t.contains(['?', '#']) {
        return Err(format!(
            "`{}`: a query or fragment in the endpoint URL is not allowed: request paths \
             are appended to the base URL; pass a key with `api_key_env`",
            crate::redact::url_shown(t)
        ));
    }
    let rest = t
        .strip_prefix("http://")
        .or_else(|| t.strip_prefix("https://"))
        .ok_or_else(|| format!("`{t}` is not an http:// or https:// URL"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err(format!("`{t}` has no host"));
    }
    Ok(t.trim_end_matches('/').to_string())
}

fn telemetry(ctx: &Ctx, t: super::raw::RawTelemetry) -> R<Telemetry> {
    let period = |key: &str, v: Option<u64>, d: u64| -> R<u64> {
        match v.unwrap_or(d) {
            0 => Err(ctx.at_value(
                &format!("telemetry.{key}"),
                K::InvalidValue,
                format!("`telemetry.{key}` must be at least 1 ms"),
            )),
            p => Ok(p),
        }
    };
    if t.engine_pid == Some(0) {
        return Err(ctx.at_value(
            "telemetry.engine_pid",
            K::InvalidValue,
            "`telemetry.engine_pid` must be a process id (> 0)".into(),
        ));
    }
    let metrics_url = match t.metrics_url {
        None => None,
        Some(u) => Some(
            normalize_endpoint(&u)
                .map_err(|m| ctx.at_value("telemetry.metrics_url", K::InvalidValue, m))?,
        ),
    };
    let gpu = t.gpu.unwrap_or_default();
    let gpu_devices = match t.gpu_devices {
        None => None,
        Some(list) => Some(gpu_devices(ctx, gpu, &list)?),
    };
    let prometheus = match t.prometheus {
        None => None,
        Some(p) => Some(prometheus(ctx, p)?),
    };
    Ok(Telemetry {
        sample_period_ms: period(
            "sample_period_ms",
            t.sample_period_ms,
            DEFAULT_SAMPLE_PERIOD_MS,
        )?,
        metrics_period_ms: period(
            "metrics_period_ms",
            t.metrics_period_ms,
            DEFAULT_METRICS_PERIOD_MS,
        )?,
        metrics_url,
        metrics: t.metrics.unwrap_or(true),
        engine_pid: t.engine_pid,
        include_descendants: t.include_descendants.unwrap_or(false),
        gpu,
        gpu_devices,
        prometheus,
    })
}

/// `telemetry.gpu_devices`: NVML indices or `GPU-…` / `MIG-…` UUIDs, at least one.
fn gpu_devices(
    ctx: &Ctx,
    gpu: GpuMode,
    list: &[toml::Value],
) -> R<Vec<crate::telemetry::GpuSelector>> {
    use crate::telemetry::GpuSelector;
    const KEY: &str = "telemetry.gpu_devices";
    if gpu == GpuMode::Off {
        return Err(ctx
            .at_value(
                KEY,
                K::InvalidValue,
                "`telemetry.gpu_devices` selects GPUs, but `telemetry.gpu = \"off\"` samples none"
                    .into(),
            )
            .with_hint(Some("remove one of the two keys".into())));
    }
    if list.is_empty() {
        return Err(ctx
            .at_value(
                KEY,
                K::InvalidValue,
                "`telemetry.gpu_devices` is empty: it would select no GPU".into(),
            )
            .with_hint(Some(
                "remove the key to select every GPU (or those of CUDA_VISIBLE_DEVICES)".into(),
            )));
    }
    let mut out = Vec::new();
    for (i, v) in list.iter().enumerate() {
        let at = format!("{KEY}[{i}]");
        let sel = match v {
            toml::Value::Integer(n) => u32::try_from(*n).ok().map(GpuSelector::Index),
            toml::Value::String(u)
                if (u.starts_with("GPU-") || u.starts_with("MIG-"))
                    && u.len() > 4
                    && !u.contains(char::is_whitespace) =>
            {
                Some(GpuSelector::Uuid(u.clone()))
            }
            _ => None,
        };
        let Some(sel) = sel else {
            return Err(ctx
                .at_value(
                    &at,
                    K::InvalidValue,
                    format!(
                        "`{at}` must be an NVML device index (an integer ≥ 0) or a UUID \
                         (\"GPU-…\" or \"MIG-…\", as `nvidia-smi -L` prints them)"
                    ),
                )
                .with_hint(Some(
                    "for example `gpu_devices = [0, \"GPU-5f3a…\"]`".into(),
                )));
        };
        if out.contains(&sel) {
            return Err(ctx.at_value(&at, K::InvalidValue, format!("`{at}` repeats device {sel}")));
        }
        out.push(sel);
    }
    Ok(out)
}

/// `telemetry.prometheus = { url, selector, wait_s }`.
fn prometheus(ctx: &Ctx, p: super::raw::RawPrometheus) -> R<PrometheusSource> {
    const KEY: &str = "telemetry.prometheus";
    let Some(url) = p.url else {
        return Err(ctx
            .at_value(
                KEY,
                K::InvalidValue,
                "`telemetry.prometheus` needs `url`, the Prometheus server's base URL".into(),
            )
            .with_hint(Some(
                "for example `prometheus = { url = \"http://127.0.0.1:9090\", selector = '{job=\"vllm\"}' }`"
                    .into(),
            )));
    };
    let url = normalize_endpoint(&url).map_err(|m| {
        ctx.at_value(
            &format!("{KEY}.url"),
            K::InvalidValue,
            format!("`{KEY}.url`: {m}"),
        )
    })?;
    if url.contains("/api/") {
        return Err(ctx
            .at_value(
                &format!("{KEY}.url"),
                K::InvalidValue,
                format!("`{KEY}.url` is the server's base URL, not an API path"),
            )
            .with_hint(Some("drop the `/api/v1/...` part".into())));
    }
    let selector = p.selector.unwrap_or_default();
    crate::telemetry::prometheus::check_selector(&selector).map_err(|m| {
        ctx.at_value(
            &format!("{KEY}.selector"),
            K::InvalidValue,
            format!("`{KEY}.selector`: {m}"),
        )
    })?;
    let wait_s = p.wait_s.unwrap_or(DEFAULT_PROMETHEUS_WAIT_S);
    if !(wait_s.is_finite() && (0.0..=600.0).contains(&wait_s)) {
        return Err(ctx.at_value(
            &format!("{KEY}.wait_s"),
            K::InvalidValue,
            format!("`{KEY}.wait_s` must be between 0 and 600 seconds"),
        ));
    }
    Ok(PrometheusSource {
        url,
        selector: selector.trim().to_string(),
        wait_s,
    })
}
