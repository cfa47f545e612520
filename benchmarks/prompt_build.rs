//! Benchmark: the CPU cost per request of tokenizer-exact prompt building — one
//! context request's filler of exactly N tokens by a Hugging Face tokenizer.json
//! (`inferscope_bench::runner::tokens::exact_filler`: the binary search over word ends and
//! the pads, every count a full `encode_fast`), at N = 128, 512, 2048; beside it the
//! bytes/4 filler the runner sends without a tokenizer.
//!
//! The tokenizer is the one given in `INFERSCOPE_TOKENIZER_JSON` (for the figures in
//! BENCHMARKS.md: SmolLM2-135M-Instruct's, built from the served GGUF with
//! `scripts/gguf_tokenizer_json.py`); without it the tokenizer benchmarks are skipped (no
//! hub download, ever).
//!
//! Run: `INFERSCOPE_TOKENIZER_JSON=PATH cargo bench --bench prompt_build`.

use std::path::PathBuf;
use std::sync::OnceLock;

use divan::Bencher;
use inferscope_bench::runner::context::filler;
use inferscope_bench::runner::tokens::{Counter, exact_filler};

fn counter() -> Option<&'static Counter> {
    static C: OnceLock<Option<Counter>> = OnceLock::new();
    C.get_or_init(|| {
        let p = PathBuf::from(std::env::var_os("INFERSCOPE_TOKENIZER_JSON")?);
        Some(Counter::from_file(&p).unwrap_or_else(|e| panic!("{e}")))
    })
    .as_ref()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

#[divan::bench(args = [128, 512, 2048])]
fn exact_by_tokenizer_json(b: Bencher, tokens: usize) {
    let Some(c) = counter() else {
        eprintln!("prompt_build: INFERSCOPE_TOKENIZER_JSON is not set; skipped");
        return;
    };
    let rt = runtime();
    let mut seed = 0u64;
    // A new seed per request, as a context job without `shared_prefix` builds them.
    b.bench_local(|| {
        seed += 1;
        let (text, n) = rt.block_on(exact_filler(c, seed, tokens, &[])).unwrap();
        assert_eq!(n, tokens);
        text
    });
}

#[divan::bench(args = [128, 512, 2048])]
fn bytes_div_4(b: Bencher, tokens: usize) {
    let mut seed = 0u64;
    b.bench_local(|| {
        seed += 1;
        filler(seed, tokens, &[])
    });
}

fn main() {
    divan::main();
}
