//! `report RUN_DIR [--format F] [--output FILE] [--otlp-endpoint URL]`: renders a saved
//! run (Markdown, JUnit, its report.json, OTLP, the HTML page, a Perfetto trace).

use std::path::Path;

use super::run_dir::{load_report, load_report_with_requests};
use crate::cli::ReportFormat;
use crate::model::RunReport;
use crate::model::exit::ExitCode;
use crate::render;
use crate::telemetry::TelemetryRun;
use crate::timeline::{CounterTrack, TraceMeta};

/// `report RUN_DIR [--format F] [--output FILE] [--otlp-endpoint URL [--otlp-protocol P]]`:
/// reads the run once, renders it, then (when the render succeeded and a URL is given)
/// sends its spans in that encoding. Exit 0; 1 when the collector refused or could not be
/// reached (or JUnit rendering failed); 2 when the run is unreadable or the output cannot
/// be written.
pub async fn command(
    run_dir: &Path,
    format: ReportFormat,
    output: Option<&Path>,
    otlp: Option<(&str, crate::otlp::Encoding)>,
) -> i32 {
    // JUnit (an endpoint that was never reached: every request failed to connect) and
    // Perfetto (each request's TTFT slice) read the per-request records; the other formats
    // need only report.json's summaries.
    let loaded = match format {
        ReportFormat::Perfetto => load_report_with_requests(run_dir),
        _ => load_report(run_dir),
    };
    let rep = match loaded {
        Ok(r) => r,
        Err(code) => return code,
    };
    match (report(&rep, run_dir, format, output), otlp) {
        (ExitCode::OK, Some((url, encoding))) => {
            if crate::otlp::send_report(&rep, url, encoding).await {
                ExitCode::OK
            } else {
                ExitCode::ERROR
            }
        }
        (code, _) => code,
    }
}

fn report(rep: &RunReport, run_dir: &Path, format: ReportFormat, output: Option<&Path>) -> i32 {
    let text = match format {
        ReportFormat::Markdown => render::markdown_summary(
            &rep.jobs,
            &rep.summary,
            &crate::runner::report::endpoint_label(rep),
        ),
        // JUnit counts each job's records as they are streamed: a run of any
        // size renders without holding them.
        ReportFormat::Junit => {
            let counts = match junit_counts(rep, run_dir) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::BAD_INPUT;
                }
            };
            match render::junit_xml_with(rep, &counts) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::ERROR;
                }
            }
        }
        // Byte-for-byte the `report.json` the run wrote (the typed model round-trips).
        ReportFormat::Json => String::from_utf8(rep.to_json()).unwrap_or_default(),
        ReportFormat::OtlpJson => crate::otlp::to_json(&crate::otlp::export(rep)),
        ReportFormat::OtlpProtobuf => {
            return write_output(output, &crate::otlp::to_protobuf(&crate::otlp::export(rep)));
        }
        ReportFormat::Html => {
            let (page, integrity_error) = crate::serve::html::report_html(run_dir);
            if integrity_error {
                eprintln!(
                    "warning: {}: the timeline failed verification; the page shows the error",
                    run_dir.display()
                );
            }
            page
        }
        ReportFormat::Perfetto if rep.merge.is_some() => match merged_perfetto(run_dir, rep) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::BAD_INPUT;
            }
        },
        ReportFormat::Perfetto => match perfetto(run_dir, rep) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::BAD_INPUT;
            }
        },
    };
    let mut text = text.into_bytes();
    if output.is_none() {
        text.push(b'\n');
    }
    write_output(output, &text)
}

/// Writes a rendered report to `output` (printing `wrote PATH`), else to standard output
/// as it is. Exit 0, or 2 when it cannot be written.
/// Each job's record counts for JUnit, streamed from `requests.jsonl` (checked as every
/// reader checks it: a damaged file is refused with its located error).
fn junit_counts(rep: &RunReport, run_dir: &Path) -> Result<Vec<render::RequestCounts>, String> {
    let mut counts = vec![render::RequestCounts::default(); rep.jobs.len()];
    crate::records::visit(run_dir, rep, |j, line| {
        if let (Some(c), crate::records::Line::Request(r)) = (counts.get_mut(j), line) {
            c.add(&r);
        }
    })?;
    Ok(counts)
}

fn write_output(output: Option<&Path>, bytes: &[u8]) -> i32 {
    use std::io::Write;
    match output {
        Some(p) => match std::fs::write(p, bytes) {
            Ok(()) => {
                println!("wrote {}", p.display());
                ExitCode::OK
            }
            Err(e) => {
                eprintln!("error: {}: {e}", p.display());
                ExitCode::BAD_INPUT
            }
        },
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::OK,
                Err(e) => {
                    eprintln!("error: standard output: {e}");
                    ExitCode::BAD_INPUT
                }
            }
        }
    }
}

/// The counter tracks of a run's samples: one per resource lane the dashboard draws
/// (the same [`crate::serve::view::lane_quantities`] and points), named `LABEL (UNIT)` as
/// the lane is; never summed across devices or sources.
pub fn counter_tracks(t: &TelemetryRun) -> Vec<CounterTrack> {
    use crate::serve::view::{LaneSamples, lane_label, lane_points, lane_quantities};
    let samples = LaneSamples {
        power: t.power.as_ref().map_or(&[][..], |p| &p.samples[..]),
        proc: t.proc.as_ref().map_or(&[][..], |p| &p.samples[..]),
        clk_tck: t.proc.as_ref().and_then(|p| p.clk_tck),
        metrics: t.metrics.as_ref().map_or(&[][..], |m| &m.samples[..]),
    };
    lane_quantities(t.power.as_ref(), t.proc.as_ref(), t.metrics.as_ref())
        .into_iter()
        .map(|q| CounterTrack {
            name: lane_label(q, t.power.as_ref()),
            unit: q.unit().to_string(),
            points: lane_points(q, &samples),
        })
        .collect()
}

/// The trajectory threads of a report's trace: its jobs in order with their
/// trajectories, and each request's first-token time.
pub fn trace_tracks(report: &RunReport) -> crate::timeline::TraceTracks {
    crate::timeline::TraceTracks {
        jobs: report
            .jobs
            .iter()
            .filter(|j| !j.trajectories.is_empty() || !j.units.is_empty())
            .map(|j| {
                // A load job's every unit (requests.jsonl's unit lines), else the
                // trajectories report.json holds.
                let ids = if j.units.is_empty() {
                    j.trajectories.iter().map(|t| t.id.clone()).collect()
                } else {
                    j.units.iter().map(|u| u.id.clone()).collect()
                };
                (j.id.clone(), ids)
            })
            .collect(),
        ttft: report
            .jobs
            .iter()
            .flat_map(|j| &j.requests)
            .filter_map(|r| Some((r.request_id.clone(), (r.send_ns, r.ttft_ns?))))
            .collect(),
    }
}

/// Perfetto/Chrome trace JSON of a run: its captured timeline (when present and valid),
/// one thread per trajectory grouped by job, and one counter track per resource lane.
pub fn perfetto(run_dir: &Path, report: &RunReport) -> Result<String, String> {
    let tl = crate::timeline::read_timeline(run_dir).map_err(|r| r.summary())?;
    let counters = TelemetryRun::read_samples(run_dir)
        .map(|t| counter_tracks(&t))
        .unwrap_or_default();
    let meta = TraceMeta {
        process_name: format!("inferscope-bench run {}", report.run_id),
        run_id: Some(report.run_id.clone()),
        clock_domain_id: Some(report.clock_domain_id.clone()),
        reference_instant_unix_ns: Some(report.reference_instant_unix_ns),
        quality: Some(tl.manifest.quality),
        dropped_count: Some(tl.manifest.dropped_count),
    };
    let v = crate::timeline::perfetto_trace(&tl.events, &counters, &meta, &trace_tracks(report));
    serde_json::to_string(&v).map_err(|e| e.to_string())
}

/// The Perfetto trace of a merged run: every shard's own trace (its verified timeline and
/// samples) as its own process (pid K, named `shard K/N`), its times shifted by the
/// shard's offset onto the merged axis. A shard without a readable timeline is an error
/// naming it.
pub fn merged_perfetto(run_dir: &Path, rep: &RunReport) -> Result<String, String> {
    let m = rep.merge.as_ref().ok_or("not a merged run")?;
    let mut events = Vec::new();
    for s in &m.shards {
        let dir = run_dir.join(&s.dir);
        let shard = crate::run_dir::read_report_with_requests(&dir)?;
        let text = perfetto(&dir, &shard).map_err(|e| format!("shard {}: {e}", s.k))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        let off_us = s.offset_ns as f64 / 1000.0;
        for mut e in v["traceEvents"].as_array().cloned().unwrap_or_default() {
            // Each shard's processes (its run, its jobs) keep their own tracks: pid
            // `K * 1000 + pid`, named after the shard.
            let pid = e["pid"].as_u64().unwrap_or(1);
            e["pid"] = serde_json::json!(u64::from(s.k) * 1000 + pid);
            if let Some(ts) = e["ts"].as_f64() {
                e["ts"] = serde_json::json!(ts + off_us);
            }
            if e["name"] == "process_name" {
                let name = e["args"]["name"].as_str().unwrap_or("").to_string();
                let name = if pid == 1 {
                    format!("shard {}/{} ({})", s.k, m.n, s.run_id)
                } else {
                    format!("shard {}/{} · {name}", s.k, m.n)
                };
                e["args"]["name"] = serde_json::json!(name);
            }
            events.push(e);
        }
    }
    let v = serde_json::json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "inferscope-bench",
            "run_id": rep.run_id,
            "clock_domain_id": rep.clock_domain_id,
            "reference_instant_unix_ns": rep.reference_instant_unix_ns,
            "alignment": m.alignment.statement,
        },
    });
    serde_json::to_string(&v).map_err(|e| e.to_string())
}
