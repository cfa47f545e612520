//! `sim [flags]`: serves the built-in OpenAI-compatible simulator until Ctrl-C.

use crate::cli::SimArgs;
use crate::model::exit::ExitCode;

/// Runs `sim`. Exit 0 after a clean stop, 2 when it cannot serve.
pub async fn command(args: SimArgs) -> i32 {
    match crate::sim::serve(args.to_config(), args.socket_addr()).await {
        Ok(()) => ExitCode::OK,
        Err(e) => {
            eprintln!("error: simulator: {e}");
            ExitCode::BAD_INPUT
        }
    }
}
