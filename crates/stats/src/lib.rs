//! Request statistics: see [`inferscope_model::stats`], where they live as part of the report
//! model; re-exported here for the callers that compute them. Also the one seed mixer that
//! makes seeded sampling reproducible ([`mix64`]): load points' arrival seeds, shard
//! seeds and the simulator's per-prompt generators all derive from it.

pub use inferscope_model::stats::*;

/// splitmix64 finalizer: a bijective 64-bit mixer (Steele, Lea & Flood, "Fast splittable
/// pseudorandom number generators", 2014). Stable across runs, hosts and Rust versions, so
/// a seed derived with it names the same stream everywhere.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::mix64;

    /// splitmix64's published finalizer on fixed inputs: a changed constant or shift would
    /// silently re-seed every saved load schedule and shard assignment.
    #[test]
    fn mix64_is_the_splitmix64_finalizer() {
        assert_eq!(mix64(0), 0);
        // First output of splitmix64 seeded with 0: mix64(0 + golden gamma).
        assert_eq!(mix64(0x9E37_79B9_7F4A_7C15), 0xe220_a839_7b1d_cdaf);
        assert_ne!(mix64(1), mix64(2));
    }
}
