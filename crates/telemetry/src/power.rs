//! Power sources: NVIDIA GPUs through `nvml-wrapper` 0.13 and pluggable [`PowerProbe`]s
//! (the simulator's `simulated` source), sampled on one thread loop.
//!
//! NVML policy (docs/telemetry.md "Power (NVML and probes)"; field cases C19,
//! C20): `Nvml::init()` failing (no library, no driver, no permission) or no device makes the
//! `gpu` source `unavailable` with the reason — never zeros. Per device: index, UUID, name;
//! power from the field value `NVML_FI_DEV_POWER_INSTANT` (186) when supported, else
//! `power_usage()` flagged [`PowerBasis::Averaged1s`] (a 1 s trailing average on Ampere except
//! GA100 and newer, so treated as averaged); `total_energy_consumption()` (mJ, since driver
//! load; a decrease starts a new `energy_epoch`); `memory_info().used` (bytes);
//! `utilization_rates()` (%). A query answering `NotSupported` (or a missing symbol) is recorded
//! once as that device's per-field reason and never asked again; other errors are counted per
//! field; `GpuLost` ends the device.

use super::SourceStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a power figure means: the report model's (`instant`, `averaged_1s`, `simulated`).
pub use inferscope_model::basis::PowerBasis;

/// One reading of a [`PowerProbe`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeReading {
    /// Power, mW; `None` when the probe cannot say.
    pub power_mw: Option<u64>,
    /// Cumulative energy, mJ (monotonic within an epoch); `None` when the probe has no counter.
    pub energy_mj: Option<u64>,
}

/// A pluggable power source sampled on the same thread loop as the GPUs (e.g. the simulator's
/// power model with basis [`PowerBasis::Simulated`]), so the whole energy path runs without a
/// GPU. `read` is called once per sampling period and must not block for long.
pub trait PowerProbe: Send + 'static {
    /// A short label naming the source (e.g. `"sim"`); it becomes the device label.
    fn label(&self) -> &str;
    /// What the power figures mean.
    fn basis(&self) -> PowerBasis;
    /// One reading, now.
    fn read(&mut self) -> ProbeReading;
}

/// Closure adapter for [`PowerProbe`]: see [`probe_fn`].
pub struct FnProbe<F> {
    label: String,
    basis: PowerBasis,
    f: F,
}

impl<F: FnMut() -> ProbeReading + Send + 'static> PowerProbe for FnProbe<F> {
    fn label(&self) -> &str {
        &self.label
    }
    fn basis(&self) -> PowerBasis {
        self.basis
    }
    fn read(&mut self) -> ProbeReading {
        (self.f)()
    }
}

/// Wraps a closure as a boxed [`PowerProbe`], e.g.
/// `probe_fn("sim", PowerBasis::Simulated, move || ProbeReading { power_mw: Some(sim.power_mw()), energy_mj: Some(sim.energy_mj()) })`.
pub fn probe_fn<F>(label: impl Into<String>, basis: PowerBasis, f: F) -> Box<dyn PowerProbe>
where
    F: FnMut() -> ProbeReading + Send + 'static,
{
    Box::new(FnProbe {
        label: label.into(),
        basis,
        f,
    })
}

/// One power sample of one device (a line of `samples/gpu.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerSample {
    /// ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// The device id in this run (index into [`super::PowerTimeline::devices`]).
    pub device: u32,
    /// Power, mW.
    pub power_mw: Option<u64>,
    /// What `power_mw` means; `None` with it.
    pub power_basis: Option<PowerBasis>,
    /// Cumulative energy counter, mJ.
    pub energy_mj: Option<u64>,
    /// Counter epoch: starts at 0 and increments whenever the counter decreases (driver
    /// reload; C19 device 2). `None` with `energy_mj`.
    pub energy_epoch: Option<u32>,
    /// Device memory used, bytes.
    pub memory_used_bytes: Option<u64>,
    /// GPU utilisation over the driver's last sample period, %.
    pub utilization_gpu_pct: Option<u32>,
    /// Memory-controller utilisation, %.
    pub utilization_memory_pct: Option<u32>,
}

/// Whether a power device is an NVML GPU or a probe: the report model's.
pub use inferscope_model::telemetry::PowerDeviceKind;

/// Errors of one field of one device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldErrors {
    /// How many queries failed.
    pub count: u64,
    /// The last error text.
    pub last: String,
}

/// One power device of the run and what it could and could not report
/// (`samples/sources.json` → `power.devices[]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerDevice {
    /// Id used in [`PowerSample::device`].
    pub device: u32,
    /// NVML GPU or probe.
    pub kind: PowerDeviceKind,
    /// `gpu<index>` for GPUs, the probe's label otherwise.
    pub label: String,
    /// NVML device index.
    pub index: Option<u32>,
    /// NVML UUID.
    pub uuid: Option<String>,
    /// NVML product name.
    pub name: Option<String>,
    /// Basis of the power readings (the last basis used).
    pub power_basis: Option<PowerBasis>,
    /// `ok`, `unavailable` (no power and no energy at all, with the reasons), or `ended`
    /// (GPU lost).
    pub status: SourceStatus,
    /// Field → reason, recorded once (`power_instant`, `power_usage`,
    /// `total_energy_consumption`, `memory_info`, `utilization_rates`).
    pub unsupported: BTreeMap<String, String>,
    /// Field → error count and last error (transient failures).
    pub errors: BTreeMap<String, FieldErrors>,
    /// Whole-run energy (filled at stop and by `read_samples`).
    pub energy: Option<super::energy::EnergySummary>,
    /// MIG state of a GPU (`null` for probes and for GPUs that report none).
    #[serde(default)]
    pub mig: Option<MigState>,
    /// `null` when per-step energy may be attributed to this device; otherwise why not (a
    /// GPU in MIG mode: whole-GPU power only). Such a device keeps its lane but never gets
    /// a per-step figure.
    #[serde(default)]
    pub not_attributable: Option<String>,
}

impl PowerDevice {
    /// A device with status `ok` and nothing unsupported, failed, selected or withheld:
    /// a probe, or a device read back from another tool's timeline.
    pub fn plain(
        device: u32,
        kind: PowerDeviceKind,
        label: String,
        power_basis: Option<PowerBasis>,
    ) -> Self {
        PowerDevice {
            device,
            kind,
            label,
            index: None,
            uuid: None,
            name: None,
            power_basis,
            status: SourceStatus::Ok,
            unsupported: BTreeMap::new(),
            errors: BTreeMap::new(),
            energy: None,
            mig: None,
            not_attributable: None,
        }
    }
}

/// Why a GPU query failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// The device or driver does not support it (record once, never retry).
    NotSupported(String),
    /// The device is gone (`GpuLost`): stop sampling it.
    Lost(String),
    /// Anything else (count, retry next period).
    Failed(String),
}

/// MIG state of a physical GPU as NVML reports it (`nvmlDeviceGetMigMode`, and the UUIDs of
/// its MIG device handles).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigState {
    /// MIG mode is currently enabled.
    pub enabled: bool,
    /// UUIDs of the MIG instances on this GPU (`MIG-…`), as far as NVML lists them.
    pub instances: Vec<String>,
}

/// Identity of a GPU.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct GpuIdentity {
    /// NVML index.
    pub index: u32,
    /// UUID, when readable.
    pub uuid: Option<String>,
    /// Product name, when readable.
    pub name: Option<String>,
}

/// The per-device query surface the sampler needs; implemented for NVML devices and for test
/// doubles (a simulated NVML, C19). Units: mW, mJ, bytes, %.
pub trait GpuDevice: Send {
    /// Index, UUID, name.
    fn identity(&self) -> GpuIdentity;
    /// `NVML_FI_DEV_POWER_INSTANT`, mW.
    fn power_instant_mw(&mut self) -> Result<u64, QueryError>;
    /// `nvmlDeviceGetPowerUsage`, mW (1 s average on newer parts).
    fn power_usage_mw(&mut self) -> Result<u64, QueryError>;
    /// `nvmlDeviceGetTotalEnergyConsumption`, mJ since driver load.
    fn total_energy_mj(&mut self) -> Result<u64, QueryError>;
    /// `memory_info().used`, bytes.
    fn memory_used_bytes(&mut self) -> Result<u64, QueryError>;
    /// `utilization_rates()`: (gpu %, memory %).
    fn utilization_pct(&mut self) -> Result<(u32, u32), QueryError>;
    /// `nvmlDeviceGetMigMode` (current mode): `true` when MIG is enabled. The default answers
    /// `NotSupported` (a device without MIG).
    fn mig_mode(&mut self) -> Result<bool, QueryError> {
        Err(QueryError::NotSupported("MIG not supported".into()))
    }
    /// UUIDs of the MIG instances on this GPU (`MIG-…`); empty when there are none.
    fn mig_instance_uuids(&mut self) -> Result<Vec<String>, QueryError> {
        Ok(Vec::new())
    }
}

/// A boxed device is a device (NVML devices and test doubles behind one type).
impl GpuDevice for Box<dyn GpuDevice> {
    fn identity(&self) -> GpuIdentity {
        (**self).identity()
    }
    fn power_instant_mw(&mut self) -> Result<u64, QueryError> {
        (**self).power_instant_mw()
    }
    fn power_usage_mw(&mut self) -> Result<u64, QueryError> {
        (**self).power_usage_mw()
    }
    fn total_energy_mj(&mut self) -> Result<u64, QueryError> {
        (**self).total_energy_mj()
    }
    fn memory_used_bytes(&mut self) -> Result<u64, QueryError> {
        (**self).memory_used_bytes()
    }
    fn utilization_pct(&mut self) -> Result<(u32, u32), QueryError> {
        (**self).utilization_pct()
    }
    fn mig_mode(&mut self) -> Result<bool, QueryError> {
        (**self).mig_mode()
    }
    fn mig_instance_uuids(&mut self) -> Result<Vec<String>, QueryError> {
        (**self).mig_instance_uuids()
    }
}

/// Shared per-device bookkeeping: unsupported fields, error counts, energy epochs.
#[derive(Debug)]
struct FieldBook {
    unsupported: BTreeMap<String, String>,
    errors: BTreeMap<String, FieldErrors>,
    lost: Option<String>,
    lost_at: Option<u64>,
    last_energy: Option<u64>,
    epoch: u32,
}

impl FieldBook {
    fn new() -> Self {
        Self {
            unsupported: BTreeMap::new(),
            errors: BTreeMap::new(),
            lost: None,
            lost_at: None,
            last_energy: None,
            epoch: 0,
        }
    }

    fn usable(&self, field: &str) -> bool {
        self.lost.is_none() && !self.unsupported.contains_key(field)
    }

    fn query<T>(&mut self, field: &str, r: Result<T, QueryError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(QueryError::NotSupported(reason)) => {
                self.unsupported.entry(field.to_string()).or_insert(reason);
                None
            }
            Err(QueryError::Lost(reason)) => {
                self.lost = Some(reason);
                None
            }
            Err(QueryError::Failed(reason)) => {
                let e = self.errors.entry(field.to_string()).or_insert(FieldErrors {
                    count: 0,
                    last: String::new(),
                });
                e.count += 1;
                e.last = reason;
                None
            }
        }
    }

    fn epoch_of(&mut self, energy: Option<u64>) -> Option<u32> {
        let e = energy?;
        if let Some(prev) = self.last_energy
            && e < prev
        {
            self.epoch += 1;
        }
        self.last_energy = Some(e);
        Some(self.epoch)
    }
}

/// Samples one [`GpuDevice`], applying the once-only NotSupported policy and the power
/// fallback (instant → `power_usage` flagged averaged).
pub struct GpuSampler<D: GpuDevice> {
    dev: D,
    id: u32,
    book: FieldBook,
    basis: Option<PowerBasis>,
    mig: Option<MigState>,
    not_attributable: Option<String>,
}

impl<D: GpuDevice> GpuSampler<D> {
    /// A sampler of `dev` with run device id `id`.
    pub fn new(dev: D, id: u32) -> Self {
        Self {
            dev,
            id,
            book: FieldBook::new(),
            basis: None,
            mig: None,
            not_attributable: None,
        }
    }

    /// A sampler of a selected device ([`super::gpu::select_gpus`]): its MIG state and
    /// whether it is attributable travel into [`PowerDevice`].
    pub fn selected(
        dev: D,
        id: u32,
        mig: Option<MigState>,
        not_attributable: Option<String>,
    ) -> Self {
        let mut s = Self::new(dev, id);
        s.mig = mig;
        s.not_attributable = not_attributable;
        s
    }

    /// Whether the device was lost (no further samples).
    pub fn is_lost(&self) -> bool {
        self.book.lost.is_some()
    }

    /// One sample stamped `elapsed_ns`.
    pub fn sample(&mut self, elapsed_ns: u64) -> PowerSample {
        let b = &mut self.book;
        let mut power = None;
        if b.usable("power_instant") {
            let r = self.dev.power_instant_mw();
            power = b
                .query("power_instant", r)
                .map(|p| (p, PowerBasis::Instant));
        }
        if power.is_none() && !b.usable("power_instant") && b.usable("power_usage") {
            let r = self.dev.power_usage_mw();
            power = b
                .query("power_usage", r)
                .map(|p| (p, PowerBasis::Averaged1s));
        }
        let energy = if b.usable("total_energy_consumption") {
            let r = self.dev.total_energy_mj();
            b.query("total_energy_consumption", r)
        } else {
            None
        };
        let mem = if b.usable("memory_info") {
            let r = self.dev.memory_used_bytes();
            b.query("memory_info", r)
        } else {
            None
        };
        let util = if b.usable("utilization_rates") {
            let r = self.dev.utilization_pct();
            b.query("utilization_rates", r)
        } else {
            None
        };
        let epoch = b.epoch_of(energy);
        if b.lost.is_some() && b.lost_at.is_none() {
            b.lost_at = Some(elapsed_ns);
        }
        if let Some((_, basis)) = power {
            self.basis = Some(basis);
        }
        PowerSample {
            elapsed_ns,
            device: self.id,
            power_mw: power.map(|p| p.0),
            power_basis: power.map(|p| p.1),
            energy_mj: energy,
            energy_epoch: epoch,
            memory_used_bytes: mem,
            utilization_gpu_pct: util.map(|u| u.0),
            utilization_memory_pct: util.map(|u| u.1),
        }
    }

    /// The device description (status from what was supported and whether it was lost).
    pub fn describe(&self) -> PowerDevice {
        let ident = self.dev.identity();
        let b = &self.book;
        let no_power = b.unsupported.contains_key("power_instant")
            && b.unsupported.contains_key("power_usage");
        let no_energy = b.unsupported.contains_key("total_energy_consumption");
        let status = if let Some(reason) = &b.lost {
            SourceStatus::Ended {
                at_elapsed_ns: b.lost_at,
                reason: reason.clone(),
            }
        } else if no_power && no_energy {
            SourceStatus::Unavailable {
                reason: format!(
                    "not_supported: power ({}), energy ({})",
                    b.unsupported["power_usage"], b.unsupported["total_energy_consumption"]
                ),
            }
        } else {
            SourceStatus::Ok
        };
        PowerDevice {
            device: self.id,
            kind: PowerDeviceKind::Nvml,
            label: format!("gpu{}", ident.index),
            index: Some(ident.index),
            uuid: ident.uuid,
            name: ident.name,
            power_basis: self.basis,
            status,
            unsupported: b.unsupported.clone(),
            errors: b.errors.clone(),
            energy: None,
            mig: self.mig.clone(),
            not_attributable: self.not_attributable.clone(),
        }
    }
}

/// Samples one [`PowerProbe`].
pub struct ProbeSampler {
    probe: Box<dyn PowerProbe>,
    id: u32,
    book: FieldBook,
}

impl ProbeSampler {
    /// A sampler of `probe` with run device id `id`.
    pub fn new(probe: Box<dyn PowerProbe>, id: u32) -> Self {
        Self {
            probe,
            id,
            book: FieldBook::new(),
        }
    }

    /// One sample stamped `elapsed_ns`.
    pub fn sample(&mut self, elapsed_ns: u64) -> PowerSample {
        let r = self.probe.read();
        let basis = self.probe.basis();
        let epoch = self.book.epoch_of(r.energy_mj);
        PowerSample {
            elapsed_ns,
            device: self.id,
            power_mw: r.power_mw,
            power_basis: r.power_mw.map(|_| basis),
            energy_mj: r.energy_mj,
            energy_epoch: epoch,
            memory_used_bytes: None,
            utilization_gpu_pct: None,
            utilization_memory_pct: None,
        }
    }

    /// The device description.
    pub fn describe(&self) -> PowerDevice {
        PowerDevice::plain(
            self.id,
            PowerDeviceKind::Probe,
            self.probe.label().to_string(),
            Some(self.probe.basis()),
        )
    }
}

/// NVML-backed [`GpuDevice`]s.
pub mod nvml {
    use super::{GpuDevice, GpuIdentity, QueryError};
    use nvml_wrapper::enums::device::SampleValue;
    use nvml_wrapper::error::NvmlError;
    use nvml_wrapper::struct_wrappers::device::FieldValueSample;
    use nvml_wrapper::structs::device::FieldId;
    use nvml_wrapper::sys_exports::field_id::NVML_FI_DEV_POWER_INSTANT;
    use nvml_wrapper::{Device, Nvml};
    use std::sync::OnceLock;

    static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();

    /// The process-wide NVML handle, initialised once (the crate advises against repeated
    /// `Nvml::init`). `Err` carries the reason, e.g. `NVML init failed: a libloading error
    /// occurred: … libnvidia-ml.so.1: cannot open shared object file …`.
    pub fn handle() -> Result<&'static Nvml, String> {
        NVML.get_or_init(|| {
            if let Some(reason) = no_driver(|p| std::path::Path::new(p).exists()) {
                return Err(format!("NVML init failed: {reason}"));
            }
            Nvml::init().map_err(|e| format!("NVML init failed: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// What a loaded NVIDIA driver shows: its control device, its `/proc` directory, or
    /// WSL's GPU device (NVML there talks to `/dev/dxg`).
    const DRIVER_PATHS: [&str; 3] = ["/dev/nvidiactl", "/proc/driver/nvidia", "/dev/dxg"];

    /// Why NVML cannot start on this machine, when none of [`DRIVER_PATHS`] exists: NVML
    /// needs the kernel driver, and looking for `libnvidia-ml.so.1` first would search
    /// every library directory under the dynamic loader's lock (about a millisecond, which
    /// every other thread that starts meanwhile waits for).
    pub(crate) fn no_driver(exists: impl Fn(&str) -> bool) -> Option<String> {
        (!DRIVER_PATHS.iter().any(|p| exists(p))).then(|| {
            format!(
                "no NVIDIA driver on this machine (none of {} exists); libnvidia-ml.so.1 not loaded",
                DRIVER_PATHS.join(", ")
            )
        })
    }

    fn classify(e: NvmlError) -> QueryError {
        match e {
            NvmlError::NotSupported => QueryError::NotSupported("NotSupported".into()),
            NvmlError::FailedToLoadSymbol(s) => {
                QueryError::NotSupported(format!("symbol missing: {s}"))
            }
            NvmlError::FunctionNotFound => QueryError::NotSupported("FunctionNotFound".into()),
            NvmlError::GpuLost => QueryError::Lost("GpuLost".into()),
            other => QueryError::Failed(other.to_string()),
        }
    }

    /// One NVML device.
    pub struct NvmlDevice {
        dev: Device<'static>,
        ident: GpuIdentity,
    }

    /// Opens the devices with the given indices (all when `None`). `Err` with the reason when
    /// NVML cannot be initialised, no device exists, or a requested index cannot be opened.
    pub fn open(indices: Option<&[u32]>) -> Result<Vec<NvmlDevice>, String> {
        let nvml = handle()?;
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML device_count failed: {e}"))?;
        if count == 0 {
            return Err("NVML reports no devices".into());
        }
        let wanted: Vec<u32> = match indices {
            Some(ix) => ix.to_vec(),
            None => (0..count).collect(),
        };
        let mut out = Vec::new();
        for i in wanted {
            let dev = nvml
                .device_by_index(i)
                .map_err(|e| format!("NVML device {i}: {e}"))?;
            let ident = GpuIdentity {
                index: i,
                uuid: dev.uuid().ok(),
                name: dev.name().ok(),
            };
            out.push(NvmlDevice { dev, ident });
        }
        Ok(out)
    }

    /// Every device NVML reports, boxed for [`super::super::gpu::select_gpus`].
    pub fn open_all() -> Result<Vec<Box<dyn GpuDevice>>, String> {
        Ok(open(None)?
            .into_iter()
            .map(|d| Box::new(d) as Box<dyn GpuDevice>)
            .collect())
    }

    fn sample_value_u64(v: &SampleValue) -> Option<u64> {
        match *v {
            SampleValue::U32(x) => Some(x as u64),
            SampleValue::U64(x) => Some(x),
            SampleValue::I64(x) => u64::try_from(x).ok(),
            SampleValue::F64(x) if x.is_finite() && x >= 0.0 => Some(x as u64),
            SampleValue::F64(_) => None,
        }
    }

    impl GpuDevice for NvmlDevice {
        fn identity(&self) -> GpuIdentity {
            self.ident.clone()
        }
        fn power_instant_mw(&mut self) -> Result<u64, QueryError> {
            let mut v = self
                .dev
                .field_values_for(&[FieldId(NVML_FI_DEV_POWER_INSTANT)])
                .map_err(classify)?;
            let s: FieldValueSample = v
                .pop()
                .ok_or_else(|| QueryError::Failed("no field value returned".into()))?
                .map_err(classify)?;
            let val = s.value.map_err(classify)?;
            sample_value_u64(&val)
                .ok_or_else(|| QueryError::Failed(format!("unexpected value {val:?}")))
        }
        fn power_usage_mw(&mut self) -> Result<u64, QueryError> {
            self.dev.power_usage().map(u64::from).map_err(classify)
        }
        fn total_energy_mj(&mut self) -> Result<u64, QueryError> {
            self.dev.total_energy_consumption().map_err(classify)
        }
        fn memory_used_bytes(&mut self) -> Result<u64, QueryError> {
            self.dev.memory_info().map(|m| m.used).map_err(classify)
        }
        fn utilization_pct(&mut self) -> Result<(u32, u32), QueryError> {
            self.dev
                .utilization_rates()
                .map(|u| (u.gpu, u.memory))
                .map_err(classify)
        }
        fn mig_mode(&mut self) -> Result<bool, QueryError> {
            // NVML_DEVICE_MIG_ENABLE is 1.
            self.dev
                .mig_mode()
                .map(|m| m.current == 1)
                .map_err(classify)
        }
        fn mig_instance_uuids(&mut self) -> Result<Vec<String>, QueryError> {
            let slots = self.dev.mig_device_count().map_err(classify)?;
            // Empty slots answer NotFound; they are skipped.
            Ok((0..slots)
                .filter_map(|i| self.dev.mig_device_by_index(i).ok())
                .filter_map(|m| m.uuid().ok())
                .collect())
        }
    }

    #[cfg(test)]
    mod tests {
        use super::{DRIVER_PATHS, no_driver};

        #[test]
        fn without_a_driver_nvml_is_not_looked_for_and_the_reason_names_the_paths() {
            let reason = no_driver(|_| false).expect("no driver");
            for p in DRIVER_PATHS {
                assert!(reason.contains(p), "{reason}");
            }
            assert!(reason.contains("libnvidia-ml.so.1 not loaded"), "{reason}");
            for present in DRIVER_PATHS {
                assert_eq!(no_driver(|p| p == present), None, "{present}");
            }
        }
    }
}
