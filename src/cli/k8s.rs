//! The flags of `k8s` (the command: `commands::k8s`).

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// How the Indexed Job divides the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartitionMode {
    /// `run --partition hash:K/N`: whole jobs by XXH64 of their ids.
    Hash,
    /// `run --partition count:K/N`: whole jobs round-robin over the sorted ids.
    Count,
    /// `run --shard K/N`: a share of every load job's load.
    Shard,
}

/// A Kubernetes release, `1.MINOR` (every release so far is 1.x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct KubeRelease {
    /// The minor version: 29 for 1.29.
    pub minor: u32,
}

impl std::str::FromStr for KubeRelease {
    type Err = String;

    /// `1.29`, `v1.29` or `1.29.4` (the patch release changes no API).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("{s:?}: not a Kubernetes release such as 1.29 or 1.29.4");
        let t = s.strip_prefix('v').unwrap_or(s);
        let mut parts = t.split('.');
        let number = |p: Option<&str>| {
            p.filter(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|p| p.parse::<u32>().ok())
        };
        let (Some(major), Some(minor)) = (number(parts.next()), number(parts.next())) else {
            return Err(bad());
        };
        if let Some(patch) = parts.next()
            && number(Some(patch)).is_none()
        {
            return Err(bad());
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        if major != 1 {
            return Err(format!("{s:?}: only Kubernetes 1.x releases exist"));
        }
        Ok(KubeRelease { minor })
    }
}

impl std::fmt::Display for KubeRelease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "1.{}", self.minor)
    }
}

/// Arguments of `k8s`.
#[derive(Debug, Clone, Args)]
pub struct K8sArgs {
    /// The suite file, as its path inside the image (relative to the image's working
    /// directory).
    pub suite: PathBuf,
    /// Shards (pods of the Indexed Job).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub shards: u32,
    /// The container image holding `inferscope-bench` and the suite (see `Containerfile`).
    #[arg(long)]
    pub image: String,
    /// Endpoint base URL for every shard (`run --endpoint`); default: the suite's.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name for every shard (`run --model`); default: the suite's.
    #[arg(long)]
    pub model: Option<String>,
    /// Every shard captures its timeline (`run --capture-timeline`).
    #[arg(long)]
    pub capture_timeline: bool,
    /// The PersistentVolumeClaim shared by every shard and the merge (ReadWriteMany when
    /// the shards land on several nodes), mounted at `/runs`.
    #[arg(long, value_name = "CLAIM", default_value = "inferscope-runs")]
    pub runs_volume: String,
    /// How the shards divide the suite.
    #[arg(long, value_enum, default_value_t = PartitionMode::Hash)]
    pub partition_mode: PartitionMode,
    /// Name prefix of every object (a DNS label: lower-case letters, digits, `-`).
    #[arg(long, default_value = "inferscope-bench")]
    pub name: String,
    /// The Secret holding the API key (key `api-key`), exposed as the suite's
    /// `api_key_env`.
    #[arg(long, value_name = "SECRET", default_value = "inferscope-api-key")]
    pub api_key_secret: String,
    /// Seconds from printing to the shards' common `--start-at` instant.
    #[arg(long, value_name = "S", default_value_t = 120)]
    pub start_delay_s: u64,
    /// The shards' common first-request instant (seconds since the epoch), instead of
    /// now + `--start-delay-s`.
    #[arg(long, value_name = "UNIX_TS")]
    pub start_at: Option<String>,
    /// CPU of each shard pod (request = limit).
    #[arg(long, default_value = "2")]
    pub cpu: String,
    /// Memory of each shard pod (request = limit).
    #[arg(long, default_value = "2Gi")]
    pub memory: String,
    /// Image with `kubectl` for the merge Job's wait.
    #[arg(long, default_value = "registry.k8s.io/kubectl:v1.37.0")]
    pub kubectl_image: String,
    /// How long the merge Job waits for the shards' Job to complete (`kubectl wait
    /// --timeout`).
    #[arg(long, default_value = "6h")]
    pub wait_timeout: String,
    /// The oldest Kubernetes release the manifests must suit (`1.MINOR`); one older than a
    /// feature of the manifests needs is refused, naming the release it needs.
    // The default is `commands::k8s::OLDEST` (a test there checks they agree; naming it here
    // would make `cli` import `commands`).
    #[arg(long, value_name = "1.MINOR", default_value = "1.29")]
    pub kubernetes_version: KubeRelease,
}
