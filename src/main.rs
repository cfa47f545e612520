//! `inferscope-bench`: a thin binary over the library (see `inferscope_bench::commands`).

use clap::Parser;
use inferscope_bench::model::exit::ExitCode;

fn main() {
    let cli = inferscope_bench::cli::Cli::parse();
    if cli.command.prints_only() {
        // Like other Unix filters: `inferscope-bench list S | head -1` ends quietly when the
        // reader goes away, instead of panicking on EPIPE (exit 101). Commands that measure
        // or serve keep SIGPIPE ignored and finish their work whatever stdout does.
        // SAFETY: called before any thread is spawned; SIG_DFL is a valid disposition.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    // The command runs on a worker (below): give the workers the main thread's 8 MiB stack.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cli.command.runtime_workers())
        .thread_stack_size(8 << 20)
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(ExitCode::ERROR);
        }
    };
    // The command runs as a task on the runtime's workers, with the tasks it spawns (its
    // streams' connections among them), not on this thread (`Command::runtime_workers`).
    let code = runtime.block_on(async {
        match tokio::spawn(inferscope_bench::commands::dispatch(cli.command)).await {
            Ok(code) => code,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => {
                eprintln!("error: the command's task ended without a result: {e}");
                ExitCode::ERROR
            }
        }
    });
    // A second Ctrl-C / SIGTERM aborted the command: exit at once, leaving whatever the
    // runtime still runs where it stands; otherwise give it two seconds to wind down.
    if code != ExitCode::INTERRUPTED {
        runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    }
    std::process::exit(code);
}
