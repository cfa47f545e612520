//! Which GPUs a run may attribute, and which it can only show.
//!
//! Selection, in order of precedence:
//! 1. `[telemetry] gpu_devices = [0, "GPU-…"]`: NVML indices (the numbering `nvidia-smi`
//!    shows) or UUIDs. A MIG instance UUID (`MIG-…`) selects its parent GPU.
//! 2. Otherwise `CUDA_VISIBLE_DEVICES` of the benchmark's environment (set it to what the
//!    engine sees): UUIDs (`GPU-…`, `MIG-…`, also by unique prefix, as CUDA accepts) match
//!    exactly; integer entries are CUDA ordinals, taken as NVML indices, which is right only
//!    in PCI bus order (`CUDA_DEVICE_ORDER=PCI_BUS_ID`; otherwise a note says so). As in
//!    CUDA, the list ends at the first entry that names no device; an empty value or `-1`
//!    hides every device.
//! 3. Otherwise every device NVML reports.
//!
//! One lane per selected device, never summed. A device in MIG mode is sampled (its lane
//! shows the whole GPU's power) but is **not attributable**: NVML reports power and energy
//! for the physical GPU only, shared by every MIG instance on it, so no per-step figure of
//! one instance can be measured. Such a device carries the reason in
//! [`super::PowerDevice::not_attributable`], naming the parent GPU and the instances, and
//! the join leaves it out ((the root package's `runner::energy::attribution_input`)): its steps' energy
//! is `null`, never a measured figure.

use super::power::{GpuDevice, GpuIdentity, MigState};
use serde::{Deserialize, Serialize};

/// One entry of `gpu_devices` (or of `CUDA_VISIBLE_DEVICES`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GpuSelector {
    /// An NVML device index.
    Index(u32),
    /// A GPU UUID (`GPU-…`) or a MIG instance UUID (`MIG-…`); a unique prefix is accepted.
    Uuid(String),
}

impl std::fmt::Display for GpuSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GpuSelector::Index(i) => write!(f, "{i}"),
            GpuSelector::Uuid(u) => write!(f, "{u}"),
        }
    }
}

/// What the run asks for: the suite's list, else the environment's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuSelection {
    /// `[telemetry] gpu_devices`; `None` when the suite does not set it.
    pub devices: Option<Vec<GpuSelector>>,
    /// `CUDA_VISIBLE_DEVICES` as read when the run started; `None` when unset.
    pub cuda_visible_devices: Option<String>,
    /// `CUDA_DEVICE_ORDER` as read when the run started.
    pub cuda_device_order: Option<String>,
}

impl GpuSelection {
    /// The suite's list (may be `None`) with the environment of this process.
    pub fn from_env(devices: Option<Vec<GpuSelector>>) -> Self {
        Self {
            devices,
            cuda_visible_devices: std::env::var("CUDA_VISIBLE_DEVICES").ok(),
            cuda_device_order: std::env::var("CUDA_DEVICE_ORDER").ok(),
        }
    }
}

/// One selected GPU and what may be said of it.
pub struct SelectedGpu<D> {
    /// The device.
    pub device: D,
    /// MIG state; `None` when the device does not report one (not supported: no MIG).
    pub mig: Option<MigState>,
    /// `Some(reason)` when per-step energy must not be attributed to this device.
    pub not_attributable: Option<String>,
}

/// The outcome of [`select_gpus`].
pub struct GpuChoice<D> {
    /// The selected devices, in NVML index order.
    pub selected: Vec<SelectedGpu<D>>,
    /// Remarks (which rule selected, ordering caveats, ignored entries).
    pub notes: Vec<String>,
    /// `Some(reason)` when the selection leaves no device (the GPU source is then
    /// `unavailable` with this reason).
    pub none_reason: Option<String>,
}

/// Reads a device's MIG state; `None` when the query is not supported (no MIG on it).
fn mig_of<D: GpuDevice>(d: &mut D) -> Option<MigState> {
    match d.mig_mode() {
        Ok(enabled) => Some(MigState {
            enabled,
            instances: if enabled {
                d.mig_instance_uuids().unwrap_or_default()
            } else {
                Vec::new()
            },
        }),
        Err(_) => None,
    }
}

fn describe(id: &GpuIdentity) -> String {
    let mut s = format!("gpu{}", id.index);
    let extra: Vec<&str> = [id.uuid.as_deref(), id.name.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    if !extra.is_empty() {
        s.push_str(&format!(" ({})", extra.join(", ")));
    }
    s
}

/// The reason a MIG-mode GPU is not attributable, naming the parent and its instances.
pub fn mig_reason(id: &GpuIdentity, mig: &MigState, selected_instances: &[String]) -> String {
    let mut s = format!(
        "{} is in MIG mode: NVML reports power and energy for the whole physical GPU, shared by \
         every MIG instance on it, so a step's energy cannot be attributed at instance \
         granularity",
        describe(id)
    );
    if !selected_instances.is_empty() {
        s.push_str(&format!(
            " (selected instance {})",
            selected_instances.join(", ")
        ));
    }
    if !mig.instances.is_empty() {
        s.push_str(&format!("; instances on it: {}", mig.instances.join(", ")));
    }
    s
}

/// A parsed `CUDA_VISIBLE_DEVICES`: the selectors up to the first invalid entry.
fn parse_cuda_visible(v: &str) -> (Vec<GpuSelector>, Option<String>) {
    let mut out = Vec::new();
    for raw in v.split(',') {
        let e = raw.trim();
        if e.is_empty() {
            return (out, Some(format!("entry {raw:?} is empty")));
        }
        if let Ok(i) = e.parse::<i64>() {
            if i < 0 {
                return (out, Some(format!("entry {e} is negative")));
            }
            match u32::try_from(i) {
                Ok(i) => out.push(GpuSelector::Index(i)),
                Err(_) => return (out, Some(format!("entry {e} is out of range"))),
            }
        } else {
            out.push(GpuSelector::Uuid(e.to_string()));
        }
    }
    (out, None)
}

/// Which device `sel` names: `(index into devices, MIG instance named)`; `Err` with a
/// reason when it names none (or is an ambiguous prefix).
fn resolve(
    sel: &GpuSelector,
    ids: &[GpuIdentity],
    migs: &[Option<MigState>],
) -> Result<(usize, Option<String>), String> {
    match sel {
        GpuSelector::Index(i) => ids
            .iter()
            .position(|d| d.index == *i)
            .map(|p| (p, None))
            .ok_or_else(|| format!("no GPU with NVML index {i}")),
        GpuSelector::Uuid(u) => {
            let want = u.as_str();
            let mut hits: Vec<(usize, Option<String>)> = Vec::new();
            for (p, d) in ids.iter().enumerate() {
                if let Some(uuid) = &d.uuid
                    && (uuid == want || uuid.starts_with(want))
                {
                    hits.push((p, None));
                }
                if let Some(m) = &migs[p] {
                    for inst in &m.instances {
                        if inst == want || inst.starts_with(want) {
                            hits.push((p, Some(inst.clone())));
                        }
                    }
                }
            }
            match hits.len() {
                0 => Err(format!("no GPU or MIG instance with UUID {want}")),
                1 => Ok(hits.remove(0)),
                _ => Err(format!("UUID prefix {want} names several devices")),
            }
        }
    }
}

/// Applies the selection rules (module docs) to every device NVML (or a test double)
/// reports. Pure apart from the devices' own MIG queries.
pub fn select_gpus<D: GpuDevice>(devices: Vec<D>, want: &GpuSelection) -> GpuChoice<D> {
    let mut devices = devices;
    let ids: Vec<GpuIdentity> = devices.iter().map(|d| d.identity()).collect();
    let migs: Vec<Option<MigState>> = devices.iter_mut().map(mig_of).collect();
    let mut notes = Vec::new();
    // (selectors, strict): strict = an unknown entry is an error (the suite's list); the
    // environment's list ends at the first entry that names nothing, as CUDA does.
    let (selectors, strict): (Option<Vec<GpuSelector>>, bool) = match (
        &want.devices,
        &want.cuda_visible_devices,
    ) {
        (Some(list), env) => {
            if env.is_some() {
                notes.push(
                    "gpu_devices is set: CUDA_VISIBLE_DEVICES of the benchmark's environment is not used for selection"
                        .to_string(),
                );
            }
            notes.push(format!(
                "GPUs selected by gpu_devices = [{}]",
                list.iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            (Some(list.clone()), true)
        }
        (None, Some(env)) => {
            let v = env.trim();
            if v.is_empty() || v == "-1" {
                return GpuChoice {
                    selected: Vec::new(),
                    notes,
                    none_reason: Some(format!("CUDA_VISIBLE_DEVICES={env:?} hides every GPU")),
                };
            }
            let (sel, stop) = parse_cuda_visible(v);
            if let Some(why) = stop {
                notes.push(format!(
                    "CUDA_VISIBLE_DEVICES: {why}; later entries are ignored, as CUDA does"
                ));
            }
            if sel.iter().any(|s| matches!(s, GpuSelector::Index(_)))
                && want.cuda_device_order.as_deref() != Some("PCI_BUS_ID")
            {
                notes.push(
                    "CUDA_VISIBLE_DEVICES uses ordinals: taken as NVML indices, which match \
                     CUDA's numbering only with CUDA_DEVICE_ORDER=PCI_BUS_ID; use UUIDs to be sure"
                        .to_string(),
                );
            }
            notes.push(format!("GPUs selected by CUDA_VISIBLE_DEVICES={v}"));
            (Some(sel), false)
        }
        (None, None) => (None, false),
    };

    // Selected device positions with the MIG instances named for them.
    let mut picked: Vec<(usize, Vec<String>)> = Vec::new();
    match selectors {
        None => picked = (0..devices.len()).map(|p| (p, Vec::new())).collect(),
        Some(sel) => {
            for s in &sel {
                match resolve(s, &ids, &migs) {
                    Ok((p, inst)) => match picked.iter_mut().find(|(q, _)| *q == p) {
                        Some((_, insts)) => insts.extend(inst),
                        None => picked.push((p, inst.into_iter().collect())),
                    },
                    Err(why) if strict => {
                        return GpuChoice {
                            selected: Vec::new(),
                            notes,
                            none_reason: Some(format!("gpu_devices entry {s}: {why}")),
                        };
                    }
                    Err(why) => {
                        notes.push(format!(
                            "CUDA_VISIBLE_DEVICES entry {s}: {why}; it and later entries are ignored, as CUDA does"
                        ));
                        break;
                    }
                }
            }
        }
    }
    if picked.is_empty() {
        return GpuChoice {
            selected: Vec::new(),
            notes,
            none_reason: Some("the GPU selection names no device".into()),
        };
    }
    picked.sort_by_key(|(p, _)| ids[*p].index);
    let mut slots: Vec<Option<D>> = devices.into_iter().map(Some).collect();
    let mut selected = Vec::new();
    for (p, instances) in picked {
        let Some(device) = slots[p].take() else {
            continue;
        };
        let mig = migs[p].clone();
        let not_attributable = match &mig {
            Some(m) if m.enabled => Some(mig_reason(&ids[p], m, &instances)),
            _ if !instances.is_empty() => Some(mig_reason(
                &ids[p],
                &MigState {
                    enabled: true,
                    instances: instances.clone(),
                },
                &instances,
            )),
            _ => None,
        };
        selected.push(SelectedGpu {
            device,
            mig,
            not_attributable,
        });
    }
    GpuChoice {
        selected,
        notes,
        none_reason: None,
    }
}
