//! A sample set written by hand from `docs/samples.md` alone (only the fields the page
//! marks required, plus the figures), joined offline: the figures are computed by hand.

use super::{offline_join, steps_of};

const A: u64 = 1_760_000_000_000_000_000;
const MS: u64 = 1_000_000;

/// Power: one GPU, instant basis, 100 ms samples at 200 W flat, 0–1000 ms.
/// Counters every 250 ms: prompt 0, 120, 120, 300, 300; hits 0, 0, 0, 100, 100;
/// generation 0, 5, 5, 17, 17; queries never exposed (`null`).
///
/// Steps: 1 llm [100, 600] ms, 2 tool [600, 700], 3 llm [700, 1000].
/// - step 1: baseline 0 ms (last ≤ 100) → end 500 (last ≤ 600): prompt 120, gen 5, hits 0;
///   energy: segments 100–600 = 5 × 100 ms × 200 W = 100,000 mJ.
/// - step 2: baseline 500 → end 500: no interval → null; one segment 600–700 = 20,000 mJ.
/// - step 3: baseline 500 (last ≤ 700) → end 1000: prompt 180, gen 12, hits 100;
///   energy 700–1000 = 60,000 mJ.
/// - queries: never scraped → null everywhere; whole run 200,000 mJ, unattributed 20,000.
#[test]
fn a_hand_written_sample_set_following_the_doc_joins() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("samples");
    std::fs::create_dir(&s).unwrap();
    let status_ok = r#"{"state":"ok"}"#;
    std::fs::write(
        s.join("sources.json"),
        format!(
            r#"{{
  "schema": "inferscope.samples.v1",
  "clock_domain_id": "hand-written",
  "reference_instant_unix_ns": {A},
  "started_elapsed_ns": 0,
  "stopped_elapsed_ns": 1000000000,
  "power": {{
    "period_ns": 100000000,
    "sample_count": 11,
    "dropped": 0,
    "devices": [{{"device": 0, "kind": "nvml", "label": "gpu0", "power_basis": "instant",
                  "status": {status_ok}, "unsupported": {{}}, "errors": {{}}}}]
  }},
  "metrics": {{
    "status": {status_ok}, "url": "http://engine:8000/metrics", "profile_requested": "vllm",
    "period_ns": 250000000, "timeout_ns": 1000000000, "scrapes_ok": 5, "scrapes_failed": 0,
    "gaps": [], "parse_errors": 0, "counter_resets": {{}}, "mapping": {{}}, "notes": [],
    "sample_count": 5, "dropped": 0
  }}
}}"#
        ),
    )
    .unwrap();
    let gpu: String = (0..=10)
        .map(|k| {
            format!(
                "{{\"elapsed_ns\":{},\"device\":0,\"power_mw\":200000}}\n",
                k * 100 * MS
            )
        })
        .collect();
    std::fs::write(s.join("gpu.jsonl"), gpu).unwrap();
    let prompt = [0, 120, 120, 300, 300];
    let hits = [0, 0, 0, 100, 100];
    let generated = [0, 5, 5, 17, 17];
    let metrics: String = (0..5)
        .map(|k| {
            format!(
                "{{\"elapsed_ns\":{t},\"request_sent_ns\":{t},\"counters\":{{\"prompt_tokens\":{},\"generation_tokens\":{},\"prefix_cache_hits\":{}}},\"resets\":{{\"prompt_tokens\":false,\"generation_tokens\":false,\"prefix_cache_queries\":false,\"prefix_cache_hits\":false}},\"gauges\":{{}},\"non_finite\":[]}}\n",
                prompt[k],
                generated[k],
                hits[k],
                t = k as u64 * 250 * MS
            )
        })
        .collect();
    std::fs::write(s.join("metrics.jsonl"), metrics).unwrap();
    let steps = dir.path().join("steps.jsonl");
    super::write_steps(
        &steps,
        &[
            (1, "llm_call", A + 100 * MS, A + 600 * MS),
            (2, "tool", A + 600 * MS, A + 700 * MS),
            (3, "llm_call", A + 700 * MS, A + 1000 * MS),
        ],
    );
    let (v, _) = offline_join(&["--samples", s.to_str().unwrap()], &steps, dir.path());
    let got: Vec<[serde_json::Value; 6]> = steps_of(&v)
        .iter()
        .map(|s| {
            [
                s["step_id"].clone(),
                s["energy_mj"].clone(),
                s["prompt_tokens_delta"].clone(),
                s["generation_tokens_delta"].clone(),
                s["cache_hits_delta"].clone(),
                s["cache_queries_delta"].clone(),
            ]
        })
        .collect();
    let n = serde_json::Value::Null;
    assert_eq!(
        got,
        vec![
            [
                1.into(),
                100_000.into(),
                120.into(),
                5.into(),
                0.into(),
                n.clone()
            ],
            [
                2.into(),
                20_000.into(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone()
            ],
            [
                3.into(),
                60_000.into(),
                180.into(),
                12.into(),
                100.into(),
                n.clone()
            ],
        ],
        "{v:#}"
    );
    let t = &v["trajectories"][0];
    assert_eq!(t["whole_run_energy_mj"], 200_000);
    assert_eq!(t["unattributed_energy_mj"], 20_000);
    assert_eq!(steps_of(&v)[0]["energy_basis"], "measured");
}
