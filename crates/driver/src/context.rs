//! Context driver: deterministic long prompts of given sizes, optionally repeated with a
//! shared prefix, to measure TTFT against context length and prefix reuse (docs/suite.md).
//!
//! Filler is seeded: the same `(seed, size)` gives the same prompt every run. Sizes are in
//! approximate tokens of 4 bytes (the simulator's tokenizer; real engines differ, and the
//! report always shows the server's own `prompt_tokens`).

use serde_json::json;

use crate::agentic::{DriverCtx, LlmExecutor, llm_step};
use crate::client::ChatRequest;
use crate::steps::{StepStatus, StopReason, TrajectoryRecord};

pub use crate::filler::{BYTES_PER_TOKEN, filler};

/// Settings of one context sweep.
#[derive(Debug, Clone)]
pub struct ContextPlan {
    /// `suite::job#repeat`-style id prefix.
    pub job_id: String,
    /// Model name.
    pub model: String,
    /// Prompt sizes, approximate tokens.
    pub sizes: Vec<usize>,
    /// Requests per size.
    pub repeat: u32,
    /// Repeats reuse the identical prompt (cache hits) when true; otherwise each repeat
    /// has a different seed.
    pub shared_prefix: bool,
    /// Filler seed.
    pub seed: u64,
    /// Filler vocabulary (empty = built in).
    pub words: Vec<String>,
    /// Max tokens per request.
    pub max_tokens: Option<u32>,
    /// Temperature.
    pub temperature: Option<f64>,
    /// Choices per request (`n`; `None`: not sent).
    pub n: Option<u32>,
    /// Fixed output length and `extra_body` of every request.
    pub shape: crate::shape::RequestShape,
    /// The suite's token counter and template overhead: `sizes` are then the
    /// prompt tokens the server reports; `None` = the bytes/4 estimate.
    pub tokens: Option<std::sync::Arc<crate::tokens::PromptTokens>>,
    /// `dataset`: the prompts of a file instead of `sizes`.
    pub dataset: Option<crate::suite::Dataset>,
    /// Prompts whose counter failed: sent as bytes/4 filler, stated in the job's notes.
    pub count_failures: crate::tokens::CountFailures,
    /// Prompts built before a load job's measured window ([`ContextPlan::prebuild`]).
    pub prebuilt: PromptCache,
}

/// Exact prompts built ahead: their text by `(seed, size)`.
#[derive(Debug, Clone, Default)]
pub struct PromptCache(
    std::sync::Arc<std::sync::Mutex<std::collections::HashMap<(u64, usize), String>>>,
);

impl PromptCache {
    fn get(&self, key: (u64, usize)) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned()
    }

    fn insert(&self, key: (u64, usize), text: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, text);
    }

    /// Prompts held.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Most prompts [`ContextPlan::prebuild`] holds (a load run past it builds the rest as it
/// sends them, and its note says so).
pub const PREBUILD_MAX_PROMPTS: u64 = 4096;

/// Repeat indices each load point after the first starts at (`point × stride`): a point's
/// generated prompts are new to the engine's prefix cache, as the first point's were
/// ([`ContextPlan::unit_spec`]).
pub const POINT_REPEAT_STRIDE: u64 = 1 << 20;

/// A Mooncake request's prompt: block `i` is seeded filler of `block` tokens
/// (4 bytes each) from `seed` and hash id `i` alone, so equal ids give byte-identical
/// blocks and requests share exactly the prefixes the trace recorded. The chat template's
/// `[head, tail]` bytes count in the blocks: block 0 gives up its first `head` bytes to the
/// template's head, and the text is cut to `tokens × 4 − head − tail` bytes (the last block
/// partial), so the templated prompt is `tokens × 4` bytes with its blocks on the trace's.
/// Only the bytes kept are built: a block's filler is a prefix of a longer one from its
/// seed, so the last block used is synthesized only as far as the cut.
pub fn block_prompt(
    seed: u64,
    hash_ids: &[u64],
    block: u64,
    tokens: u64,
    template: [u32; 2],
) -> String {
    let (head, tail) = (template[0] as usize, template[1] as usize);
    let keep = (tokens as usize)
        .saturating_mul(BYTES_PER_TOKEN)
        .saturating_sub(head + tail);
    // Bytes of the blocks' concatenation the text needs: the head given up, then `keep`.
    let need = head.saturating_add(keep);
    let mut out = String::with_capacity(need);
    for &id in hash_ids {
        let left = need.saturating_sub(out.len());
        if left == 0 {
            break;
        }
        let t = (block as usize).min(left.div_ceil(BYTES_PER_TOKEN));
        out.push_str(&filler(crate::stats::mix64(seed ^ id), t, &[]));
    }
    let len = keep.min(out.len().saturating_sub(head));
    // The built-in vocabulary is ASCII: every byte offset is a char boundary.
    out.drain(..head.min(out.len()));
    out.truncate(len);
    out
}

impl ContextPlan {
    /// Dataset request `k` (entries in file order, repeating): entry `k mod len`, pass
    /// `k div len`; request id `{trajectory_id with # → .t}.e{entry}.r{pass}`. An entry's
    /// output length is a fixed output (`output_tokens`), scaled by `length_scale`; a
    /// Mooncake entry's prompt is [`block_prompt`] with blocks and length scaled (and its
    /// asked prompt tokens the scaled length, 4 bytes a token: the report states the
    /// server's difference).
    pub fn dataset_request(
        &self,
        d: &crate::suite::Dataset,
        trajectory_id: &str,
        k: u64,
    ) -> ChatRequest {
        use crate::suite::dataset::DatasetPrompt;
        let n = d.entries.len().max(1) as u64;
        let (i, pass) = ((k % n) as usize, k / n);
        let e = &d.entries[i];
        let mut asked = None;
        let messages = match &e.prompt {
            DatasetPrompt::Messages(m) => m.clone(),
            DatasetPrompt::Blocks {
                input_tokens,
                hash_ids,
            } => {
                let b = d.block_size();
                let len = d.block_prompt_tokens(*input_tokens, hash_ids.len() as u64);
                asked = Some(len);
                vec![
                    json!({"role": "user", "content": block_prompt(self.seed, hash_ids, b, len, d.template_bytes)}),
                ]
            }
        };
        let mut req = ChatRequest {
            request_id: format!("{}.e{i}.r{pass}", trajectory_id.replace('#', ".t")),
            model: self.model.clone(),
            messages,
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            seed: Some(self.seed),
            n: self.n,
            stream: true,
            prompt_tokens_asked: asked,
            ..Default::default()
        };
        let mut shape = self.shape.clone();
        if let Some(t) = e.output_tokens {
            let t = d.output_tokens(t);
            shape.output_tokens = Some(u32::try_from(t).unwrap_or(u32::MAX));
        }
        shape.apply(&mut req);
        req
    }
}

impl ContextPlan {
    /// The streamed request for `size` (approximate prompt tokens) and repeat `r` of the
    /// trajectory `trajectory_id` (`suite::job#k`): request id
    /// `{trajectory_id with # → .t}.s{size}.r{r}`, one user message of [`filler`] text.
    /// Seed rule: `seed ^ size` when repeats share their prefix (identical prompts, prefix
    /// cache hits), else `seed ^ size ^ (r + 1) << 32` (a new prompt per repeat). Used by
    /// the sequential sweep and by load runs, so both send the same prompts.
    ///
    /// The prompt: with a token counter, exact filler of `size − overhead`
    /// tokens, asked to give `size` prompt tokens; without one (or when the counter fails
    /// after its retries: recorded in `count_failures`), `size × 4` bytes, asked to give
    /// `size` (the difference the server reports is the estimate's error).
    pub async fn request(&self, trajectory_id: &str, size: usize, r: u64) -> ChatRequest {
        let seed = self.prompt_seed(size, r);
        let exact = match &self.tokens {
            Some(_) if let Some(text) = self.prebuilt.get((seed, size)) => Some((text, 0)),
            Some(t) => match t.content(seed, size, &self.words).await {
                Ok(c) => Some(c),
                Err(e) => {
                    self.count_failures.record(&e);
                    None
                }
            },
            None => None,
        };
        let (content, asked) = match exact {
            Some((text, _)) => (text, size as u64),
            None => (filler(seed, size, &self.words), size as u64),
        };
        let mut req = ChatRequest {
            request_id: format!("{}.s{size}.r{r}", trajectory_id.replace('#', ".t")),
            model: self.model.clone(),
            messages: vec![json!({"role": "user", "content": content})],
            prompt_tokens_asked: Some(asked),
            tools: vec![],
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            seed: Some(self.seed),
            n: self.n,
            stream: true,
            ..Default::default()
        };
        self.shape.apply(&mut req);
        req
    }
}

impl ContextPlan {
    /// `(size, repeat index)` of unit `k` of load point `point` (see
    /// `UnitTemplate::Context`): sizes in order, each `repeat` times, then again with the
    /// next repeat indices. Every point has the same sizes in the same order; a point after
    /// the first takes repeat indices from `point × POINT_REPEAT_STRIDE`, so its prompts
    /// (seeded by size and repeat index) are not the earlier points' — an engine with prefix
    /// caching would otherwise serve a later point's prompts from cache, and a concurrency
    /// sweep would compare cold requests with cached ones. A shared-prefix job's prompts
    /// depend on the size alone, so every point shares them, as every repeat does.
    pub fn unit_spec(&self, point: usize, k: u64) -> (usize, u64) {
        let repeat = u64::from(self.repeat.max(1));
        let n = self.sizes.len() as u64 * repeat;
        let first = (point as u64).saturating_mul(POINT_REPEAT_STRIDE);
        if n == 0 {
            return (0, first.saturating_add(k));
        }
        let i = k % n;
        let size = self.sizes[(i / repeat) as usize];
        let r = i % repeat + (k / n) * repeat;
        (size, first.saturating_add(r))
    }

    /// The filler seed of size `size`, repeat `r` (see [`ContextPlan::request`]).
    fn prompt_seed(&self, size: usize, r: u64) -> u64 {
        if self.shared_prefix {
            self.seed ^ (size as u64)
        } else {
            self.seed ^ (size as u64) ^ ((r + 1) << 32)
        }
    }

    /// Builds the exact prompts of each load point's first `units[p]` units (at most
    /// [`PREBUILD_MAX_PROMPTS`] in all) before its measured window, so the window holds no token
    /// counting (an engine's `POST /tokenize` round trips would otherwise sit between a
    /// closed loop's requests and load its API server). Only with a token counter and
    /// without a dataset; a prompt the counter fails on is left to be built as it is sent.
    /// The prompts built.
    pub async fn prebuild(&self, units: &[u64]) -> usize {
        let Some(t) = &self.tokens else { return 0 };
        if self.dataset.is_some() {
            return 0;
        }
        let mut left = PREBUILD_MAX_PROMPTS;
        let specs = units
            .iter()
            .enumerate()
            .flat_map(|(p, &n)| (0..n).map(move |k| (p, k)));
        for (p, k) in specs {
            let (size, r) = self.unit_spec(p, k);
            let seed = self.prompt_seed(size, r);
            if self.prebuilt.get((seed, size)).is_some() {
                continue;
            }
            if left == 0 {
                break;
            }
            left -= 1;
            if let Ok((text, _)) = t.content(seed, size, &self.words).await {
                self.prebuilt.insert((seed, size), text);
            }
        }
        self.prebuilt.len()
    }
}

impl ContextPlan {
    /// The step's output-token estimate by the suite's counter, when it has one
    /// ([`crate::tokens::refine_estimate`]).
    pub async fn refine_estimate(&self, step: &mut crate::steps::StepRecord) {
        if let (Some(t), Some(r)) = (&self.tokens, step.request.as_mut()) {
            crate::tokens::refine_estimate(&t.counter, r).await;
        }
    }
}

/// Runs the sweep: for each size, `repeat` requests back to back. One trajectory record
/// holds all steps (each request an `llm_call` step).
pub async fn run_context<E: LlmExecutor>(
    exec: &E,
    ctx: &DriverCtx,
    plan: &ContextPlan,
) -> TrajectoryRecord {
    let start_ns = exec.now_ns();
    let mut steps = Vec::new();
    let mut reason = StopReason::Completed;
    let mut last_text = None;
    let id = format!("{}#0", plan.job_id);
    if let Some(d) = &plan.dataset {
        for k in 0..d.entries.len() as u64 * u64::from(plan.repeat.max(1)) {
            if ctx.is_cancelled() {
                reason = StopReason::Cancelled;
                break;
            }
            let req = plan.dataset_request(d, &id, k);
            let mut step = llm_step(exec, ctx, &format!("{id}/e{k}"), &req).await;
            plan.refine_estimate(&mut step).await;
            if step.status == StepStatus::Completed {
                last_text = step.request.as_ref().map(|r| r.output.text.clone());
            }
            steps.push(step);
        }
    }
    'sizes: for (si, &size) in plan.sizes.iter().enumerate() {
        for r in 0..plan.repeat.max(1) {
            if ctx.is_cancelled() {
                reason = StopReason::Cancelled;
                break 'sizes;
            }
            let req = plan.request(&id, size, u64::from(r)).await;
            let case_id = format!("{id}/s{si}r{r}");
            let mut step = llm_step(exec, ctx, &case_id, &req).await;
            plan.refine_estimate(&mut step).await;
            if step.status == StepStatus::Completed {
                last_text = step.request.as_ref().map(|r| r.output.text.clone());
            }
            steps.push(step);
        }
    }
    TrajectoryRecord {
        id,
        index: 0,
        stop_reason: reason,
        steps,
        tools_called: vec![],
        final_answer: last_text,
        stdout: None,
        start_ns,
        end_ns: exec.now_ns(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of sizes 16 and 32, three repeats each, with `counter` and no template overhead.
    fn counted(counter: crate::tokens::Counter) -> ContextPlan {
        ContextPlan {
            job_id: "s::j".into(),
            model: "m".into(),
            sizes: vec![16, 32],
            repeat: 3,
            shared_prefix: false,
            seed: 9,
            words: vec![],
            max_tokens: Some(4),
            temperature: None,
            n: None,
            shape: Default::default(),
            tokens: Some(std::sync::Arc::new(crate::tokens::PromptTokens {
                counter,
                overhead: 0,
                label: "tokenizer.json",
            })),
            dataset: None,
            count_failures: Default::default(),
            prebuilt: Default::default(),
        }
    }

    /// Prompts built ahead are the ones sent: with the counter gone (an endpoint that
    /// refuses every connection) the requests of the prebuilt units are still exact and no
    /// count fails; a unit past them counts again, and says so when it cannot.
    #[tokio::test]
    async fn prebuilt_prompts_are_sent_without_counting_again() {
        use crate::tokens::{CountTokens, Counter, TokenizeShape};
        let t = tokenizers::Tokenizer::from_bytes(crate::tokens::tests::tiny_bpe_json()).unwrap();
        let file = Counter::File(std::sync::Arc::new(t));
        let mut plan = counted(file.clone());
        assert_eq!(plan.prebuild(&[6]).await, 6);
        assert_eq!(plan.prebuild(&[6]).await, 6, "built once");
        let gone =
            crate::client::Client::new(crate::client::ClientConfig::new("http://127.0.0.1:1/v1"))
                .unwrap();
        let mut tokens = (**plan.tokens.as_ref().unwrap()).clone();
        tokens.counter = Counter::Endpoint {
            client: Box::new(gone),
            model: "m".into(),
            shape: TokenizeShape::OpenAiServer,
        };
        plan.tokens = Some(std::sync::Arc::new(tokens));
        for k in 0..6 {
            let (size, r) = plan.unit_spec(0, k);
            let req = plan.request("s::j#p0.0", size, r).await;
            let text = req.messages[0]["content"].as_str().unwrap();
            assert_eq!(file.count(text).await.unwrap(), size, "unit {k}");
        }
        assert_eq!(plan.count_failures.count(), 0);
        let (size, r) = plan.unit_spec(0, 6);
        plan.request("s::j#p0.0", size, r).await;
        assert_eq!(plan.count_failures.count(), 1);
    }

    #[test]
    fn filler_is_deterministic_and_sized() {
        let a = filler(7, 256, &[]);
        let b = filler(7, 256, &[]);
        assert_eq!(a, b);
        assert_eq!(a.len(), 1024);
        assert_ne!(a, filler(8, 256, &[]));
    }

    #[test]
    fn block_prompt_counts_the_template_in_its_blocks() {
        let plain = block_prompt(3, &[7, 8, 9], 16, 40, [0, 0]);
        assert_eq!(plain.len(), 160);
        let t = block_prompt(3, &[7, 8, 9], 16, 40, [17, 33]);
        // 17 + content + 33 = 40 tokens of 4 bytes; block 0 gives its head to the template.
        assert_eq!(t.len(), 160 - 50);
        assert_eq!(&t[..64 - 17], &plain[17..64], "block 0 after the head");
        assert_eq!(
            &t[64 - 17..],
            &plain[64..127],
            "block 1 on, shifted, cut at the tail"
        );
    }

    #[test]
    fn block_prompt_builds_only_the_bytes_it_keeps() {
        // Break-it review: the whole block was synthesized before the cut, so a huge
        // `block_tokens` aborted the run on the allocation (and 20M-token blocks took
        // seconds for a 512-token prompt).
        let seed = crate::stats::mix64(3 ^ 7);
        assert_eq!(
            block_prompt(3, &[7, 8], 1 << 40, 8, [0, 0]),
            filler(seed, 8, &[])
        );
        assert_eq!(
            block_prompt(3, &[7, 8], 1 << 40, 8, [5, 7]),
            filler(seed, 8, &[])[5..32 - 7]
        );
        // The same bytes as building every block whole, then cutting.
        let whole = |ids: &[u64], block: u64, tokens: u64, [h, t]: [u32; 2]| {
            let mut out: String = ids
                .iter()
                .map(|&id| filler(crate::stats::mix64(3 ^ id), block as usize, &[]))
                .collect();
            let (h, t) = (h as usize, t as usize);
            let len = (tokens as usize * 4)
                .saturating_sub(h + t)
                .min(out.len().saturating_sub(h));
            out.drain(..h.min(out.len()));
            out.truncate(len);
            out
        };
        for tokens in [1, 3, 16, 17, 33, 40, 48, 60] {
            for template in [[0, 0], [17, 33], [3, 0], [0, 5], [63, 64]] {
                assert_eq!(
                    block_prompt(3, &[7, 8, 9], 16, tokens, template),
                    whole(&[7, 8, 9], 16, tokens, template),
                    "{tokens} tokens, template {template:?}"
                );
            }
        }
    }

    #[test]
    fn filler_uses_given_words() {
        let words = vec!["alpha".to_string()];
        let f = filler(1, 10, &words);
        assert!(f.starts_with("alpha"));
    }
}
