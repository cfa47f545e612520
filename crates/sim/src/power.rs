//! Simulated board power and a cumulative energy counter, so energy attribution can be
//! exercised without a GPU. Every consumer labels these figures `simulated`.
//!
//! Model: `power_mw = min(max_mw, idle_mw + prefill_mw × active prefills + decode_mw ×
//! active decodes)`. A request is an active prefill from admission to its first token and
//! an active decode from its first token to its end. Defaults (illustrative H100-class
//! figures, not measurements): idle 60 W, +200 W per active prefill, +25 W per active
//! decode, capped at 700 W.
//!
//! Energy is integrated by the simulator itself at every state change, in exact integer
//! arithmetic: `mW × ns = pJ`, carried as whole mJ plus a pJ remainder (< 10⁹), so no
//! rounding error accumulates. Reads are lock-free (a sequence lock over atomics) and
//! extrapolate from the last change at the current power, so the counter advances
//! continuously and is monotonic. Units follow NVML (`nvmlDeviceGetTotalEnergyConsumption`
//! is mJ, `nvmlDeviceGetPowerUsage` is mW; docs/measurement.md).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::time::Instant;

const PJ_PER_MJ: u128 = 1_000_000_000;

/// Constants of the simulated power model, all in milliwatts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerModel {
    /// Power with no active request, mW (default 60 000).
    pub idle_mw: u64,
    /// Added per request in prefill (admission → first token), mW (default 200 000).
    pub prefill_mw: u64,
    /// Added per request in decode (first token → end), mW (default 25 000).
    pub decode_mw: u64,
    /// Upper bound of the total, mW (default 700 000).
    pub max_mw: u64,
}

impl Default for PowerModel {
    fn default() -> Self {
        Self {
            idle_mw: 60_000,
            prefill_mw: 200_000,
            decode_mw: 25_000,
            max_mw: 700_000,
        }
    }
}

impl PowerModel {
    /// Board power in mW for the given numbers of active prefills and decodes.
    pub fn power_mw(&self, prefills: u64, decodes: u64) -> u64 {
        self.idle_mw
            .saturating_add(self.prefill_mw.saturating_mul(prefills))
            .saturating_add(self.decode_mw.saturating_mul(decodes))
            .min(self.max_mw.max(self.idle_mw))
    }
}

/// Pure energy integrator: piecewise-constant power over logical time (ns).
///
/// `advance(now, p)` closes the segment since the last change at the old power and starts
/// a new one at `p`; `energy_mj_at(now)` is the floored integral up to `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnergyIntegrator {
    /// Whole millijoules integrated up to `last_ns`.
    pub base_mj: u64,
    /// Remainder below one mJ, picojoules (< 10⁹).
    pub rem_pj: u64,
    /// Time of the last power change, ns on the integrator's clock.
    pub last_ns: u64,
    /// Power since `last_ns`, mW.
    pub power_mw: u64,
}

impl EnergyIntegrator {
    /// Starts at zero energy at time `now_ns` with power `power_mw`.
    pub fn new(now_ns: u64, power_mw: u64) -> Self {
        Self {
            base_mj: 0,
            rem_pj: 0,
            last_ns: now_ns,
            power_mw,
        }
    }

    fn total_pj_at(&self, now_ns: u64) -> u128 {
        let dt = u128::from(now_ns.saturating_sub(self.last_ns));
        u128::from(self.rem_pj) + u128::from(self.power_mw) * dt
    }

    /// Cumulative energy at `now_ns` (≥ `last_ns`), floored to whole mJ.
    pub fn energy_mj_at(&self, now_ns: u64) -> u64 {
        let whole = self.total_pj_at(now_ns) / PJ_PER_MJ;
        self.base_mj
            .saturating_add(u64::try_from(whole).unwrap_or(u64::MAX))
    }

    /// Integrates up to `now_ns` at the current power, then switches to `power_mw`.
    pub fn advance(&mut self, now_ns: u64, power_mw: u64) {
        let total = self.total_pj_at(now_ns);
        self.base_mj = self
            .base_mj
            .saturating_add(u64::try_from(total / PJ_PER_MJ).unwrap_or(u64::MAX));
        self.rem_pj = (total % PJ_PER_MJ) as u64;
        self.last_ns = self.last_ns.max(now_ns);
        self.power_mw = power_mw;
    }
}

/// Active-request counts, changed only under the meter's writer lock.
#[derive(Debug, Default)]
struct Activity {
    prefills: u64,
    decodes: u64,
}

/// The live meter: a sequence lock publishing an [`EnergyIntegrator`] through atomics.
#[derive(Debug)]
pub(crate) struct EnergyMeter {
    model: PowerModel,
    origin: Instant,
    writer: Mutex<Activity>,
    seq: AtomicU64,
    base_mj: AtomicU64,
    rem_pj: AtomicU64,
    last_ns: AtomicU64,
    power_mw: AtomicU64,
}

impl EnergyMeter {
    pub(crate) fn new(model: PowerModel) -> Self {
        Self {
            model,
            origin: Instant::now(),
            writer: Mutex::new(Activity::default()),
            seq: AtomicU64::new(0),
            base_mj: AtomicU64::new(0),
            rem_pj: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
            power_mw: AtomicU64::new(model.power_mw(0, 0)),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Current simulated power, mW (one atomic load).
    pub(crate) fn power_mw(&self) -> u64 {
        self.power_mw.load(SeqCst)
    }

    /// Cumulative simulated energy, mJ (lock-free; retries while a change is published).
    pub(crate) fn energy_mj(&self) -> u64 {
        loop {
            let s1 = self.seq.load(SeqCst);
            if s1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let snap = EnergyIntegrator {
                base_mj: self.base_mj.load(SeqCst),
                rem_pj: self.rem_pj.load(SeqCst),
                last_ns: self.last_ns.load(SeqCst),
                power_mw: self.power_mw.load(SeqCst),
            };
            // The clock is read before the closing sequence check; a writer reads it only
            // after making the sequence odd, so a consistent snapshot never extends past
            // the next change and reads stay monotonic.
            let now = self.now_ns();
            if self.seq.load(SeqCst) == s1 {
                return snap.energy_mj_at(now);
            }
        }
    }

    /// Applies a change of the active prefill/decode counts (saturating at 0).
    pub(crate) fn change(&self, d_prefill: i64, d_decode: i64) {
        let mut act = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        act.prefills = act.prefills.saturating_add_signed(d_prefill);
        act.decodes = act.decodes.saturating_add_signed(d_decode);
        let new_power = self.model.power_mw(act.prefills, act.decodes);
        self.seq.fetch_add(1, SeqCst);
        let now = self.now_ns();
        let mut integ = EnergyIntegrator {
            base_mj: self.base_mj.load(SeqCst),
            rem_pj: self.rem_pj.load(SeqCst),
            last_ns: self.last_ns.load(SeqCst),
            power_mw: self.power_mw.load(SeqCst),
        };
        integ.advance(now, new_power);
        self.base_mj.store(integ.base_mj, SeqCst);
        self.rem_pj.store(integ.rem_pj, SeqCst);
        self.last_ns.store(integ.last_ns, SeqCst);
        self.power_mw.store(integ.power_mw, SeqCst);
        self.seq.fetch_add(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_model_terms_and_cap() {
        let m = PowerModel::default();
        assert_eq!(m.power_mw(0, 0), 60_000);
        assert_eq!(m.power_mw(1, 0), 260_000);
        assert_eq!(m.power_mw(0, 2), 110_000);
        assert_eq!(m.power_mw(1, 2), 310_000);
        assert_eq!(m.power_mw(10, 10), 700_000);
    }

    #[test]
    fn integrator_is_exact() {
        // 60 W for 1 s = 60 J = 60 000 mJ.
        let mut i = EnergyIntegrator::new(0, 60_000);
        assert_eq!(i.energy_mj_at(1_000_000_000), 60_000);
        // 1 mW for 999 999 ns = 0.999999 mJ → floored 0, remainder kept.
        let mut j = EnergyIntegrator::new(0, 1);
        j.advance(999_999_999, 1);
        assert_eq!(j.energy_mj_at(999_999_999), 0);
        assert_eq!(j.rem_pj, 999_999_999);
        // One more ns completes exactly 1 mJ.
        assert_eq!(j.energy_mj_at(1_000_000_000), 1);
        // Segments: 60 W × 0.5 s + 260 W × 0.25 s + 60 W × 0.25 s = 30 + 65 + 15 J.
        i.advance(500_000_000, 260_000);
        i.advance(750_000_000, 60_000);
        assert_eq!(i.energy_mj_at(1_000_000_000), 110_000);
    }

    #[test]
    fn integrator_remainders_do_not_drift() {
        // 3 mW changed every 1 ns 10⁹ times would be slow; use 10⁶ steps of 1 µs at 1 W:
        // exactly 1 W × 1 s = 1000 mJ.
        let mut i = EnergyIntegrator::new(0, 1_000);
        for k in 1..=1_000_000u64 {
            i.advance(k * 1_000, 1_000);
        }
        assert_eq!(i.energy_mj_at(1_000_000_000), 1_000);
    }

    #[test]
    fn meter_reads_are_monotonic_and_follow_changes() {
        let meter = EnergyMeter::new(PowerModel::default());
        assert_eq!(meter.power_mw(), 60_000);
        meter.change(1, 0);
        assert_eq!(meter.power_mw(), 260_000);
        meter.change(-1, 1);
        assert_eq!(meter.power_mw(), 85_000);
        meter.change(0, -1);
        assert_eq!(meter.power_mw(), 60_000);
        // Saturates instead of underflowing.
        meter.change(-5, -5);
        assert_eq!(meter.power_mw(), 60_000);
        let mut last = 0;
        for _ in 0..1000 {
            let e = meter.energy_mj();
            assert!(e >= last);
            last = e;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        // At least 60 W × 20 ms = 1200 mJ have accrued (lower bound only).
        assert!(meter.energy_mj() >= 1_200, "{}", meter.energy_mj());
    }
}
