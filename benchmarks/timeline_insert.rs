//! Micro-benchmark of timeline insertion (issue 4 "Done when": insertion p99 under 1 µs
//! and zero allocations per insert; docs/artifacts.md). Not a timed test.
//!
//! Run: `cargo bench --bench timeline_insert` (add `-- --sample-count 200` etc. for divan).
//!
//! Part 1, the acceptance probe: on fresh default-bounds sinks (10,000 slots, allocated
//! outside the measurement), every `span_start` and `span_end` is timed on its own with
//! `Instant::now()` pairs (the timer's own cost, reported as `timer_overhead`, is
//! included, so the figures are upper bounds), on one producer thread and on two
//! concurrent producer threads. Allocations inside the measured loops are counted by the
//! counting global allocator below (per thread). In bench mode it prints p50/p99/p99.9/max
//! and exits 1 when p99 ≥ 1 µs or any insert allocated; in test mode (`cargo test
//! --benches`) it runs briefly and checks only the allocation count (timing is never
//! asserted in a test).
//!
//! Part 2, divan benchmarks (`divan::AllocProfiler` wraps the same allocator and prints
//! allocations per iteration).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::{Arc, Barrier};

#[path = "pin.rs"]
mod pin;
use std::time::Instant;

use inferscope_bench::clock::RunClock;
use inferscope_bench::timeline::{
    Phase, Sink, SinkConfig, SpanContext, SpanEnd, SpanName, TimelineSink,
};

/// Counts allocations (alloc, alloc_zeroed, realloc) per thread.
struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

// SAFETY: delegates every call to `System` unchanged; the counter is a const-initialized
// thread-local `Cell` (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: divan::AllocProfiler<Counting> = divan::AllocProfiler::new(Counting);

const TOOLS: [&str; 3] = ["read_file", "search", "list_dir"];
/// Start/end pairs per fresh sink: 9,800 events, below the 10,000 bound.
const PAIRS_PER_SINK: usize = 4_900;

fn new_sink(clock: &RunClock) -> TimelineSink {
    let mut cfg = SinkConfig::new("bench-run");
    cfg.tool_names = TOOLS.iter().map(|s| s.to_string()).collect();
    TimelineSink::with_run_clock(clock, cfg).expect("valid config")
}

fn ctx(i: u32) -> SpanContext<'static> {
    SpanContext {
        request_id: Some("req-0123456789abcdef"),
        case_id: Some("agentic::lookup#0/step3"),
        attempt: Some(i),
    }
}

/// Times `pairs` start/end pairs on `sink`; pushes per-insert ns into `out` (capacity
/// reserved by the caller). Returns allocations made inside the loop.
fn timed_pairs(
    sink: &TimelineSink,
    parent: Option<inferscope_bench::timeline::SpanId>,
    pairs: usize,
    out: &mut Vec<u64>,
) -> u64 {
    let a0 = allocs();
    for i in 0..pairs {
        let name = if i % 3 == 0 {
            SpanName::Fixture(TOOLS[i % TOOLS.len()])
        } else {
            SpanName::ChatCompletion
        };
        let t0 = Instant::now();
        let id = sink.span_start(name, parent, ctx(i as u32));
        let t1 = Instant::now();
        let kept = id.map(|id| {
            sink.span_end(
                id,
                SpanEnd::completed()
                    .with_tokens(Some(1_024), Some(64))
                    .with_request_id("chatcmpl-1"),
            )
        });
        let t2 = Instant::now();
        assert_eq!(kept, Some(true), "bench sink must not fill");
        out.push((t1 - t0).as_nanos() as u64);
        out.push((t2 - t1).as_nanos() as u64);
    }
    allocs() - a0
}

struct Figures {
    n: usize,
    p50: u64,
    p99: u64,
    p999: u64,
    max: u64,
}

fn figures(mut v: Vec<u64>) -> Figures {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    Figures {
        n: v.len(),
        p50: at(0.50),
        p99: at(0.99),
        p999: at(0.999),
        max: *v.last().unwrap_or(&0),
    }
}

fn timer_overhead() -> u64 {
    let mut v = Vec::with_capacity(100_000);
    for _ in 0..100_000 {
        let t0 = Instant::now();
        let t1 = Instant::now();
        v.push((t1 - t0).as_nanos() as u64);
    }
    figures(v).p50
}

/// One producer: `rounds` fresh sinks × 4,900 pairs.
fn probe_single(clock: &RunClock, rounds: usize) -> (Figures, u64) {
    let mut samples = Vec::with_capacity(rounds * PAIRS_PER_SINK * 2);
    let mut total_allocs = 0;
    for _ in 0..rounds {
        let sink = new_sink(clock);
        let phase = sink.span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        );
        samples.reserve(PAIRS_PER_SINK * 2);
        total_allocs += timed_pairs(&sink, phase, PAIRS_PER_SINK - 1, &mut samples);
    }
    (figures(samples), total_allocs)
}

/// Whether the two producers are pinned to CPUs 0 and 1 (unless `INSERT_PIN=none`): left
/// to itself the kernel may run both on one CPU, one after the other, and the "concurrent"
/// figure then measures no contention at all (p50 equal to one producer's).
fn pin_producers() -> bool {
    std::env::var("INSERT_PIN").as_deref() != Ok("none")
}

/// Two concurrent producers on one sink per round, each 2,400 pairs, pinned to CPUs 0
/// and 1 and released together (each spins until both are ready), so that their inserts
/// overlap.
fn probe_concurrent(clock: &RunClock, rounds: usize) -> (Figures, u64) {
    let threads = 2;
    let per_thread = PAIRS_PER_SINK / threads - 50;
    let mut samples = Vec::new();
    let mut total_allocs = 0;
    for _ in 0..rounds {
        let sink = new_sink(clock);
        let barrier = Arc::new(Barrier::new(threads));
        let results: Vec<(Vec<u64>, u64)> = std::thread::scope(|s| {
            let ready = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let hs: Vec<_> = (0..threads)
                .map(|k| {
                    let sink = sink.clone();
                    let barrier = barrier.clone();
                    let ready = ready.clone();
                    s.spawn(move || {
                        pin::pin_current_thread(pin_producers().then_some(k));
                        let mut out = Vec::with_capacity(per_thread * 2);
                        barrier.wait();
                        ready.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                        while ready.load(std::sync::atomic::Ordering::Acquire) < threads {
                            std::hint::spin_loop();
                        }
                        let a = timed_pairs(&sink, None, per_thread, &mut out);
                        (out, a)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().expect("probe thread"))
                .collect()
        });
        for (v, a) in results {
            samples.extend(v);
            total_allocs += a;
        }
    }
    (figures(samples), total_allocs)
}

fn print(label: &str, f: &Figures, allocs: u64) {
    println!(
        "timeline_insert {label}: inserts={} p50={} ns p99={} ns p99.9={} ns max={} ns allocations_in_loop={allocs}",
        f.n, f.p50, f.p99, f.p999, f.max
    );
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let clock = RunClock::start();
    let rounds = if bench_mode { 20 } else { 1 };
    let (single, a1) = probe_single(&clock, rounds);
    let (conc, a2) = probe_concurrent(&clock, rounds);
    let sink = new_sink(&clock);
    println!(
        "timeline_insert setup: slots=10000 preallocated_bytes={} timer_overhead_p50={} ns (included in the figures)",
        sink.preallocated_bytes(),
        timer_overhead()
    );
    print("1 producer ", &single, a1);
    print("2 producers", &conc, a2);
    let allocs_ok = a1 == 0 && a2 == 0;
    assert!(allocs_ok, "an insert allocated ({a1} + {a2} allocations)");
    if bench_mode && (single.p99 >= 1_000 || conc.p99 >= 1_000) {
        eprintln!("timeline_insert: FAIL p99 >= 1 µs");
        std::process::exit(1);
    }
    divan::main();
}

/// One start/end pair on a fresh-enough sink (a new sink every 4,900 pairs, made
/// outside the timed section).
#[divan::bench(sample_count = 100, sample_size = 200)]
fn span_start_end_pair(bencher: divan::Bencher) {
    let clock = RunClock::start();
    let mut current = new_sink(&clock);
    let mut used = 0usize;
    bencher
        .with_inputs(move || {
            if used == PAIRS_PER_SINK {
                current = new_sink(&clock);
                used = 0;
            }
            used += 1;
            current.clone()
        })
        .bench_local_refs(|sink| {
            let id = sink.span_start(SpanName::ChatCompletion, None, ctx(1));
            id.map(|id| sink.span_end(id, SpanEnd::completed().with_tokens(Some(1_024), Some(64))))
        });
}

/// The same pair through `Arc<dyn Sink>` (what drivers hold).
#[divan::bench(sample_count = 100, sample_size = 200)]
fn span_start_end_pair_dyn(bencher: divan::Bencher) {
    let clock = RunClock::start();
    let mut current: Arc<dyn Sink> = Arc::new(new_sink(&clock));
    let mut used = 0usize;
    bencher
        .with_inputs(move || {
            if used == PAIRS_PER_SINK {
                current = Arc::new(new_sink(&clock));
                used = 0;
            }
            used += 1;
            current.clone()
        })
        .bench_local_refs(|sink| {
            let id = sink.span_start(SpanName::Fixture("search"), None, ctx(1));
            id.map(|id| sink.span_end(id, SpanEnd::completed()))
        });
}

/// An offer to a full sink: dropped and counted at once.
#[divan::bench(sample_count = 100, sample_size = 1_000)]
fn span_start_when_full(bencher: divan::Bencher) {
    let clock = RunClock::start();
    let sink = new_sink(&clock);
    while sink
        .span_start(SpanName::ChatCompletion, None, SpanContext::default())
        .is_some()
    {}
    bencher.bench_local(|| sink.span_start(SpanName::ChatCompletion, None, ctx(1)));
}
