//! Counter tracking across scrapes (pure): a decrease, or a change of the `_created` start
//! time, is a reset — never a negative delta (field case C15;
//! docs/telemetry.md "Counter resets": an increase is never last minus first).

use super::profile::CreatedSignature;

/// Tracks one canonical counter over successive scrapes and flags resets.
#[derive(Clone, Debug, Default)]
pub struct CounterTracker {
    last_value: Option<u64>,
    last_created: CreatedSignature,
    resets: u32,
}

impl CounterTracker {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one scrape's reading; returns `true` when it starts a new epoch relative to the
    /// last present reading: the value decreased, or both readings carry a `_created` signature
    /// and it changed. A `None` value (counter not exposed, failed scrape) is skipped: the next
    /// present value is compared with the last present one.
    pub fn observe(&mut self, value: Option<u64>, created: &CreatedSignature) -> bool {
        let Some(v) = value else {
            return false;
        };
        let reset = match self.last_value {
            Some(prev) => {
                v < prev
                    || (!created.is_empty()
                        && !self.last_created.is_empty()
                        && *created != self.last_created)
            }
            None => false,
        };
        if reset {
            self.resets += 1;
        }
        self.last_value = Some(v);
        if !created.is_empty() {
            self.last_created = created.clone();
        }
        reset
    }

    /// Resets seen so far.
    pub fn resets(&self) -> u32 {
        self.resets
    }
}

/// The increase of a counter over a series of samples, reset-aware (C15): the report
/// model's.
pub use inferscope_model::telemetry::CounterIncrease;

/// Reset-aware increase over `(value, reset_flag)` samples in time order. A sample's reset
/// flag (as produced by [`CounterTracker::observe`]) marks the interval ending at it as a
/// reset; a value below its predecessor is treated as a reset even when unflagged. `None`
/// values are skipped. C15: `10000, 10500, 300 (reset), 800` → 1300, 1 reset.
pub fn counter_increase(samples: impl IntoIterator<Item = (Option<u64>, bool)>) -> CounterIncrease {
    let mut prev: Option<u64> = None;
    let mut inc: u64 = 0;
    let mut resets = 0u32;
    let mut used = 0u32;
    for (v, flagged) in samples {
        let Some(v) = v else { continue };
        used += 1;
        if let Some(p) = prev {
            if flagged || v < p {
                resets += 1;
                inc = inc.saturating_add(v);
            } else {
                inc = inc.saturating_add(v - p);
            }
        }
        prev = Some(v);
    }
    CounterIncrease {
        increase: (used >= 2).then_some(inc),
        counter_resets: resets,
        lower_bound: resets > 0,
        samples_used: used,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_change_without_decrease_is_a_reset() {
        let mut t = CounterTracker::new();
        let a = vec![("x".to_string(), 1u64)];
        let b = vec![("x".to_string(), 2u64)];
        assert!(!t.observe(Some(10), &a));
        assert!(t.observe(Some(50), &b));
        assert!(!t.observe(Some(60), &b));
        assert_eq!(t.resets(), 1);
        let inc = counter_increase([(Some(10), false), (Some(50), true), (Some(60), false)]);
        assert_eq!(inc.increase, Some(60));
        assert!(inc.lower_bound);
    }

    #[test]
    fn gaps_are_skipped_and_single_sample_has_no_increase() {
        let inc = counter_increase([(Some(5), false), (None, false), (Some(9), false)]);
        assert_eq!(inc.increase, Some(4));
        assert_eq!(inc.counter_resets, 0);
        assert!(!inc.lower_bound);
        let one = counter_increase([(None, false), (Some(9), false)]);
        assert_eq!(one.increase, None);
        let unmoved = counter_increase([(Some(9), false), (Some(9), false)]);
        assert_eq!(unmoved.increase, Some(0));
    }
}
