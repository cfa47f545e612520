//! `k8s SUITE --shards N --image IMAGE`: Kubernetes manifests that run a suite as N shards
//! and merge them, built on Kubernetes' own primitives:
//!
//! - an **Indexed Job** (`completionMode: Indexed`, `completions = parallelism = N`) whose
//!   pod `i` runs `run --partition KIND:(i+1)/N` (or `--shard (i+1)/N`) from the
//!   `JOB_COMPLETION_INDEX` Kubernetes sets, writing `RUNS/NAME/shard-(i+1)` on a shared
//!   volume; a required pod anti-affinity on `kubernetes.io/hostname` puts every shard on
//!   its own node; requests equal limits (Guaranteed QoS, so the client's CPU is not
//!   shared); the API key comes from a Secret through the suite's `api_key_env`;
//! - a **merge Job** whose init container waits with `kubectl wait
//!   --for=condition=complete job/NAME-shards` (a ServiceAccount, Role and RoleBinding
//!   allow only get/list/watch on Jobs), then runs `merge`;
//! - `--start-at`: the instant is computed when the manifests are printed (now +
//!   `--start-delay-s`, or `--start-at`), so print and apply in one pipeline.
//!
//! A shard pod exits 0 whenever its run wrote its run directory (the run's own status,
//! pass or fail, is in its report and decides the merge's exit status); only bad input or
//! unwritten artifacts (exit 2) fail it. Pod failure policies fail each Job at once on a
//! container's non-zero exit, and ignore node disruptions.
//!
//! The manifests suit every Kubernetes release from `--kubernetes-version` (default and
//! oldest: [`OLDEST`]) on; each feature they use is in [`FEATURES`] with the release it
//! needs. They are written as YAML that YAML 1.1 readers read as YAML 1.2 readers do
//! (`yaml`).

mod yaml;

use serde_json::{Value, json};

use crate::model::exit::ExitCode;

pub use crate::cli::{K8sArgs, KubeRelease, PartitionMode};

/// A Kubernetes feature the manifests use and the release whose API has it as they write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// What the manifests use.
    pub what: &'static str,
    /// The oldest release that accepts it.
    pub since: KubeRelease,
}

const fn release(minor: u32) -> KubeRelease {
    KubeRelease { minor }
}

/// Every version-dependent feature of the manifests. A target older than one of them is
/// refused, naming it: nothing in the manifests is optional, so nothing is left out.
pub const FEATURES: [Feature; 3] = [
    Feature {
        what: "an Indexed Job (completionMode: Indexed, JOB_COMPLETION_INDEX)",
        since: release(24),
    },
    Feature {
        what: "a Job podFailurePolicy (FailJob on exit codes, Ignore on DisruptionTarget; \
               beta and on by default from 1.26, GA in 1.31)",
        since: release(26),
    },
    Feature {
        what: "a podFailurePolicy rule on exit codes alone (the API of 1.28 and older \
               requires onPodConditions in every rule)",
        since: release(29),
    },
];

/// The oldest release the manifests suit: the newest release a feature of [`FEATURES`]
/// needs (a test checks they agree). The default of `--kubernetes-version`.
pub const OLDEST: KubeRelease = release(29);

/// The newest release whose schema the manifests are checked against (tests/it/shards.rs,
/// with kubernetes-validate 1.37.0, the newest release it knows).
pub const NEWEST_CHECKED: KubeRelease = release(37);

/// `Ok` when every feature of the manifests is in `target`; else the error names each
/// feature `target` lacks and the release it needs.
pub fn check_target(target: KubeRelease) -> Result<(), String> {
    let missing: Vec<String> = FEATURES
        .iter()
        .filter(|f| f.since > target)
        .map(|f| format!("{} needs Kubernetes {}", f.what, f.since))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--kubernetes-version {target}: the manifests need Kubernetes {OLDEST} or newer: {}",
        missing.join("; ")
    ))
}

/// Where the shared volume is mounted in every pod.
pub const RUNS_MOUNT: &str = "/runs";

/// Which optional `run` flags a shard's script passes (their values come from the pod's
/// environment).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptOptions {
    /// `--endpoint "$INFERSCOPE_ENDPOINT"`.
    pub endpoint: bool,
    /// `--model "$INFERSCOPE_MODEL"`.
    pub model: bool,
    /// `--capture-timeline`.
    pub capture_timeline: bool,
}

/// The longest `--start-delay-s`: `run --start-at` refuses an instant more than 24 h ahead.
pub const MAX_START_DELAY_S: u64 = 86_400;

/// Whether `var` is an environment variable the shard pods set themselves (the
/// `INFERSCOPE_` ones, `CI`, `JOB_COMPLETION_INDEX`) or their shell needs (`PATH`, `HOME`,
/// …): a suite's `api_key_env` must name another, or the key replaces it.
pub fn reserved_env(var: &str) -> bool {
    var.starts_with("INFERSCOPE_")
        || matches!(
            var,
            "CI" | "JOB_COMPLETION_INDEX"
                | "PATH"
                | "HOME"
                | "SHELL"
                | "IFS"
                | "PWD"
                | "USER"
                | "HOSTNAME"
                | "LANG"
                | "LC_ALL"
                | "TMPDIR"
                | "ENV"
                | "TERM"
        )
}

/// The shell script of a shard pod: the shard K from `JOB_COMPLETION_INDEX`, the run, and
/// its exit status mapped (a written run directory is a success of the pod).
pub fn shard_script(mode: PartitionMode, opts: &ScriptOptions) -> String {
    let flag = match mode {
        PartitionMode::Hash => "--partition \"hash:$k/$INFERSCOPE_SHARDS\"",
        PartitionMode::Count => "--partition \"count:$k/$INFERSCOPE_SHARDS\"",
        PartitionMode::Shard => "--shard \"$k/$INFERSCOPE_SHARDS\"",
    };
    let mut extra = String::new();
    if opts.endpoint {
        extra.push_str(" --endpoint \"$INFERSCOPE_ENDPOINT\"");
    }
    if opts.model {
        extra.push_str(" --model \"$INFERSCOPE_MODEL\"");
    }
    if opts.capture_timeline {
        extra.push_str(" --capture-timeline");
    }
    format!(
        "set -u\n\
         k=$((JOB_COMPLETION_INDEX + 1))\n\
         out=\"$INFERSCOPE_RUNS/shard-$k\"\n\
         {SET_ASIDE}\
         set_aside \"$out\" \"shard-$k\"\n\
         status=0\n\
         stopped=0\n\
         inferscope-bench run \"$INFERSCOPE_SUITE\" {flag}{extra} \
         --start-at \"$INFERSCOPE_START_AT\" --out \"$out\" &\n\
         pid=$!\n\
         # The shell is the container's PID 1: it passes the kubelet's SIGTERM on to the\n\
         # run, which cancels, writes its run directory and exits.\n\
         trap 'stopped=1; kill -TERM \"$pid\" 2>/dev/null' TERM INT\n\
         wait \"$pid\" || status=$?\n\
         while kill -0 \"$pid\" 2>/dev/null; do status=0; wait \"$pid\" || status=$?; done\n\
         # Stopped (an eviction, a node drain): fail the pod, so the Job's DisruptionTarget\n\
         # rule retries it; the retry sets this attempt's directory aside.\n\
         [ \"$stopped\" = 1 ] && exit 143\n\
         # 0 passed, 100 a job or gate failed, 96 a setup error: the run directory holds the\n\
         # result and the merge reports it. Anything else (2: bad input, artifacts not\n\
         # written) fails the pod.\n\
         case \"$status\" in 0|100|96) exit 0 ;; *) exit \"$status\" ;; esac\n"
    )
}

/// The shell function both pods use to move an earlier attempt's directory (a retried
/// pod's, or a re-applied Job's) to `$INFERSCOPE_RUNS/earlier/NAME.N`, never read as this
/// run's and never matched by the merge's `shard-*`.
const SET_ASIDE: &str = "set_aside() {\n\
    [ -e \"$1\" ] || return 0\n\
    mkdir -p \"$INFERSCOPE_RUNS/earlier\"\n\
    n=1\n\
    while [ -e \"$INFERSCOPE_RUNS/earlier/$2.$n\" ]; do n=$((n + 1)); done\n\
    mv \"$1\" \"$INFERSCOPE_RUNS/earlier/$2.$n\"\n\
    echo \"earlier attempt's $2 kept as earlier/$2.$n\" >&2\n\
}\n";

/// The shell script of the merge pod.
pub fn merge_script() -> String {
    format!(
        "set -u\n\
         {SET_ASIDE}\
         set_aside \"$INFERSCOPE_RUNS/merged\" merged\n\
         exec inferscope-bench merge \"$INFERSCOPE_RUNS\"/shard-* --out \"$INFERSCOPE_RUNS/merged\"\n"
    )
}

/// Whether `s` is a DNS-1123 label of at most `max` characters.
fn dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS subdomain name (RFC 1123) of at most 253 characters: what a Secret or a
/// PersistentVolumeClaim is named.
fn dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|l| dns_label(l, 63))
        && !s.starts_with('.')
        && !s.ends_with('.')
}

/// Checks the flags the cluster reads as names, quantities and durations, which a
/// manifest takes verbatim: a Secret and a claim name (DNS subdomains), CPU and memory
/// (non-negative Kubernetes quantities), the wait's timeout (a Go duration, as `kubectl
/// wait --timeout` reads it) and the kubectl image (non-empty). Without the check,
/// `--memory lots` or `--api-key-secret "a b"` made manifests that every cluster refuses.
/// The least `--memory` a shard pod may get: 64 MiB (the run's own peak is ~15 MiB; a
/// value such as `2` or `500m` is bytes, not gigabytes).
const MIN_MEMORY_BYTES: f64 = 64.0 * 1024.0 * 1024.0;
/// The most: 16 TiB.
const MAX_MEMORY_BYTES: f64 = 16.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0;

/// The value of a Kubernetes quantity (`500m` = 0.5, `2Gi` = 2^31, `1e3` = 1000), or `None`
/// when `v` is not one.
fn quantity_value(v: &str) -> Option<f64> {
    let re = regex::Regex::new(
        r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$",
    )
    .expect("a valid pattern");
    let c = re.captures(v)?;
    let n: f64 = c[1].parse().ok()?;
    let scale = match c.get(2).map_or("", |m| m.as_str()) {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e => 10f64.powi(e[1..].parse::<i32>().ok()?),
    };
    Some(n * scale)
}

fn check_cluster_values(args: &K8sArgs) -> Result<(), String> {
    for (flag, v) in [
        ("--api-key-secret", &args.api_key_secret),
        ("--runs-volume", &args.runs_volume),
    ] {
        if !dns_subdomain(v) {
            return Err(format!(
                "{flag} {v:?}: not a Kubernetes object name (a DNS subdomain: lower-case \
                 letters, digits, `-` and `.`, at most 253 characters)"
            ));
        }
    }
    for (flag, v, (min, max), what, range) in [
        (
            "--cpu",
            &args.cpu,
            (0.001, 1024.0),
            "CPU cores (such as `500m`, `2`)",
            "1m to 1024 cores",
        ),
        (
            "--memory",
            &args.memory,
            (MIN_MEMORY_BYTES, MAX_MEMORY_BYTES),
            "bytes (such as `512Mi`, `2Gi`)",
            "64Mi to 16Ti",
        ),
    ] {
        let Some(n) = quantity_value(v) else {
            return Err(format!("{flag} {v:?}: not a Kubernetes quantity of {what}"));
        };
        if !(min..=max).contains(&n) {
            return Err(format!(
                "{flag} {v:?}: {n} {}, outside {range}: a quantity of {what}",
                if flag == "--cpu" { "cores" } else { "bytes" }
            ));
        }
    }
    let duration = regex::Regex::new(r"^(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$")
        .expect("a valid pattern");
    let nonzero = args.wait_timeout.chars().any(|c| matches!(c, '1'..='9'));
    if !duration.is_match(&args.wait_timeout) || !nonzero {
        return Err(format!(
            "--wait-timeout {:?}: not a positive duration as `kubectl wait --timeout` reads \
             it (such as `90m`, `6h`, `1h30m`)",
            args.wait_timeout
        ));
    }
    if args.kubectl_image.trim().is_empty() {
        return Err("--kubectl-image: empty".into());
    }
    Ok(())
}

/// What the manifests need from the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteFacts {
    /// The suite's `api_key_env`, when it names one.
    pub api_key_env: Option<String>,
}

/// The manifests as JSON values, in apply order: ServiceAccount, Role, RoleBinding, the
/// Indexed Job, the merge Job. `start_at` is the `--start-at` text every shard gets.
pub fn manifests(args: &K8sArgs, facts: &SuiteFacts, start_at: &str) -> Vec<Value> {
    let [service_account, role, binding] = merge_rbac(&args.name);
    vec![
        service_account,
        role,
        binding,
        shards_job(args, facts, start_at),
        merge_job(args),
    ]
}

/// The labels of every object of run `name` in `role` (`shard` or `merge`).
fn labels(name: &str, role: &str) -> Value {
    json!({
        "app.kubernetes.io/name": "inferscope-bench",
        "app.kubernetes.io/instance": name,
        "app.kubernetes.io/component": role,
    })
}

/// The runs volume (`--runs-volume`) every pod mounts.
fn runs_volume(args: &K8sArgs) -> Value {
    json!([{
        "name": "runs",
        "persistentVolumeClaim": {"claimName": args.runs_volume},
    }])
}

/// Where every pod mounts the runs volume.
fn runs_mount() -> Value {
    json!([{"name": "runs", "mountPath": RUNS_MOUNT}])
}

/// The merge Job's ServiceAccount, and the Role and RoleBinding that let it watch jobs
/// (it waits for the shards' Job to complete).
fn merge_rbac(name: &str) -> [Value; 3] {
    let merge = format!("{name}-merge");
    let service_account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": merge, "labels": labels(name, "merge")},
    });
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": merge, "labels": labels(name, "merge")},
        "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "watch"]}],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": merge, "labels": labels(name, "merge")},
        "subjects": [{"kind": "ServiceAccount", "name": merge}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": merge},
    });
    [service_account, role, binding]
}

/// The environment of a shard's container: the suite, shard count, runs directory and
/// start time, the endpoint and model overrides, and the API key from its Secret.
fn shard_env(args: &K8sArgs, facts: &SuiteFacts, start_at: &str) -> Vec<Value> {
    let runs_dir = format!("{RUNS_MOUNT}/{}", args.name);
    let mut shard_env = vec![
        json!({"name": "INFERSCOPE_SUITE", "value": args.suite.to_string_lossy()}),
        json!({"name": "INFERSCOPE_SHARDS", "value": args.shards.to_string()}),
        json!({"name": "INFERSCOPE_RUNS", "value": runs_dir}),
        json!({"name": "INFERSCOPE_START_AT", "value": start_at}),
        // The shards' output is for CI logs: no progress bar.
        json!({"name": "CI", "value": "true"}),
    ];
    if let Some(e) = &args.endpoint {
        shard_env.push(json!({"name": "INFERSCOPE_ENDPOINT", "value": e}));
    }
    if let Some(m) = &args.model {
        shard_env.push(json!({"name": "INFERSCOPE_MODEL", "value": m}));
    }
    if let Some(var) = &facts.api_key_env {
        shard_env.push(json!({
            "name": var,
            "valueFrom": {"secretKeyRef": {"name": args.api_key_secret, "key": "api-key"}},
        }));
    }
    shard_env
}

/// The Indexed Job of the shards: one pod per shard, at most one per node.
fn shards_job(args: &K8sArgs, facts: &SuiteFacts, start_at: &str) -> Value {
    let name = &args.name;
    let shards_job = format!("{name}-shards");
    let labels = |role: &str| labels(name, role);
    let resources = json!({
        "requests": {"cpu": args.cpu, "memory": args.memory},
        "limits": {"cpu": args.cpu, "memory": args.memory},
    });
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": shards_job, "labels": labels("shard")},
        "spec": {
            "completionMode": "Indexed",
            "completions": args.shards,
            "parallelism": args.shards,
            "backoffLimit": args.shards,
            "podFailurePolicy": {"rules": [
                // `status` is required by the API of 1.34 and older.
                {"action": "Ignore", "onPodConditions": [
                    {"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob", "onExitCodes": {
                    "containerName": "shard", "operator": "NotIn", "values": [0]}},
            ]},
            "template": {
                "metadata": {"labels": labels("shard")},
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{
                            "labelSelector": {"matchLabels": labels("shard")},
                            "topologyKey": "kubernetes.io/hostname",
                        }],
                    }},
                    "containers": [{
                        "name": "shard",
                        "image": args.image,
                        "command": ["/bin/sh", "-c"],
                        "args": [shard_script(args.partition_mode, &ScriptOptions {
                            endpoint: args.endpoint.is_some(),
                            model: args.model.is_some(),
                            capture_timeline: args.capture_timeline,
                        })],
                        "env": shard_env(args, facts, start_at),
                        "resources": resources,
                        "volumeMounts": runs_mount(),
                    }],
                    "volumes": runs_volume(args),
                },
            },
        },
    })
}

/// The merge Job: waits for the shards' Job to complete, then merges their runs.
fn merge_job(args: &K8sArgs) -> Value {
    let name = &args.name;
    let shards_job = format!("{name}-shards");
    let merge = format!("{name}-merge");
    let labels = |role: &str| labels(name, role);
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": merge, "labels": labels("merge")},
        "spec": {
            "backoffLimit": 6,
            "podFailurePolicy": {"rules": [
                {"action": "FailJob", "onExitCodes": {
                    "containerName": "merge", "operator": "NotIn", "values": [0]}},
            ]},
            "template": {
                "metadata": {"labels": labels("merge")},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": merge,
                    "initContainers": [{
                        "name": "wait-for-shards",
                        "image": args.kubectl_image,
                        "command": ["kubectl", "wait", "--for=condition=complete",
                            format!("--timeout={}", args.wait_timeout), format!("job/{shards_job}")],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "200m", "memory": "128Mi"},
                        },
                    }],
                    "containers": [{
                        "name": "merge",
                        "image": args.image,
                        "command": ["/bin/sh", "-c"],
                        "args": [merge_script()],
                        "env": [{"name": "INFERSCOPE_RUNS", "value": format!("{RUNS_MOUNT}/{name}")}],
                        "resources": {
                            "requests": {"cpu": "1", "memory": "1Gi"},
                            "limits": {"cpu": "1", "memory": "2Gi"},
                        },
                        "volumeMounts": runs_mount(),
                    }],
                    "volumes": runs_volume(args),
                },
            },
        },
    })
}

/// The manifests as one multi-document YAML text, for Kubernetes `target` or newer; every
/// string is quoted, so YAML 1.1 and 1.2 readers read the same values.
pub fn to_yaml(docs: &[Value], target: KubeRelease) -> Result<String, String> {
    let mut out = format!(
        "# inferscope-bench k8s: apply in one pipeline (the shards' --start-at was computed \
         when this was printed)\n\
         # for Kubernetes {target} or newer (schemas checked: {OLDEST} to {NEWEST_CHECKED})\n",
    );
    for d in docs {
        out.push_str("---\n");
        out.push_str(&yaml::document(d)?);
    }
    Ok(out)
}

/// The `k8s` command: prints the manifests. Exit 0; 2 for a bad suite or flag.
pub fn command(args: K8sArgs) -> i32 {
    let bad = |m: String| {
        eprintln!("error: {m}");
        ExitCode::BAD_INPUT
    };
    if !dns_label(&args.name, 50) {
        return bad(format!(
            "--name {:?}: not a DNS label of at most 50 characters (lower-case letters, \
             digits and `-`)",
            args.name
        ));
    }
    if args.image.trim().is_empty() {
        return bad("--image: empty".into());
    }
    if let Err(m) = check_cluster_values(&args) {
        return bad(m);
    }
    if let Err(m) = check_target(args.kubernetes_version) {
        return bad(m);
    }
    if args.kubernetes_version > NEWEST_CHECKED {
        eprintln!(
            "note: --kubernetes-version {}: the manifests are checked against the schemas of \
             Kubernetes {OLDEST} to {NEWEST_CHECKED}; a newer release is not",
            args.kubernetes_version
        );
    }
    if let Some(e) = &args.endpoint
        && let Err(m) = crate::suite::normalize_endpoint(e)
    {
        return bad(format!("--endpoint: {m}"));
    }
    let suite = match crate::suite::diagnose::load_all(std::slice::from_ref(&args.suite)) {
        Ok(mut s) => s.remove(0),
        Err(code) => return code,
    };
    if let Some(var) = &suite.api_key_env
        && reserved_env(var)
    {
        return bad(format!(
            "{}: field `api_key_env`: {var:?} is a variable the shard pods set or their \
             shell needs; the API key would replace it (and be printed where it is shown): \
             name another variable, such as OPENAI_API_KEY",
            args.suite.display()
        ));
    }
    if args.partition_mode == PartitionMode::Shard && suite.jobs.iter().all(|j| j.load.is_none()) {
        return bad(format!(
            "--partition-mode shard: {} has no load job (a job with concurrency, rate, \
             count, duration_s or sweep) whose load could be shared",
            args.suite.display()
        ));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let start_at = match &args.start_at {
        Some(t) => match crate::shard::parse_start_at(t, now) {
            Ok(_) => t.trim().to_string(),
            Err(e) => return bad(e),
        },
        None if args.start_delay_s > MAX_START_DELAY_S => {
            return bad(format!(
                "--start-delay-s {}: more than {MAX_START_DELAY_S} s (24 h); every shard's \
                 `run --start-at` refuses a start that far ahead",
                args.start_delay_s
            ));
        }
        None => {
            let ns = now.saturating_add(args.start_delay_s.saturating_mul(1_000_000_000));
            format!(
                "{}.{:03}",
                ns / 1_000_000_000,
                ns % 1_000_000_000 / 1_000_000
            )
        }
    };
    let facts = SuiteFacts {
        api_key_env: suite.api_key_env.clone(),
    };
    match to_yaml(
        &manifests(&args, &facts, &start_at),
        args.kubernetes_version,
    ) {
        Ok(y) => {
            print!("{y}");
            0
        }
        Err(e) => bad(format!("cannot write the manifests: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k8s` flags as the CLI parses them.
    fn args(extra: &[&str]) -> K8sArgs {
        let mut v = vec![
            "inferscope-bench",
            "k8s",
            "suites/load.toml",
            "--shards",
            "8",
            "--image",
            "img:1",
        ];
        v.extend_from_slice(extra);
        match crate::cli::parse_from(v) {
            crate::cli::Command::K8s(a) => a,
            _ => unreachable!("k8s parses as k8s"),
        }
    }

    #[test]
    fn indexed_job_and_a_merge_job_that_waits_with_kubectl() {
        let a = args(&["--endpoint", "http://engine:8000/v1"]);
        let facts = SuiteFacts {
            api_key_env: Some("ENGINE_KEY".into()),
        };
        let docs = manifests(&a, &facts, "1767225600.000");
        let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["ServiceAccount", "Role", "RoleBinding", "Job", "Job"]
        );
        let shards = &docs[3]["spec"];
        assert_eq!(shards["completionMode"], "Indexed");
        assert_eq!(
            (
                shards["completions"].as_u64(),
                shards["parallelism"].as_u64()
            ),
            (Some(8), Some(8))
        );
        let pod = &shards["template"]["spec"];
        assert_eq!(
            pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
                ["topologyKey"],
            "kubernetes.io/hostname"
        );
        let c = &pod["containers"][0];
        let script = c["args"][0].as_str().unwrap();
        assert!(
            script.contains("k=$((JOB_COMPLETION_INDEX + 1))"),
            "{script}"
        );
        assert!(
            script.contains("--partition \"hash:$k/$INFERSCOPE_SHARDS\""),
            "{script}"
        );
        assert!(
            script.contains("--endpoint \"$INFERSCOPE_ENDPOINT\""),
            "{script}"
        );
        assert_eq!(c["resources"]["requests"], c["resources"]["limits"]);
        let key = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "ENGINE_KEY")
            .unwrap();
        assert_eq!(
            key["valueFrom"]["secretKeyRef"]["name"],
            "inferscope-api-key"
        );
        assert!(
            key.get("value").is_none(),
            "the key never sits in the manifest"
        );
        let merge = &docs[4]["spec"]["template"]["spec"];
        let wait: Vec<&str> = merge["initContainers"][0]["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(wait[..3], ["kubectl", "wait", "--for=condition=complete"]);
        assert_eq!(wait[4], "job/inferscope-bench-shards");
        assert_eq!(merge["serviceAccountName"], "inferscope-bench-merge");
        assert_eq!(
            docs[1]["rules"][0]["verbs"],
            json!(["get", "list", "watch"])
        );
        let yaml = to_yaml(&docs, OLDEST).unwrap();
        assert_eq!(yaml.lines().filter(|l| *l == "---").count(), 5);
    }

    #[test]
    fn shard_mode_runs_shard_k_of_n() {
        let s = shard_script(PartitionMode::Shard, &ScriptOptions::default());
        assert!(s.contains("--shard \"$k/$INFERSCOPE_SHARDS\""));
        assert!(!s.contains("--endpoint"));
        let c = shard_script(
            PartitionMode::Count,
            &ScriptOptions {
                model: true,
                capture_timeline: true,
                ..Default::default()
            },
        );
        assert!(
            c.contains("count:$k/")
                && c.contains("--model \"$INFERSCOPE_MODEL\" --capture-timeline")
        );
    }

    #[test]
    fn kubernetes_version_sets_the_oldest_release_and_older_ones_are_refused() {
        assert_eq!(args(&[]).kubernetes_version, OLDEST, "the default");
        assert_eq!(
            OLDEST,
            FEATURES.iter().map(|f| f.since).max().unwrap(),
            "the oldest release is the newest one a feature needs"
        );
        assert!(OLDEST <= NEWEST_CHECKED);
        for (text, minor) in [("1.29", 29), ("v1.33", 33), ("1.37.2", 37), ("1.40", 40)] {
            assert_eq!(text.parse::<KubeRelease>(), Ok(release(minor)), "{text}");
            assert_eq!(
                args(&["--kubernetes-version", text]).kubernetes_version,
                release(minor)
            );
            assert_eq!(check_target(release(minor)), Ok(()), "{text}");
        }
        for bad in [
            "", "1", "1.", "1.x", "1.29.", "1.29.0.1", "v", "1.-3", "29", "1.29a",
        ] {
            let e = bad.parse::<KubeRelease>().unwrap_err();
            assert!(e.contains("not a Kubernetes release"), "{bad}: {e}");
        }
        assert!("2.0".parse::<KubeRelease>().unwrap_err().contains("1.x"));
        let e = check_target(release(28)).unwrap_err();
        assert!(
            e.starts_with("--kubernetes-version 1.28: the manifests need Kubernetes 1.29"),
            "{e}"
        );
        assert!(
            e.contains("onPodConditions") && !e.contains("podFailurePolicy (FailJob"),
            "{e}"
        );
        let e = check_target(release(25)).unwrap_err();
        assert!(
            e.contains("needs Kubernetes 1.26") && e.contains("needs Kubernetes 1.29"),
            "{e}"
        );
        assert!(!e.contains("Indexed Job"), "{e}");
    }

    /// The pod-condition pattern carries the `status` that 1.34 and older require.
    #[test]
    fn pod_condition_patterns_state_their_status() {
        let docs = manifests(
            &args(&[]),
            &SuiteFacts { api_key_env: None },
            "1767225600.000",
        );
        let rules = &docs[3]["spec"]["podFailurePolicy"]["rules"];
        assert_eq!(
            rules[0]["onPodConditions"],
            json!([{"type": "DisruptionTarget", "status": "True"}])
        );
        let yaml = to_yaml(&docs, release(31)).unwrap();
        assert!(yaml.contains("# for Kubernetes 1.31 or newer"), "{yaml}");
        assert!(yaml.contains("status: \"True\""), "{yaml}");
    }
}
