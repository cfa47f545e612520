//! The simulator's prefix cache: a hash chain over fixed-size token blocks with LRU
//! eviction, as in vLLM's automatic prefix caching. Pure: no I/O.
//!
//! - Block `i` covers tokens `[i·B, (i+1)·B)`; only full blocks are hashed or cached.
//! - `hash_i = H(hash_{i−1}, tokens of block i)` with `hash_{−1}` = [`ROOT_HASH`], where `H`
//!   is FNV-1a-64 over the parent hash's 8 little-endian bytes followed by each token's 4
//!   little-endian bytes, finished with the splitmix64 mixer. A block therefore matches only
//!   when its whole prefix matches.
//! - A lookup counts the leading blocks found, but (as vLLM V1 does, so the last prompt
//!   token is always computed) only among the first `(prompt_tokens − 1) / B` blocks:
//!   `cached_tokens = B × hits`. Then every full block of the prompt is inserted or
//!   refreshed; a request's blocks are refreshed tail first, so under pressure a prompt's
//!   tail is evicted before its head (vLLM frees blocks in reverse order too).
//! - Capacity is in blocks; beyond it the least recently used block is evicted. Capacity
//!   0 disables caching.

use std::collections::{BTreeMap, HashMap};

/// Parent hash of the first block.
pub const ROOT_HASH: u64 = 0x6966_7363_6f70_6573; // "ifscopes"

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// splitmix64 finalizer (a bijective 64-bit mixer), shared with the load and shard seeds.
pub use inferscope_model::stats::mix64;

#[inline]
fn fnv_bytes(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// FNV-1a-64 of a byte string, finished with [`mix64`] (used to seed per-prompt RNGs).
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    mix64(fnv_bytes(FNV_OFFSET, bytes))
}

/// Hash of one block given its parent's hash (definition in the module docs).
pub fn block_hash(parent: u64, tokens: &[u32]) -> u64 {
    let mut h = fnv_bytes(FNV_OFFSET, &parent.to_le_bytes());
    for t in tokens {
        h = fnv_bytes(h, &t.to_le_bytes());
    }
    mix64(h)
}

/// Chained hashes of every full block of `tokens` (a trailing partial block is left out).
pub fn block_hashes(tokens: &[u32], block_size: usize) -> Vec<u64> {
    let bs = block_size.max(1);
    let mut out = Vec::with_capacity(tokens.len() / bs);
    let mut parent = ROOT_HASH;
    for block in tokens.chunks_exact(bs) {
        parent = block_hash(parent, block);
        out.push(parent);
    }
    out
}

/// An LRU set of block hashes.
#[derive(Debug)]
pub struct PrefixCache {
    block_size: usize,
    capacity_blocks: u64,
    /// block hash → last-use tick
    blocks: HashMap<u64, u64>,
    /// last-use tick → block hash (oldest first)
    lru: BTreeMap<u64, u64>,
    tick: u64,
}

impl PrefixCache {
    /// An empty cache of `capacity_blocks` blocks of `block_size` tokens.
    pub fn new(block_size: usize, capacity_blocks: u64) -> Self {
        Self {
            block_size: block_size.max(1),
            capacity_blocks,
            blocks: HashMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
        }
    }

    /// Block size, tokens.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    /// Number of cached blocks.
    pub fn len_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Looks up the prompt's leading blocks, then inserts all of them.
    ///
    /// `hashes` are [`block_hashes`] of the prompt's `prompt_tokens` tokens. Returns the
    /// cached token count (a multiple of the block size, ≤ `prompt_tokens − 1`).
    pub fn lookup_and_insert(&mut self, hashes: &[u64], prompt_tokens: usize) -> usize {
        if self.capacity_blocks == 0 {
            return 0;
        }
        let lookable = (prompt_tokens.saturating_sub(1) / self.block_size).min(hashes.len());
        let hits = hashes[..lookable]
            .iter()
            .take_while(|h| self.blocks.contains_key(h))
            .count();
        for &h in hashes.iter().rev() {
            self.touch(h);
        }
        while self.blocks.len() as u64 > self.capacity_blocks {
            match self.lru.pop_first() {
                Some((_, h)) => {
                    self.blocks.remove(&h);
                }
                None => break,
            }
        }
        hits * self.block_size
    }

    fn touch(&mut self, h: u64) {
        self.tick += 1;
        if let Some(old) = self.blocks.insert(h, self.tick) {
            self.lru.remove(&old);
        }
        self.lru.insert(self.tick, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(n: u32, salt: u32) -> Vec<u32> {
        (0..n)
            .map(|i| i.wrapping_mul(2_654_435_761) ^ salt)
            .collect()
    }

    #[test]
    fn chain_depends_on_prefix() {
        let a = toks(48, 0);
        let mut b = a.clone();
        b[0] ^= 1; // change the first block only
        let (ha, hb) = (block_hashes(&a, 16), block_hashes(&b, 16));
        assert_eq!(ha.len(), 3);
        assert!(
            ha.iter().zip(&hb).all(|(x, y)| x != y),
            "every later block differs"
        );
        assert_eq!(
            block_hashes(&a[..47], 16).len(),
            2,
            "partial block left out"
        );
    }

    #[test]
    fn growing_prompt_hits_leading_blocks() {
        let mut c = PrefixCache::new(16, 1000);
        let p1 = toks(40, 0);
        assert_eq!(c.lookup_and_insert(&block_hashes(&p1, 16), 40), 0);
        let mut p2 = p1.clone();
        p2.extend(toks(30, 9));
        // p1 had two full blocks (32 tokens); both are a prefix of p2.
        assert_eq!(c.lookup_and_insert(&block_hashes(&p2, 16), 70), 32);
        // p2 has 4 full blocks; a third turn extending p2 hits 64.
        let mut p3 = p2.clone();
        p3.extend(toks(5, 3));
        assert_eq!(c.lookup_and_insert(&block_hashes(&p3, 16), 75), 64);
        // A different first block misses everything.
        let q = toks(70, 77);
        assert_eq!(c.lookup_and_insert(&block_hashes(&q, 16), 70), 0);
    }

    #[test]
    fn last_token_is_never_cached() {
        let mut c = PrefixCache::new(16, 1000);
        let p = toks(32, 0);
        let h = block_hashes(&p, 16);
        assert_eq!(c.lookup_and_insert(&h, 32), 0);
        // Same 32-token prompt again: only block 0 is lookable ((32-1)/16 = 1).
        assert_eq!(c.lookup_and_insert(&h, 32), 16);
        // 33 tokens with the same first 32: both blocks lookable.
        let mut q = p.clone();
        q.push(5);
        assert_eq!(c.lookup_and_insert(&block_hashes(&q, 16), 33), 32);
    }

    #[test]
    fn lru_evicts_oldest_and_tail_first() {
        let mut c = PrefixCache::new(4, 4);
        let a = toks(16, 1); // 4 blocks, fills the cache
        let ha = block_hashes(&a, 4);
        c.lookup_and_insert(&ha, 16);
        assert_eq!(c.len_blocks(), 4);
        let b = toks(8, 2); // 2 new blocks evict a's two tail blocks
        c.lookup_and_insert(&block_hashes(&b, 4), 8);
        assert_eq!(c.len_blocks(), 4);
        let mut a2 = a.clone();
        a2.push(0);
        assert_eq!(
            c.lookup_and_insert(&block_hashes(&a2, 4), 17),
            8,
            "head of a survives"
        );
    }

    #[test]
    fn zero_capacity_disables() {
        let mut c = PrefixCache::new(16, 0);
        let h = block_hashes(&toks(64, 0), 16);
        c.lookup_and_insert(&h, 64);
        assert_eq!(c.lookup_and_insert(&h, 65), 0);
        assert_eq!(c.len_blocks(), 0);
    }
}
