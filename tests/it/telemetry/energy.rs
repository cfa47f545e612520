use inferscope_bench::telemetry::{
    EnergyMethod, EnergyPoint, GpuDevice, GpuIdentity, GpuSampler, PowerBasis, PowerTimeline,
    QueryError, SourceStatus, whole_run_energy,
};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

const MS: u64 = 1_000_000;

fn pt(ms: u64, power_mw: Option<u64>, energy_mj: Option<u64>) -> EnergyPoint {
    EnergyPoint {
        elapsed_ns: ms * MS,
        power_mw,
        energy_mj,
    }
}

/// C19 device 0: counter NotSupported; power 100/200/200/100 W at 0/100/200/300 ms → 50 J by
/// trapezoid.
#[test]
fn c19_device0_power_integration() {
    let s = whole_run_energy(&[
        pt(0, Some(100_000), None),
        pt(100, Some(200_000), None),
        pt(200, Some(200_000), None),
        pt(300, Some(100_000), None),
    ]);
    assert_eq!(s.energy_mj, Some(50_000));
    assert_eq!(s.energy_method, Some(EnergyMethod::PowerIntegration));
    assert_eq!(s.reason, None);
    assert!(!s.lower_bound);
    assert_eq!(s.power_coverage, Some(1.0));
    assert_eq!(s.warnings.len(), 1, "warned once: {:?}", s.warnings);
}

/// C19 device 1: neither counter nor power → null with reason `not_supported`, coverage 0.
#[test]
fn c19_device1_nothing_supported() {
    let s = whole_run_energy(&[pt(0, None, None), pt(100, None, None), pt(200, None, None)]);
    assert_eq!(s.energy_mj, None);
    assert_eq!(s.energy_method, None);
    assert_eq!(s.reason.as_deref(), Some("not_supported"));
    assert_eq!(s.power_coverage, Some(0.0));
}

/// C19 device 2: counter 5,000,000 → 4,000 mJ with 150 W at both samples 100 ms apart: the
/// reset interval is power-integrated (15 J); never negative or wrapped.
#[test]
fn c19_device2_counter_decrease_uses_power_for_that_interval() {
    let s = whole_run_energy(&[
        pt(0, Some(150_000), Some(5_000_000)),
        pt(100, Some(150_000), Some(4_000)),
    ]);
    assert_eq!(s.energy_mj, Some(15_000));
    assert_eq!(s.energy_method, Some(EnergyMethod::PowerIntegration));
    assert_eq!(s.counter_resets, 1);
    assert_eq!(s.intervals_power, 1);
}

#[test]
fn counter_preferred_and_epochs_bridged() {
    // 1 s at 300 W by counter, a reset bridged by 150 W power, then 200 J by counter.
    let s = whole_run_energy(&[
        pt(0, Some(300_000), Some(1_000_000)),
        pt(1000, Some(300_000), Some(1_300_000)),
        pt(1100, Some(150_000), Some(10)),
        pt(2100, Some(200_000), Some(200_010)),
    ]);
    assert_eq!(s.intervals_counter, 2);
    assert_eq!(s.intervals_power, 1);
    assert_eq!(s.energy_mj, Some(300_000 + 22_500 + 200_000));
    assert_eq!(s.energy_method, Some(EnergyMethod::Mixed));
    assert_eq!(s.counter_mj, Some(500_000));
    // Whole-run trapezoid over every interval, for the counter/trapezoid quality ratio.
    assert_eq!(s.power_integral_mj, Some(300_000 + 22_500 + 175_000));
}

#[test]
fn counter_only_and_implausible_jump() {
    let only = whole_run_energy(&[
        pt(0, None, Some(100)),
        pt(50, None, Some(100)),
        pt(150, None, Some(40_100)),
    ]);
    assert_eq!(only.energy_mj, Some(40_000));
    assert_eq!(only.energy_method, Some(EnergyMethod::Counter));
    assert_eq!(only.power_coverage, Some(0.0));

    // A jump implying far more than 5 kW is an anomaly; power bridges it.
    let jump = whole_run_energy(&[
        pt(0, Some(100_000), Some(0)),
        pt(100, Some(100_000), Some(1_000_000_000_000)),
    ]);
    assert_eq!(jump.counter_anomalies, 1);
    assert_eq!(jump.energy_mj, Some(10_000));
}

#[test]
fn reset_without_power_gives_no_figure() {
    // The one window rule: a reset the power cannot fill leaves no counter figure.
    let s = whole_run_energy(&[pt(0, None, Some(5_000_000)), pt(100, None, Some(4_000))]);
    assert_eq!(s.energy_mj, None);
    assert_eq!(s.reason.as_deref(), Some("no_valid_intervals"));
    assert_eq!(s.counter_resets, 1);
    assert!(!s.lower_bound);
    let one = whole_run_energy(&[pt(0, Some(1), None)]);
    assert_eq!(one.energy_mj, None);
    assert_eq!(one.reason.as_deref(), Some("too_few_samples"));
}

/// A sample without the counter is spanned by the counter's increment across it, as in a
/// step or load window; a counter that starts late leaves the figure a lower bound.
#[test]
fn missing_counter_is_spanned_and_a_late_counter_is_a_lower_bound() {
    let s = whole_run_energy(&[
        pt(0, Some(100_000), Some(1_000)),
        pt(100, Some(900_000), None),
        pt(200, Some(100_000), Some(31_000)),
    ]);
    assert_eq!(s.energy_mj, Some(30_000));
    assert_eq!(s.energy_method, Some(EnergyMethod::Counter));
    assert_eq!((s.intervals_counter, s.intervals_power), (1, 0));
    assert!(!s.lower_bound);
    // The power-only trapezoid over the span, for the quality ratio.
    assert_eq!(s.power_integral_mj, Some(100_000));

    let late = whole_run_energy(&[
        pt(0, Some(100_000), None),
        pt(100, Some(100_000), Some(1_000)),
        pt(200, Some(100_000), Some(11_000)),
    ]);
    assert_eq!(late.energy_mj, Some(10_000));
    assert_eq!(late.intervals_missing, 1);
    assert!(late.lower_bound);
}

/// A simulated NVML device: scripted answers per field; counts calls.
struct FakeGpu {
    index: u32,
    instant: Result<(), QueryError>,
    usage: VecDeque<Result<u64, QueryError>>,
    energy: VecDeque<Result<u64, QueryError>>,
    energy_calls: Arc<AtomicU32>,
    instant_calls: Arc<AtomicU32>,
}

fn ns() -> QueryError {
    QueryError::NotSupported("NotSupported".into())
}

impl GpuDevice for FakeGpu {
    fn identity(&self) -> GpuIdentity {
        GpuIdentity {
            index: self.index,
            uuid: Some(format!("GPU-fake-{}", self.index)),
            name: Some("Fake".into()),
        }
    }
    fn power_instant_mw(&mut self) -> Result<u64, QueryError> {
        self.instant_calls.fetch_add(1, Ordering::SeqCst);
        match &self.instant {
            Ok(()) => unreachable!("not scripted"),
            Err(e) => Err(e.clone()),
        }
    }
    fn power_usage_mw(&mut self) -> Result<u64, QueryError> {
        self.usage.pop_front().unwrap_or_else(|| Err(ns()))
    }
    fn total_energy_mj(&mut self) -> Result<u64, QueryError> {
        self.energy_calls.fetch_add(1, Ordering::SeqCst);
        self.energy.pop_front().unwrap_or_else(|| Err(ns()))
    }
    fn memory_used_bytes(&mut self) -> Result<u64, QueryError> {
        Err(ns())
    }
    fn utilization_pct(&mut self) -> Result<(u32, u32), QueryError> {
        Err(QueryError::Failed("Unknown".into()))
    }
}

fn fake(
    index: u32,
    usage: Vec<Result<u64, QueryError>>,
    energy: Vec<Result<u64, QueryError>>,
) -> (FakeGpu, Arc<AtomicU32>, Arc<AtomicU32>) {
    let e = Arc::new(AtomicU32::new(0));
    let i = Arc::new(AtomicU32::new(0));
    (
        FakeGpu {
            index,
            instant: Err(ns()),
            usage: usage.into(),
            energy: energy.into(),
            energy_calls: e.clone(),
            instant_calls: i.clone(),
        },
        e,
        i,
    )
}

/// C19 end to end through the device sampler: NotSupported is recorded once per field and never
/// retried; `power_usage` is flagged averaged; epochs advance on a decrease; the whole-run
/// energies are 50 J, null/not_supported and 15 J.
#[test]
fn c19_simulated_nvml_through_the_sampler() {
    let (d0, e0_calls, i0_calls) = fake(
        0,
        [100_000, 200_000, 200_000, 100_000].map(Ok).into(),
        vec![Err(ns())],
    );
    let (d1, e1_calls, _) = fake(1, vec![Err(ns())], vec![Err(ns())]);
    let (d2, _, _) = fake(
        2,
        vec![Ok(150_000), Ok(150_000)],
        vec![Ok(5_000_000), Ok(4_000)],
    );
    let mut s0 = GpuSampler::new(d0, 0);
    let mut s1 = GpuSampler::new(d1, 1);
    let mut s2 = GpuSampler::new(d2, 2);
    let mut samples = Vec::new();
    for k in 0..4u64 {
        samples.push(s0.sample(k * 100 * MS));
        samples.push(s1.sample(k * 100 * MS));
        if k < 2 {
            samples.push(s2.sample(k * 100 * MS));
        }
    }
    assert_eq!(
        e0_calls.load(Ordering::SeqCst),
        1,
        "energy NotSupported asked once"
    );
    assert_eq!(
        i0_calls.load(Ordering::SeqCst),
        1,
        "instant power NotSupported asked once"
    );
    assert_eq!(e1_calls.load(Ordering::SeqCst), 1);
    let d0_samples: Vec<_> = samples.iter().filter(|s| s.device == 0).collect();
    assert!(
        d0_samples
            .iter()
            .all(|s| s.power_basis == Some(PowerBasis::Averaged1s))
    );
    assert!(
        d0_samples
            .iter()
            .all(|s| s.energy_mj.is_none() && s.energy_epoch.is_none())
    );
    let d2_epochs: Vec<_> = samples
        .iter()
        .filter(|s| s.device == 2)
        .map(|s| s.energy_epoch)
        .collect();
    assert_eq!(d2_epochs, vec![Some(0), Some(1)]);

    let desc0 = s0.describe();
    assert_eq!(desc0.status, SourceStatus::Ok);
    assert_eq!(
        desc0.unsupported["total_energy_consumption"],
        "NotSupported"
    );
    assert_eq!(desc0.unsupported["power_instant"], "NotSupported");
    assert!(!desc0.unsupported.contains_key("power_usage"));
    assert_eq!(desc0.errors["utilization_rates"].count, 4);
    assert_eq!(desc0.uuid.as_deref(), Some("GPU-fake-0"));
    assert_eq!(desc0.power_basis, Some(PowerBasis::Averaged1s));
    let desc1 = s1.describe();
    assert!(
        matches!(&desc1.status, SourceStatus::Unavailable { reason } if reason.contains("not_supported"))
    );

    let mut tl = PowerTimeline {
        gpu_status: Some(SourceStatus::Ok),
        period_ns: 100 * MS,
        devices: vec![desc0, desc1, s2.describe()],
        sample_count: samples.len() as u64,
        dropped: 0,
        gpu_notes: Vec::new(),
        samples,
    };
    tl.compute_energy();
    let e: Vec<_> = tl
        .devices
        .iter()
        .map(|d| d.energy.clone().unwrap())
        .collect();
    assert_eq!(e[0].energy_mj, Some(50_000));
    assert_eq!(e[0].energy_method, Some(EnergyMethod::PowerIntegration));
    assert_eq!(e[1].energy_mj, None);
    assert_eq!(e[1].reason.as_deref(), Some("not_supported"));
    assert_eq!(e[1].power_coverage, Some(0.0));
    assert_eq!(e[2].energy_mj, Some(15_000));
    assert_eq!(e[2].counter_resets, 1);
}

#[test]
fn lost_gpu_ends_the_device() {
    let (mut d, _, _) = fake(
        3,
        vec![Ok(1000), Err(QueryError::Lost("GpuLost".into()))],
        vec![Err(ns())],
    );
    d.instant = Err(ns());
    let mut s = GpuSampler::new(d, 0);
    let a = s.sample(10);
    assert_eq!(a.power_mw, Some(1000));
    let _ = s.sample(20);
    assert!(s.is_lost());
    assert_eq!(
        s.describe().status,
        SourceStatus::Ended {
            at_elapsed_ns: Some(20),
            reason: "GpuLost".into()
        }
    );
}
