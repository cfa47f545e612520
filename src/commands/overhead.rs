//! `overhead SUITE`: measures the capture's own cost against its budgets
//! ([`crate::overhead`]).

use std::path::{Path, PathBuf};

use crate::model::exit::ExitCode;
use crate::overhead::{OverheadPlan, OverheadRequest, measure, render, render_text};
use crate::runner;

/// The work directory: `--out DIR` (kept), else a temporary directory under
/// `target/inferscope/overhead/` of the current directory (on the same disk as the
/// default run directories, so the disk-write control's writes reach the block layer
/// even where `/tmp` is a tmpfs), falling back to the system temporary directory.
fn work_dir(out: Option<&Path>) -> std::io::Result<(PathBuf, Option<tempfile::TempDir>)> {
    if let Some(dir) = out {
        std::fs::create_dir_all(dir)?;
        return Ok((dir.to_path_buf(), None));
    }
    let base = Path::new("target").join("inferscope").join("overhead");
    let tmp = std::fs::create_dir_all(&base)
        .and_then(|()| {
            tempfile::Builder::new()
                .prefix("overhead-")
                .tempdir_in(&base)
        })
        .or_else(|_| {
            tempfile::Builder::new()
                .prefix("inferscope-overhead-")
                .tempdir()
        })?;
    Ok((tmp.path().to_path_buf(), Some(tmp)))
}

/// The `overhead` command: exit 0 pass, 100 fail, 3 inconclusive, 2 bad input.
pub async fn command(args: OverheadRequest) -> i32 {
    if args.pairs == Some(0) {
        eprintln!("error: --pairs: at least 1 pair");
        return ExitCode::BAD_INPUT;
    }
    let overrides = crate::suite::RunOverrides {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        capture_timeline: false,
        filter: args.filter.clone(),
    };
    let suites = match crate::suite::diagnose::resolve_for_run(
        std::slice::from_ref(&args.suite),
        &overrides,
    ) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let budgets = suites[0].suite.overhead.clone();
    // The suite's `[overhead]` budgets (`pairs >= 1` included) were validated, with
    // located errors, when the suite loaded.
    let pairs = args.pairs.unwrap_or(budgets.pairs);
    let (dir, _guard) = match work_dir(args.out.as_deref()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: overhead work directory: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    let plan = OverheadPlan {
        suites,
        pairs,
        control: args.negative_control,
        work_dir: dir.clone(),
    };
    println!("{}", render::header(&plan, &budgets));
    let total = 1 + 2 * pairs;
    let mut done = 0u32;
    let interrupts =
        runner::install_signal_handler(runner::events::EventSink::new(vec![Box::new(
            crate::reporter::Diagnostics::new(std::io::stderr()),
        )]));
    let measured = measure(&plan, &budgets, interrupts.cancelled.clone(), |m| {
        done += 1;
        eprintln!("  run {done:>2}/{total}  {}", render::run_brief(m));
    });
    // A second signal abandons the measurement where it stands.
    let report = tokio::select! {
        r = measured => r,
        () = interrupts.aborted() => return ExitCode::INTERRUPTED,
    };
    print!("{}", render_text(&report));
    if args.out.is_some() {
        let p = dir.join("overhead.json");
        match serde_json::to_string_pretty(&report) {
            Ok(t) => match std::fs::write(&p, t + "\n") {
                Ok(()) => println!("wrote {}", p.display()),
                Err(e) => eprintln!("error: {}: {e}", p.display()),
            },
            Err(e) => eprintln!("error: overhead.json: {e}"),
        }
    }
    report.exit_status()
}
