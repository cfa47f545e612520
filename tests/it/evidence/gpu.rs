//! GPU selection (`gpu_devices`, `CUDA_VISIBLE_DEVICES`) and MIG through the `GpuDevice`
//! trait, with test doubles of NVML devices (no GPU here).

use std::time::Duration;

use inferscope_bench::clock::RunClock;
use inferscope_bench::telemetry::{
    GpuConfig, GpuDevice, GpuIdentity, GpuSelection, GpuSelector, QueryError, TelemetryConfig,
    select_gpus, start,
};

use super::{offline_join, steps_of};

/// A simulated NVML device: constant instant power, no energy counter, optional MIG.
struct MockGpu {
    index: u32,
    uuid: String,
    name: &'static str,
    power_mw: u64,
    /// `None`: MIG not supported; `Some(enabled)`.
    mig: Option<bool>,
    instances: Vec<String>,
}

impl GpuDevice for MockGpu {
    fn identity(&self) -> GpuIdentity {
        GpuIdentity {
            index: self.index,
            uuid: Some(self.uuid.clone()),
            name: Some(self.name.into()),
        }
    }
    fn power_instant_mw(&mut self) -> Result<u64, QueryError> {
        Ok(self.power_mw)
    }
    fn power_usage_mw(&mut self) -> Result<u64, QueryError> {
        Ok(self.power_mw)
    }
    fn total_energy_mj(&mut self) -> Result<u64, QueryError> {
        Err(QueryError::NotSupported("NotSupported".into()))
    }
    fn memory_used_bytes(&mut self) -> Result<u64, QueryError> {
        Ok(1 << 30)
    }
    fn utilization_pct(&mut self) -> Result<(u32, u32), QueryError> {
        Ok((50, 10))
    }
    fn mig_mode(&mut self) -> Result<bool, QueryError> {
        self.mig
            .ok_or_else(|| QueryError::NotSupported("NotSupported".into()))
    }
    fn mig_instance_uuids(&mut self) -> Result<Vec<String>, QueryError> {
        Ok(self.instances.clone())
    }
}

fn mig_a100() -> MockGpu {
    MockGpu {
        index: 0,
        uuid: "GPU-mig-parent".into(),
        name: "Mock A100",
        power_mw: 300_000,
        mig: Some(true),
        instances: vec!["MIG-aaaa-1111".into(), "MIG-bbbb-2222".into()],
    }
}

fn plain(index: u32, uuid: &str) -> MockGpu {
    MockGpu {
        index,
        uuid: uuid.into(),
        name: "Mock L4",
        power_mw: 100_000,
        mig: None,
        instances: vec![],
    }
}

fn three() -> Vec<MockGpu> {
    vec![mig_a100(), plain(1, "GPU-bbbb"), plain(2, "GPU-cccc")]
}

fn sel(devices: Option<Vec<GpuSelector>>, cvd: Option<&str>, order: Option<&str>) -> GpuSelection {
    GpuSelection {
        devices,
        cuda_visible_devices: cvd.map(str::to_string),
        cuda_device_order: order.map(str::to_string),
    }
}

fn picked(c: &inferscope_bench::telemetry::gpu::GpuChoice<MockGpu>) -> Vec<u32> {
    c.selected.iter().map(|s| s.device.index).collect()
}

#[test]
fn selection_by_suite_list_environment_or_all() {
    let all = select_gpus(three(), &sel(None, None, None));
    assert_eq!(picked(&all), vec![0, 1, 2]);
    assert!(all.none_reason.is_none());

    // The suite's list: index and UUID (also by unique prefix); it wins over the env.
    let c = select_gpus(
        three(),
        &sel(
            Some(vec![
                GpuSelector::Uuid("GPU-cc".into()),
                GpuSelector::Index(1),
            ]),
            Some("0"),
            None,
        ),
    );
    assert_eq!(picked(&c), vec![1, 2]);
    assert!(
        c.notes
            .iter()
            .any(|n| n.contains("CUDA_VISIBLE_DEVICES of the benchmark's environment is not used")),
        "{:?}",
        c.notes
    );
    let bad = select_gpus(three(), &sel(Some(vec![GpuSelector::Index(5)]), None, None));
    assert!(bad.selected.is_empty());
    assert_eq!(
        bad.none_reason.as_deref(),
        Some("gpu_devices entry 5: no GPU with NVML index 5")
    );

    // CUDA_VISIBLE_DEVICES: UUIDs match exactly; ordinals are NVML indices with a caveat
    // unless CUDA_DEVICE_ORDER=PCI_BUS_ID.
    let c = select_gpus(three(), &sel(None, Some("GPU-bbbb"), None));
    assert_eq!(picked(&c), vec![1]);
    let c = select_gpus(three(), &sel(None, Some("2,1"), None));
    assert_eq!(picked(&c), vec![1, 2]);
    assert!(
        c.notes.iter().any(|n| n.contains("PCI_BUS_ID")),
        "{:?}",
        c.notes
    );
    let c = select_gpus(three(), &sel(None, Some("2,1"), Some("PCI_BUS_ID")));
    assert!(
        !c.notes.iter().any(|n| n.contains("PCI_BUS_ID")),
        "{:?}",
        c.notes
    );
    // As CUDA does, the list ends at the first entry naming no device.
    let c = select_gpus(three(), &sel(None, Some("1,7,2"), Some("PCI_BUS_ID")));
    assert_eq!(picked(&c), vec![1]);
    assert!(
        c.notes.iter().any(|n| n.contains("entry 7")),
        "{:?}",
        c.notes
    );
    // Hidden: no device, with the reason.
    for hide in ["", "-1"] {
        let c = select_gpus(three(), &sel(None, Some(hide), None));
        assert!(c.selected.is_empty());
        assert!(c.none_reason.unwrap().contains("hides every GPU"));
    }
}

#[test]
fn mig_instances_are_not_attributable_naming_the_parent() {
    // A MIG instance UUID selects its parent, which is not attributable.
    let c = select_gpus(three(), &sel(None, Some("MIG-bbbb-2222"), None));
    assert_eq!(picked(&c), vec![0]);
    let s = &c.selected[0];
    assert!(s.mig.as_ref().unwrap().enabled);
    let why = s.not_attributable.as_deref().unwrap();
    assert!(
        why.starts_with("gpu0 (GPU-mig-parent, Mock A100) is in MIG mode"),
        "{why}"
    );
    assert!(
        why.contains("cannot be attributed at instance granularity"),
        "{why}"
    );
    assert!(why.contains("selected instance MIG-bbbb-2222"), "{why}");
    assert!(why.contains("MIG-aaaa-1111, MIG-bbbb-2222"), "{why}");
    // The parent in MIG mode selected directly: still not attributable.
    let c = select_gpus(three(), &sel(Some(vec![GpuSelector::Index(0)]), None, None));
    assert!(c.selected[0].not_attributable.is_some());
    // A device without MIG, or with MIG disabled, is attributable.
    let mut off = mig_a100();
    off.mig = Some(false);
    let c = select_gpus(vec![off, plain(1, "GPU-bbbb")], &sel(None, None, None));
    assert!(c.selected.iter().all(|s| s.not_attributable.is_none()));
}

/// Samples two mock GPUs (gpu0 in MIG mode, gpu1 not) through the real sampler thread,
/// writes `samples/`, and joins two steps offline. gpu0 keeps its lane but never gets a
/// per-step figure; the output says why.
fn sample_and_join(devices: Vec<MockGpu>) -> (serde_json::Value, String, serde_json::Value) {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(10),
        gpu: Some(GpuConfig {
            selection: GpuSelection::default(),
        }),
        gpu_opener: Some(Box::new(move || {
            Ok(devices
                .into_iter()
                .map(|d| Box::new(d) as Box<dyn GpuDevice>)
                .collect())
        })),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(400));
    let t = h.stop();
    let dir = tempfile::tempdir().unwrap();
    let sdir = t.write_samples(dir.path()).unwrap();
    let a = t.reference_instant_unix_ns;
    let s0 = t.started_elapsed_ns;
    let ms = 1_000_000u64;
    let steps = dir.path().join("steps.jsonl");
    super::write_steps(
        &steps,
        &[
            (1, "llm_call", a + s0 + 50 * ms, a + s0 + 200 * ms),
            (2, "tool", a + s0 + 200 * ms, a + s0 + 350 * ms),
        ],
    );
    let (v, stdout) = offline_join(&["--samples", sdir.to_str().unwrap()], &steps, dir.path());
    let sources: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sdir.join("sources.json")).unwrap()).unwrap();
    (v, stdout, sources)
}

#[test]
fn mig_device_keeps_its_lane_but_gets_no_step_energy() {
    let (v, stdout, sources) = sample_and_join(vec![mig_a100(), plain(1, "GPU-bbbb")]);
    let devs = sources["power"]["devices"].as_array().unwrap();
    assert_eq!(devs.len(), 2, "one lane per device");
    assert!(
        devs[0]["not_attributable"]
            .as_str()
            .unwrap()
            .contains("gpu0 (GPU-mig-parent, Mock A100) is in MIG mode"),
        "{sources:#}"
    );
    assert_eq!(devs[0]["mig"]["enabled"], true);
    assert!(devs[1]["not_attributable"].is_null());
    assert!(
        stdout.contains(
            "note: gpu0: not attributable: gpu0 (GPU-mig-parent, Mock A100) is in MIG mode"
        ),
        "{stdout}"
    );
    for s in steps_of(&v) {
        let devices: Vec<&str> = s["devices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["device"].as_str().unwrap())
            .collect();
        assert_eq!(devices, vec!["gpu1"], "{s:#}");
        // gpu1 alone: 100 W over the fully covered segments, measured.
        let e = s["energy_mj"].as_u64().unwrap();
        assert!(e > 0, "{s:#}");
        assert_eq!(s["energy_basis"], "measured");
    }
}

#[test]
fn only_a_mig_device_gives_null_step_energy_never_a_measured_figure() {
    let (v, stdout, _) = sample_and_join(vec![mig_a100()]);
    assert!(stdout.contains("is in MIG mode"), "{stdout}");
    for s in steps_of(&v) {
        assert!(s["energy_mj"].is_null(), "{s:#}");
        assert!(s["energy_basis"].is_null(), "{s:#}");
    }
}
