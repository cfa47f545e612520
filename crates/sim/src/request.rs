//! One admitted request's engine bookkeeping ([`RequestGuard`]): the running gauge, its KV
//! blocks, the power phase and the token and outcome counters, kept until the request ends.

use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;

use super::generate::FinishReason;
use super::metrics::Counters;
use super::state::SimState;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Prefill,
    Decode,
    Ended,
}

/// One admitted request's share of the engine state: running gauge, KV blocks, power
/// (prefill → decode → ended) and the token/success counters. Dropping it before the
/// end (client gone, fault) counts the request as `abort`.
pub(crate) struct RequestGuard {
    state: Arc<SimState>,
    phase: Phase,
    prompt_tokens: u64,
    kv_blocks: u64,
    permit: Option<OwnedSemaphorePermit>,
}

impl RequestGuard {
    pub(crate) fn admit(
        state: Arc<SimState>,
        permit: Option<OwnedSemaphorePermit>,
        prompt_tokens: u64,
        cached_tokens: u64,
        kv_blocks: u64,
    ) -> Self {
        let c = &state.counters;
        Counters::add(&c.prefix_cache_queries, prompt_tokens);
        Counters::add(&c.prefix_cache_hits, cached_tokens);
        Counters::add(&c.running, 1);
        Counters::add(&c.kv_blocks_in_use, kv_blocks);
        state.meter.change(1, 0);
        Self {
            state,
            phase: Phase::Prefill,
            prompt_tokens,
            kv_blocks,
            permit,
        }
    }

    /// Prefill ends: the prompt counts as processed, power switches to decode.
    pub(crate) fn first_token(&mut self) {
        if self.phase == Phase::Prefill {
            self.phase = Phase::Decode;
            self.state.meter.change(-1, 1);
            Counters::add(&self.state.counters.prompt_tokens, self.prompt_tokens);
        }
    }

    /// `n` completion tokens were sent.
    pub(crate) fn generated(&mut self, n: u64) {
        Counters::add(&self.state.counters.generation_tokens, n);
    }

    /// The request finished normally.
    pub(crate) fn finish(&mut self, reason: FinishReason) {
        if self.phase == Phase::Ended {
            return;
        }
        self.first_token();
        let c = &self.state.counters;
        match reason {
            FinishReason::Length => Counters::add(&c.success_length, 1),
            FinishReason::Stop | FinishReason::ToolCalls => Counters::add(&c.success_stop, 1),
        }
        self.end();
    }

    /// The request ended abnormally (no-op once ended).
    pub(crate) fn abort(&mut self) {
        if self.phase != Phase::Ended {
            Counters::add(&self.state.counters.success_abort, 1);
            self.end();
        }
    }

    fn end(&mut self) {
        match self.phase {
            Phase::Prefill => self.state.meter.change(-1, 0),
            Phase::Decode => self.state.meter.change(0, -1),
            Phase::Ended => return,
        }
        self.phase = Phase::Ended;
        let c = &self.state.counters;
        Counters::sub(&c.running, 1);
        Counters::sub(&c.kv_blocks_in_use, self.kv_blocks);
        self.permit.take();
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.abort();
    }
}
