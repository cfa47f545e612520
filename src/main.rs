//! `inferscope-bench`: a thin binary over the library (see `inferscope_bench::commands`).

use clap::Parser;

fn main() {
    let cli = inferscope_bench::cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(inferscope_bench::commands::dispatch(cli.command));
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    std::process::exit(code);
}
