//! `[[jobs]]` validation: common settings, then the kind's own keys, then checks.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::super::ctx::Ctx;
use super::super::error::SuiteErrorKind as K;
use super::super::fields::did_you_mean;
use super::super::model::*;
use super::super::raw::{RawJob, RawScriptStep};
use super::checks::{R, check_job_id, check_name, gate_spec, is_env_name, seconds, unknown_tool};
use super::fixtures::{Fixtures, Want};
use crate::grade::{Check, CheckProblem, CheckTarget};
use crate::json::schema::validate_arguments;
use crate::json::{json_values_equal, table_to_json};
use crate::load_spec::{Arrival, LoadSpec, Stop, Sweep};

/// Validates job `i` of suite `suite` against the declared `tools`.
pub(super) fn job(
    ctx: &Ctx,
    fx: &Fixtures,
    tools: &[ToolSpec],
    suite: &str,
    i: usize,
    mut j: RawJob,
) -> R<Job> {
    let p = format!("jobs[{i}]");
    let id = format!("{suite}::{}", j.name);
    check_name(&j.name)
        .and_then(|()| check_job_id(&id, &j.name))
        .map_err(|m| ctx.at_value(&format!("{p}.name"), K::InvalidValue, m))?;
    let max_tokens = positive(ctx, &p, "max_tokens", j.max_tokens, DEFAULT_MAX_TOKENS)?;
    let repeat = positive(ctx, &p, "repeat", j.repeat, 1)?;
    let temperature = j.temperature.unwrap_or(0.0);
    if !(temperature.is_finite() && temperature >= 0.0) {
        return Err(ctx.at_value(
            &format!("{p}.temperature"),
            K::InvalidValue,
            "`temperature` must be a finite number ≥ 0".into(),
        ));
    }
    let n = match j.n {
        None => None,
        Some(0) => {
            return Err(ctx.at_value(
                &format!("{p}.n"),
                K::InvalidValue,
                "`n` (choices per request) must be at least 1".into(),
            ));
        }
        Some(v) if v > MAX_CHOICES => {
            return Err(ctx
                .at_value(
                    &format!("{p}.n"),
                    K::InvalidValue,
                    format!("`n` (choices per request) must be at most {MAX_CHOICES}, not {v}"),
                )
                .with_hint(Some(
                    "each choice is a full generation; for more samples raise `repeat`".into(),
                )));
        }
        Some(v) => Some(v),
    };
    let output_tokens = output_tokens(ctx, &p, &j)?;
    let kind = match j.kind {
        JobKindName::Agentic => JobKind::Agentic(agentic(ctx, tools, &p, &mut j)?),
        JobKindName::Context => JobKind::Context(context(ctx, fx, &p, &mut j)?),
        JobKindName::Swe => JobKind::Swe(swe(ctx, fx, &p, &mut j)?),
    };
    let checks = checks(ctx, &p, &kind, std::mem::take(&mut j.checks))?;
    let load = load(ctx, &p, &j, &kind, repeat)?;
    if load.is_some() && matches!(&kind, JobKind::Agentic(a) if a.replay.is_some()) {
        return Err(ctx.at_value(
            &format!("{p}.replay"),
            K::InvalidValue,
            "a replay job runs its recorded trajectory `repeat` times in sequence: load keys \
             (`concurrency`, `rate`, `count`, `duration_s`, `sweep`) are not supported"
                .into(),
        ));
    }
    let gates = j.gates.take().unwrap_or_default();
    gate_spec(
        ctx,
        &format!("{p}.gates"),
        &format!("the gates of job `{}`", j.name),
        &gates,
    )?;
    Ok(Job {
        id,
        name: j.name,
        index: i,
        description: j.description,
        max_tokens: output_tokens.unwrap_or(max_tokens),
        temperature,
        output_tokens,
        n,
        repeat,
        gates,
        checks,
        kind,
        load,
    })
}

/// The load keys of a job (see `crate::load`, the driver that runs them): `None` when none is set.
///
/// Rules: `concurrency` ≥ 1; `rate` finite > 0; `arrival` needs a rate (or a rate sweep);
/// one of `count` (≥ 1) or `duration_s` (> 0), and `count` not with `repeat`; a sweep sets
/// exactly one of `concurrency` / `rate`, with values valid as above, and not the key the
/// job also sets; a context job's `warmup` must leave at least one request of `count`.
/// Default stop: `count = repeat` trajectories (agentic) or `len(sizes) × repeat` requests
/// (context).
fn load(ctx: &Ctx, p: &str, j: &RawJob, kind: &JobKind, repeat: u32) -> R<Option<LoadSpec>> {
    let any = j.concurrency.is_some()
        || j.rate.is_some()
        || j.arrival.is_some()
        || j.duration_s.is_some()
        || j.count.is_some()
        || j.warmup.is_some()
        || j.aggregation.is_some()
        || j.sweep.is_some()
        || timed(kind);
    if !any {
        return Ok(None);
    }
    let at = |k: &str| format!("{p}.{k}");
    let invalid = |k: &str, m: String| ctx.at_value(&at(k), K::InvalidValue, m);
    if j.concurrency == Some(0) {
        return Err(invalid(
            "concurrency",
            "`concurrency` must be at least 1".into(),
        ));
    }
    if let Some(r) = j.rate
        && !(r.is_finite() && r > 0.0)
    {
        return Err(invalid(
            "rate",
            "`rate` must be a positive number of arrivals per second".into(),
        ));
    }
    let sweep = load_sweep(ctx, p, j)?;
    let open = j.rate.is_some() || matches!(sweep, Some(Sweep::Rate(_)));
    if j.arrival.is_some_and(|a| a != Arrival::Trace) && !open {
        return Err(ctx
            .at_value(
                &at("arrival"),
                K::InvalidValue,
                "`arrival` shapes an open loop and needs `rate`".into(),
            )
            .with_hint(Some(
                "add `rate = R` (arrivals per second), or drop `arrival` for a closed loop".into(),
            )));
    }
    if j.arrival == Some(Arrival::Trace) && !timed(kind) {
        return Err(invalid(
            "arrival",
            "`arrival = \"trace\"` replays a dataset's timestamps: set `dataset.time_scale`".into(),
        ));
    }
    if open && timed(kind) {
        return Err(invalid(
            if j.rate.is_some() {
                "rate"
            } else {
                "sweep.rate"
            },
            "the dataset's `time_scale` gives the arrivals: a rate would be a second schedule"
                .into(),
        ));
    }
    let stop = load_stop(ctx, p, j, kind, repeat)?;
    let warmup = j.warmup.unwrap_or(0);
    if let (JobKind::Context(_), Stop::Count(n)) = (kind, stop)
        && warmup >= n
    {
        return Err(invalid(
            "warmup",
            format!("`warmup = {warmup}` would exclude every one of the {n} requests per point"),
        ));
    }
    Ok(Some(LoadSpec {
        concurrency: j.concurrency,
        rate: j.rate,
        arrival: if timed(kind) {
            Arrival::Trace
        } else {
            j.arrival.unwrap_or_default()
        },
        stop,
        warmup,
        sweep,
        aggregation: j.aggregation.unwrap_or_default(),
    }))
}

/// A load job's `sweep`: one of `concurrency` or `rate`, not empty, every value valid, and
/// not a key the job also sets itself.
fn load_sweep(ctx: &Ctx, p: &str, j: &RawJob) -> R<Option<Sweep>> {
    let at = |k: &str| format!("{p}.{k}");
    let invalid = |k: &str, m: String| ctx.at_value(&at(k), K::InvalidValue, m);
    // One swept key's checks, in order: the sweep is not empty, every value is valid (the
    // first bad one is named by position), and the job does not also set the key itself.
    let sweep_checks =
        |key: &str, empty: bool, bad_at: Option<usize>, why: &str, also_set: bool| -> R<()> {
            if empty {
                return Err(invalid(
                    &format!("sweep.{key}"),
                    "the sweep is empty".into(),
                ));
            }
            if let Some(k) = bad_at {
                return Err(invalid(&format!("sweep.{key}[{k}]"), why.into()));
            }
            if also_set {
                return Err(invalid(
                    key,
                    format!("`{key}` is set by `sweep.{key}` at each point"),
                ));
            }
            Ok(())
        };
    Ok(match &j.sweep {
        None => None,
        Some(sw) => Some(match (&sw.concurrency, &sw.rate) {
            (Some(_), Some(_)) => {
                return Err(ctx
                    .at_value(
                        &at("sweep"),
                        K::InvalidValue,
                        "a sweep varies one thing: `concurrency` or `rate`, not both".into(),
                    )
                    .with_hint(Some("split it into two jobs".into())));
            }
            (None, None) => {
                return Err(ctx
                    .at_value(
                        &at("sweep"),
                        K::MissingField,
                        "`sweep` names no values".into(),
                    )
                    .with_hint(Some(
                        "for example `sweep = { concurrency = [1, 4, 16] }`".into(),
                    )));
            }
            (Some(c), None) => {
                sweep_checks(
                    "concurrency",
                    c.is_empty(),
                    c.iter().position(|&v| v == 0),
                    "a concurrency must be at least 1",
                    j.concurrency.is_some(),
                )?;
                Sweep::Concurrency(c.clone())
            }
            (None, Some(r)) => {
                sweep_checks(
                    "rate",
                    r.is_empty(),
                    r.iter().position(|&v| !(v.is_finite() && v > 0.0)),
                    "a rate must be a positive number of arrivals per second",
                    j.rate.is_some(),
                )?;
                Sweep::Rate(r.clone())
            }
        }),
    })
}

/// When a load point stops: after `count` units (not with `repeat`) or `duration_s`
/// seconds, not both; by default `repeat` trajectories or the context job's units × `repeat`.
fn load_stop(ctx: &Ctx, p: &str, j: &RawJob, kind: &JobKind, repeat: u32) -> R<Stop> {
    let at = |k: &str| format!("{p}.{k}");
    let invalid = |k: &str, m: String| ctx.at_value(&at(k), K::InvalidValue, m);
    Ok(match (j.count, j.duration_s) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "duration_s",
                "`count` and `duration_s` are both set: a load point stops on one".into(),
            ));
        }
        (Some(0), None) => return Err(invalid("count", "`count` must be at least 1".into())),
        (Some(n), None) => {
            if j.repeat.is_some() {
                return Err(ctx
                    .at_value(
                        &at("count"),
                        K::InvalidValue,
                        "`count` and `repeat` are both set".into(),
                    )
                    .with_hint(Some(
                        "under load, `count` is the number of units per point; drop `repeat`"
                            .into(),
                    )));
            }
            Stop::Count(n)
        }
        (None, Some(d)) => match std::time::Duration::try_from_secs_f64(d) {
            Ok(x) if d > 0.0 => Stop::Duration(u64::try_from(x.as_nanos()).unwrap_or(u64::MAX)),
            _ => {
                return Err(invalid(
                    "duration_s",
                    "`duration_s` must be a positive number of seconds".into(),
                ));
            }
        },
        (None, None) => Stop::Count(match kind {
            JobKind::Context(c) => c.units_per_repeat() as u64 * u64::from(repeat),
            _ => u64::from(repeat),
        }),
    })
}

/// A context job whose dataset replays recorded timestamps (`time_scale`): an open loop.
fn timed(kind: &JobKind) -> bool {
    matches!(kind, JobKind::Context(c) if c.dataset.as_ref().is_some_and(|d| d.time_scale.is_some()))
}

/// `value` or the default, which must be at least 1.
/// `output_tokens`: ≥ 1, and not beside `max_tokens` (it sets `max_tokens`).
fn output_tokens(ctx: &Ctx, p: &str, j: &RawJob) -> R<Option<u32>> {
    let Some(n) = j.output_tokens else {
        return Ok(None);
    };
    if n == 0 {
        return Err(ctx.at_value(
            &format!("{p}.output_tokens"),
            K::InvalidValue,
            "`output_tokens` must be at least 1".into(),
        ));
    }
    if j.max_tokens.is_some() {
        return Err(ctx
            .at_value(
                &format!("{p}.output_tokens"),
                K::InvalidValue,
                "`output_tokens` and `max_tokens` are both set".into(),
            )
            .with_hint(Some(
                "`output_tokens = N` sends `max_tokens = N` itself; remove `max_tokens`".into(),
            )));
    }
    Ok(Some(n))
}

fn positive(ctx: &Ctx, p: &str, key: &str, value: Option<u32>, default: u32) -> R<u32> {
    match value.unwrap_or(default) {
        0 => Err(ctx.at_value(
            &format!("{p}.{key}"),
            K::InvalidValue,
            format!("`{key}` must be at least 1"),
        )),
        n => Ok(n),
    }
}

fn missing(ctx: &Ctx, p: &str, message: String, hint: &str) -> super::super::SuiteError {
    ctx.at_key(p, K::MissingField, message)
        .with_hint(Some(hint.to_string()))
}

fn agentic(ctx: &Ctx, tools: &[ToolSpec], p: &str, j: &mut RawJob) -> R<AgenticJob> {
    let Some(mode) = j.mode else {
        return Err(missing(
            ctx,
            p,
            format!("agentic job `{}` has no `mode`", j.name),
            "add `mode = \"model\"`, `mode = \"scripted\"` or `mode = \"replay\"`",
        ));
    };
    let replay = replay(ctx, p, mode, j)?;
    let Some(task) = j.task.take().or_else(|| replay.is_some().then(String::new)) else {
        return Err(missing(
            ctx,
            p,
            format!("agentic job `{}` has no `task`", j.name),
            "`task` is the user message that starts the trajectory",
        ));
    };
    let job_tools = j.tools.take().unwrap_or_default();
    for (k, t) in job_tools.iter().enumerate() {
        let at = format!("{p}.tools[{k}]");
        if !tools.iter().any(|d| &d.name == t) {
            return Err(unknown_tool(ctx, &at, t, tools));
        }
        if job_tools[..k].contains(t) {
            return Err(ctx.at_value(&at, K::Duplicate, format!("tool `{t}` is listed twice")));
        }
    }
    let max_steps = positive(ctx, p, "max_steps", j.max_steps, DEFAULT_MAX_STEPS)?;
    let max_repeated_tool_calls = j
        .max_repeated_tool_calls
        .unwrap_or(DEFAULT_MAX_REPEATED_TOOL_CALLS);
    if max_repeated_tool_calls < 2 {
        return Err(ctx.at_value(
            &format!("{p}.max_repeated_tool_calls"),
            K::InvalidValue,
            "`max_repeated_tool_calls` must be at least 2 (it counts identical consecutive \
             calls)"
                .into(),
        ));
    }
    let tool_choice = tool_choice(ctx, p, mode, &job_tools, j.tool_choice.take())?;
    let script = match (mode, j.script.take()) {
        (AgenticMode::Model, Some(_)) => {
            return Err(ctx
                .at_key(
                    &format!("{p}.script"),
                    K::WrongKindField,
                    format!("`script` on job `{}`, which is not scripted", j.name),
                )
                .with_hint(Some("`[[jobs.script]]` needs `mode = \"scripted\"`".into())));
        }
        (AgenticMode::Replay, Some(_)) => {
            return Err(ctx.at_key(
                &format!("{p}.script"),
                K::WrongKindField,
                format!(
                    "`script` on job `{}`, which replays a recorded trajectory",
                    j.name
                ),
            ));
        }
        (AgenticMode::Model | AgenticMode::Replay, None) => Vec::new(),
        (AgenticMode::Scripted, None) => {
            return Err(missing(
                ctx,
                p,
                format!("scripted job `{}` has no `[[jobs.script]]` steps", j.name),
                "add one `[[jobs.script]]` table per tool call, with `tool` and `arguments`",
            ));
        }
        (AgenticMode::Scripted, Some(steps)) => {
            let out = script(ctx, tools, &job_tools, p, &j.name, steps)?;
            let calls = out.len() + 1;
            if let Some(ms) = j.max_steps
                && (ms as usize) < calls
            {
                return Err(ctx.at_value(
                    &format!("{p}.max_steps"),
                    K::InvalidValue,
                    format!(
                        "this scripted job makes {calls} LLM calls ({} script steps and the \
                         final answer), more than `max_steps = {ms}`",
                        out.len()
                    ),
                ));
            }
            out
        }
    };
    Ok(AgenticJob {
        mode,
        system: j.system.take(),
        task,
        tools: job_tools,
        max_steps,
        max_repeated_tool_calls,
        tool_choice,
        script,
        replay,
    })
}

/// `replay = { run, trajectory }`: required by `mode = "replay"` and refused by the other
/// modes; the run directory (relative to the suite file's directory) is read here, so a
/// directory that is not a run, or a trajectory without usage, stops the suite before
/// any request.
fn replay(ctx: &Ctx, p: &str, mode: AgenticMode, j: &mut RawJob) -> R<Option<ReplaySource>> {
    let at = format!("{p}.replay");
    let r = match (mode, j.replay.take()) {
        (AgenticMode::Replay, Some(r)) => r,
        (AgenticMode::Replay, None) => {
            return Err(missing(
                ctx,
                p,
                format!("replay job `{}` has no `replay`", j.name),
                "add `replay = { run = \"RUN_DIR\", trajectory = \"suite::job#0\" }`",
            ));
        }
        (_, None) => return Ok(None),
        (_, Some(_)) => {
            return Err(ctx
                .at_key(
                    &at,
                    K::WrongKindField,
                    format!("`replay` on job `{}`", j.name),
                )
                .with_hint(Some("`replay` needs `mode = \"replay\"`".into())));
        }
    };
    let base = ctx.file.parent().unwrap_or(Path::new("."));
    let run = base.join(&r.run);
    let shape = crate::replay::read_shape(&run, &r.trajectory)
        .map_err(|m| ctx.at_value(&format!("{at}.run"), K::InvalidValue, m))?;
    Ok(Some(ReplaySource {
        run,
        shape: std::sync::Arc::new(shape),
    }))
}

/// The steps of a scripted job: each tool declared, offered by the job, and called with
/// arguments that fit its parameters and, for a `[[tools.responses]]` tool without a
/// default, equal one entry's `when` (parsed-JSON equality, as at run time).
fn script(
    ctx: &Ctx,
    tools: &[ToolSpec],
    job_tools: &[String],
    p: &str,
    name: &str,
    steps: Vec<RawScriptStep>,
) -> R<Vec<ScriptStep>> {
    if steps.is_empty() {
        return Err(ctx.at_value(
            &format!("{p}.script"),
            K::MissingField,
            format!("scripted job `{name}` has an empty script"),
        ));
    }
    let mut out = Vec::with_capacity(steps.len());
    for (k, s) in steps.into_iter().enumerate() {
        let sp = format!("{p}.script[{k}]");
        let Some(spec) = tools.iter().find(|d| d.name == s.tool) else {
            return Err(unknown_tool(ctx, &format!("{sp}.tool"), &s.tool, tools));
        };
        if !job_tools.contains(&s.tool) {
            return Err(ctx
                .at_value(
                    &format!("{sp}.tool"),
                    K::UnknownReference,
                    format!(
                        "script step calls `{}`, which is not in this job's `tools`",
                        s.tool
                    ),
                )
                .with_hint(Some(format!("add `\"{}\"` to `tools`", s.tool))));
        }
        let at = format!("{sp}.arguments");
        let arguments = Value::Object(
            table_to_json(&s.arguments).map_err(|m| ctx.at_value(&at, K::InvalidValue, m))?,
        );
        validate_arguments(&spec.parameters, &arguments).map_err(|m| {
            ctx.at_value(
                &at,
                K::InvalidValue,
                format!("arguments do not fit tool `{}`: {m}", s.tool),
            )
        })?;
        if let ToolSource::Table {
            responses,
            default: None,
        } = &spec.source
            && !responses
                .iter()
                .any(|r| json_values_equal(&r.when, &arguments))
        {
            // A script is fixed, so this step would fail with `no_matching_response` on
            // every run; model-driven calls are matched only at run time.
            return Err(ctx
                .at_value(
                    &at,
                    K::InvalidValue,
                    format!(
                        "no `[[tools.responses]]` entry of tool `{}` has `when` equal to these \
                         arguments, and the tool has no default: the step would always fail",
                        s.tool
                    ),
                )
                .with_hint(Some(
                    "use the arguments of one of the tool's `when` tables, add an entry for \
                     these, or give the tool `default_text` / `default_file`"
                        .into(),
                )));
        }
        out.push(ScriptStep {
            tool: s.tool,
            arguments,
        });
    }
    Ok(out)
}

fn context(ctx: &Ctx, fx: &Fixtures, p: &str, j: &mut RawJob) -> R<ContextJob> {
    if let Some(d) = j.dataset.take() {
        if j.sizes.is_some() {
            return Err(ctx.at_value(
                &format!("{p}.sizes"),
                K::InvalidValue,
                "`sizes` and `dataset` are both set: a dataset gives the prompts".into(),
            ));
        }
        return Ok(ContextJob {
            sizes: Vec::new(),
            shared_prefix: j.shared_prefix.unwrap_or(false),
            filler: None,
            dataset: Some(dataset(ctx, fx, p, d)?),
        });
    }
    let Some(sizes) = j.sizes.take() else {
        return Err(missing(
            ctx,
            p,
            format!("context job `{}` has no `sizes`", j.name),
            "for example `sizes = [256, 1024, 4096]` (approximate tokens)",
        ));
    };
    if sizes.is_empty() {
        return Err(ctx.at_value(
            &format!("{p}.sizes"),
            K::InvalidValue,
            "`sizes` is empty".into(),
        ));
    }
    if let Some(k) = sizes.iter().position(|s| *s == 0) {
        return Err(ctx.at_value(
            &format!("{p}.sizes[{k}]"),
            K::InvalidValue,
            "a prompt size must be at least 1 token".into(),
        ));
    }
    // The filler is built in memory (4 bytes per token): an unbounded size is an
    // allocation failure and an abort at run time, not a benchmark.
    // Read as u64 so a size past u32 gets this message, not a type error.
    if let Some(k) = sizes.iter().position(|s| *s > u64::from(MAX_PROMPT_TOKENS)) {
        return Err(ctx.at_value(
            &format!("{p}.sizes[{k}]"),
            K::InvalidValue,
            format!("a prompt size must be at most {MAX_PROMPT_TOKENS} tokens"),
        ));
    }
    let sizes: Vec<u32> = sizes
        .into_iter()
        .map(|s| u32::try_from(s).unwrap_or(MAX_PROMPT_TOKENS))
        .collect();
    let filler = match &j.filler {
        None => None,
        Some(f) => Some(fx.path(ctx, &format!("{p}.filler"), f, Want::File)?),
    };
    Ok(ContextJob {
        sizes,
        shared_prefix: j.shared_prefix.unwrap_or(false),
        filler,
        dataset: None,
    })
}

/// `dataset`: the file under the fixtures root, read (bounded) and parsed now,
/// so a bad line is a located error before any request.
fn dataset(ctx: &Ctx, fx: &Fixtures, p: &str, d: super::super::raw::RawDataset) -> R<Dataset> {
    let path = fx.path(ctx, &format!("{p}.dataset.path"), &d.path, Want::File)?;
    let block_tokens = d.block_tokens.unwrap_or(u64::from(DEFAULT_BLOCK_TOKENS));
    if block_tokens == 0 {
        return Err(ctx.at_value(
            &format!("{p}.dataset.block_tokens"),
            K::InvalidValue,
            "`block_tokens` must be at least 1".into(),
        ));
    }
    // A block is synthesized in memory, as a prompt is: the prompt sizes' cap.
    let Some(block_tokens) = u32::try_from(block_tokens)
        .ok()
        .filter(|b| *b <= MAX_PROMPT_TOKENS)
    else {
        return Err(ctx.at_value(
            &format!("{p}.dataset.block_tokens"),
            K::InvalidValue,
            format!("`block_tokens` must be at most {MAX_PROMPT_TOKENS} tokens"),
        ));
    };
    let length_scale = d.length_scale.unwrap_or(1.0);
    if !(length_scale.is_finite() && length_scale > 0.0) {
        return Err(ctx.at_value(
            &format!("{p}.dataset.length_scale"),
            K::InvalidValue,
            "`length_scale` must be a number > 0".into(),
        ));
    }
    let template_bytes = d.template_bytes.unwrap_or([0, 0]);
    let block_bytes = 4.0 * (f64::from(block_tokens) * length_scale).round().max(1.0);
    if f64::from(template_bytes[0]) >= block_bytes || f64::from(template_bytes[1]) > block_bytes {
        return Err(ctx.at_value(
            &format!("{p}.dataset.template_bytes"),
            K::InvalidValue,
            format!(
                "the template's head must be shorter than a block ({block_bytes} bytes) and its \
                 tail at most one"
            ),
        ));
    }
    let time_scale = time_scale(ctx, p, &d)?;
    if d.turns.is_some() && d.format != crate::dataset::DatasetFormat::Sharegpt {
        return Err(ctx.at_value(
            &format!("{p}.dataset.turns"),
            K::InvalidValue,
            "`turns` is for a ShareGPT file (`format = \"sharegpt\"`)".into(),
        ));
    }
    let turns = d.turns.unwrap_or_default();
    let bad = |m: String| ctx.at_value(&format!("{p}.dataset.path"), K::InvalidValue, m);
    let bytes = crate::fsio::read(&path, MAX_DATASET_BYTES)
        .map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let file = path.display().to_string();
    let entries =
        crate::dataset::parse_turns(&bytes, d.format, &file, u64::from(block_tokens), turns)
            .map_err(|m| bad(format!("dataset {m}")))?;
    let dataset = Dataset {
        path,
        format: d.format,
        block_tokens,
        length_scale,
        template_bytes,
        time_scale,
        turns,
        entries: std::sync::Arc::new(entries),
    };
    dataset
        .check_lengths(&file)
        .map_err(|m| bad(format!("dataset {m}")))?;
    Ok(dataset)
}

/// `dataset.time_scale`: a number > 0, for a Mooncake trace (the format with timestamps).
fn time_scale(ctx: &Ctx, p: &str, d: &super::super::raw::RawDataset) -> R<Option<f64>> {
    let Some(t) = d.time_scale else {
        return Ok(None);
    };
    let why = if !(t.is_finite() && t > 0.0) {
        "`time_scale` must be a number > 0"
    } else if d.format != crate::dataset::DatasetFormat::Mooncake {
        "`time_scale` replays recorded timestamps: only a `mooncake` trace has them"
    } else {
        return Ok(Some(t));
    };
    Err(ctx.at_value(
        &format!("{p}.dataset.time_scale"),
        K::InvalidValue,
        why.into(),
    ))
}

fn swe(ctx: &Ctx, fx: &Fixtures, p: &str, j: &mut RawJob) -> R<SweJob> {
    let Some(command) = j.command.take() else {
        return Err(missing(
            ctx,
            p,
            format!("swe job `{}` has no `command`", j.name),
            "for example `command = [\"bash\", \"swe/harness.sh\"]`",
        ));
    };
    if command.first().is_none_or(|c| c.trim().is_empty()) {
        return Err(ctx.at_value(
            &format!("{p}.command"),
            K::InvalidValue,
            "`command` needs a program as its first element".into(),
        ));
    }
    let timeout = seconds(
        ctx,
        &format!("{p}.timeout_s"),
        j.timeout_s,
        DEFAULT_SWE_TIMEOUT_S,
    )?;
    let env: BTreeMap<String, String> = j.env.take().unwrap_or_default();
    for k in env.keys() {
        let at = super::super::doc::join(&format!("{p}.env"), k);
        if !is_env_name(k) {
            return Err(ctx.at_key(
                &at,
                K::InvalidValue,
                format!("`{k}` is not a valid environment variable name"),
            ));
        }
        if RESERVED_SWE_ENV.contains(&k.as_str()) {
            return Err(ctx.at_key(
                &at,
                K::InvalidValue,
                format!("`{k}` is set by the runner and cannot be overridden"),
            ));
        }
    }
    let cwd = fx
        .root
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| fx.root.clone());
    Ok(SweJob {
        command,
        cwd,
        timeout,
        env,
    })
}

/// Compiles the checks and checks they can apply to this kind of job.
fn checks(ctx: &Ctx, p: &str, kind: &JobKind, raw: Vec<crate::grade::RawCheck>) -> R<Vec<Check>> {
    let mut out = Vec::with_capacity(raw.len());
    for (k, raw) in raw.into_iter().enumerate() {
        let cp = format!("{p}.checks[{k}]");
        let check = Check::try_from(raw).map_err(|e| match e.problem {
            CheckProblem::Missing => ctx.at_key(&cp, K::MissingField, e.message),
            CheckProblem::NotApplicable => {
                ctx.at_key(&format!("{cp}.{}", e.field), K::WrongKindField, e.message)
            }
            CheckProblem::Invalid => {
                ctx.at_value(&format!("{cp}.{}", e.field), K::InvalidValue, e.message)
            }
        })?;
        let is_swe = matches!(kind, JobKind::Swe(_));
        match check.target() {
            Some(CheckTarget::Stdout) if !is_swe => {
                return Err(ctx.at_value(
                    &format!("{cp}.target"),
                    K::InvalidValue,
                    "`target = \"stdout\"` only applies to swe jobs".into(),
                ));
            }
            Some(CheckTarget::FinalAnswer) if is_swe => {
                return Err(ctx
                    .at_key(
                        &cp,
                        K::InvalidValue,
                        "a swe job has no final answer to check".into(),
                    )
                    .with_hint(Some(
                        "set `target = \"stdout\"` to check the harness's output".into(),
                    )));
            }
            _ => {}
        }
        if let Check::ToolCalled { tool, .. } = &check {
            match kind {
                JobKind::Context(_) => {
                    return Err(ctx.at_key(
                        &cp,
                        K::InvalidValue,
                        "a context job calls no tools: `tool_called` cannot pass".into(),
                    ));
                }
                JobKind::Agentic(a) if !a.tools.contains(tool) => {
                    return Err(ctx
                        .at_value(
                            &format!("{cp}.tool"),
                            K::UnknownReference,
                            format!("`tool_called` names `{tool}`, which this job does not offer"),
                        )
                        .with_hint(
                            did_you_mean(tool, a.tools.iter().map(String::as_str))
                                .map(|s| format!("did you mean `{s}`?")),
                        ));
                }
                // A SWE harness's tools are its own (step markers), not `[[tools]]`.
                _ => {}
            }
        }
        out.push(check);
    }
    Ok(out)
}

/// `tool_choice = "required"` or `["required", "auto"]` (model mode, with tools).
fn tool_choice(
    ctx: &Ctx,
    p: &str,
    mode: AgenticMode,
    job_tools: &[String],
    v: Option<toml::Value>,
) -> R<Vec<String>> {
    const CHOICES: [&str; 3] = ["auto", "none", "required"];
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let at = format!("{p}.tool_choice");
    if mode != AgenticMode::Model {
        return Err(ctx
            .at_key(
                &at,
                K::WrongKindField,
                "`tool_choice` is for `mode = \"model\"`: a scripted job replaces the model's turns"
                    .into(),
            )
            .with_hint(Some("remove `tool_choice`".into())));
    }
    if job_tools.is_empty() {
        return Err(ctx.at_key(
            &at,
            K::InvalidValue,
            "`tool_choice` needs `tools`: the job offers the model no tool".into(),
        ));
    }
    let items: Vec<(String, Option<&str>)> = match &v {
        toml::Value::String(s) => vec![(at.clone(), Some(s.as_str()))],
        toml::Value::Array(a) if !a.is_empty() => a
            .iter()
            .enumerate()
            .map(|(k, e)| (format!("{at}[{k}]"), e.as_str()))
            .collect(),
        _ => {
            return Err(ctx.at_value(
                &at,
                K::InvalidValue,
                "`tool_choice` must be \"auto\", \"none\", \"required\", or a non-empty list of \
                 them (one per LLM call, the last repeating)"
                    .into(),
            ));
        }
    };
    let mut out = Vec::new();
    for (path, s) in items {
        match s {
            Some(c) if CHOICES.contains(&c) => out.push(c.to_string()),
            _ => {
                return Err(ctx
                    .at_value(
                        &path,
                        K::InvalidValue,
                        format!("`{path}` must be one of \"auto\", \"none\", \"required\""),
                    )
                    .with_hint(did_you_mean_choice(s)));
            }
        }
    }
    Ok(out)
}

fn did_you_mean_choice(s: Option<&str>) -> Option<String> {
    crate::fields::did_you_mean(s?, ["auto", "none", "required"])
        .map(|c| format!("did you mean `{c}`?"))
}
