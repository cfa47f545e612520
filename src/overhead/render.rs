//! Text output of the overhead command: the header, one brief line per run, the figure
//! table and the verdict with its reasons. Pure.

use crate::gate::format_number;
use crate::gate::spec::OverheadSpec;

use super::analysis::{GpuReading, OverheadOutcome, RunMeasure};
use super::{OverheadPlan, OverheadReport};

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "—".into(), |x| format!("{x:.decimals$}"))
}

fn mib(b: Option<u64>) -> String {
    b.map_or_else(|| "—".into(), |x| format!("{:.1}", x as f64 / 1048576.0))
}

fn gpu(g: &GpuReading) -> String {
    match g {
        GpuReading::Measured { bytes } => bytes.to_string(),
        GpuReading::Unavailable { .. } => "unavailable".into(),
    }
}

/// First line: suite, pairs, sink, endpoint.
pub(crate) fn header(plan: &OverheadPlan, budgets: &OverheadSpec) -> String {
    let sink = match plan.control {
        None => "timeline (real sink)".to_string(),
        Some(c) => format!("NEGATIVE CONTROL {}", c.as_str()),
    };
    format!(
        "Overhead of timeline capture: {} · {} pairs + 1 warm-up, interleaved off/on (A B · B A · …) · capture-on sink: {sink} · endpoint: {} · budget: workload effect ≤ {}%",
        plan.suite_names(),
        plan.pairs,
        if plan.simulated() {
            "simulated (built-in, in-process)"
        } else {
            "external"
        },
        format_number(budgets.max_workload_effect_pct),
    )
}

/// One line per finished run (progress).
pub(crate) fn run_brief(m: &RunMeasure) -> String {
    let what = if m.pair == 0 {
        "warm-up    ".to_string()
    } else {
        format!(
            "pair {:>2} {:<3}",
            m.pair,
            if m.capture { "on" } else { "off" }
        )
    };
    format!(
        "{what} {} req/s · e2e p50 {} ms · {}/{} jobs passed",
        opt(m.throughput_rps, 2),
        opt(m.e2e_p50_ms, 3),
        m.jobs_passed,
        m.jobs
    )
}

fn run_row(m: &RunMeasure) -> String {
    format!(
        "{:>4}  {:<7}  {:>10}  {:>10}  {:>8}  {:>7}  {:>7}  {:>8}  {:>11}  {:>11}  {:>6}  {}/{}",
        if m.pair == 0 {
            "w".to_string()
        } else {
            m.pair.to_string()
        },
        if m.capture { "on" } else { "off" },
        opt(m.throughput_rps, 3),
        opt(m.e2e_p50_ms, 3),
        format!("{:.1}", m.wall_ns as f64 / 1e6),
        opt(m.cpu_ns.map(|c| c as f64 / 1e6), 1),
        opt(m.cpu_pct(), 1),
        mib(m.peak_rss_bytes),
        m.window_write_bytes
            .map_or_else(|| "—".into(), |b| b.to_string()),
        gpu(&m.gpu),
        m.capture_events
            .map_or_else(|| "—".into(), |e| e.to_string()),
        m.jobs_passed,
        m.jobs,
    )
}

fn verdict_word(o: OverheadOutcome) -> &'static str {
    match o {
        OverheadOutcome::Pass => "PASS",
        OverheadOutcome::Fail => "FAIL",
        OverheadOutcome::Inconclusive => "INCONCLUSIVE",
        OverheadOutcome::Unavailable => "UNAVAILABLE",
    }
}

/// The run table, the pair effects, the gate table and the verdict with reasons; ends
/// with a newline.
pub fn render_text(r: &OverheadReport) -> String {
    let mut out = String::new();
    out.push_str(
        "pair  capture  requests/s  e2e p50 ms   wall ms   cpu ms   cpu %  rss MiB  window disk B    gpu bytes  events  jobs\n",
    );
    if let Some(w) = &r.warmup {
        out.push_str(&run_row(w));
        out.push_str("   (warm-up, not counted)\n");
    }
    for (a, b) in &r.pairs {
        out.push_str(&run_row(a));
        out.push('\n');
        out.push_str(&run_row(b));
        out.push('\n');
    }
    let ev = &r.evaluation;
    let effects = |v: &[Option<f64>]| v.iter().map(|e| opt(*e, 2)).collect::<Vec<_>>().join(", ");
    out.push_str(&format!(
        "pair effects (%): throughput drop [{}] · e2e rise, matched requests [{}]\n",
        effects(&ev.throughput.pair_effects_pct),
        effects(&ev.latency.pair_effects_pct)
    ));
    out.push_str(&format!(
        "null effects (%, consecutive runs of one configuration: A1→A2, B1→B2, …): throughput [{}] · e2e [{}]\n",
        effects(&ev.throughput.null_effects_pct),
        effects(&ev.latency.null_effects_pct)
    ));
    let noise = |e: &super::analysis::EffectEstimate| {
        format!(
            "pair half-range {} / null floor {}",
            opt(e.pair_half_range_pct, 2),
            opt(e.null_floor_pct, 2)
        )
    };
    out.push_str(&format!(
        "estimator: median of pair effects; noise = max(half-range (max − min)/2 of the pair effects, largest |null effect|) — throughput: {} · e2e: {}\n",
        noise(&ev.throughput),
        noise(&ev.latency)
    ));
    out.push_str(
        "\nfigure                        value          noise ±     budget         verdict\n",
    );
    for g in &ev.gates {
        let unit = |v: f64| {
            if g.unit == "%" {
                format!("{}%", format_number(v))
            } else {
                format!("{} {}", format_number(v), g.unit)
            }
        };
        out.push_str(&format!(
            "{:<28}  {:<13}  {:<10}  ≤ {:<12}  {}\n",
            g.figure,
            g.value.map_or_else(|| "unavailable".into(), unit),
            g.noise.map_or_else(|| "—".into(), unit),
            unit(g.bound),
            g.outcome.as_str(),
        ));
    }
    let control = r
        .negative_control
        .map(|c| format!(" (negative control {})", c.as_str()))
        .unwrap_or_default();
    out.push_str(&format!(
        "\nverdict: {}{control} — exit {}\n",
        verdict_word(ev.outcome),
        ev.exit_status()
    ));
    for g in &ev.gates {
        if g.outcome != OverheadOutcome::Pass {
            out.push_str(&format!(
                "  {} {}: {}\n",
                g.outcome.as_str(),
                g.figure,
                g.reason
            ));
        }
    }
    for w in &ev.warnings {
        out.push_str(&format!("  warning: {w}\n"));
    }
    if r.simulated {
        out.push_str(
            "  note: the endpoint is the built-in simulator in this process: CPU and RSS include it\n",
        );
    }
    out
}
