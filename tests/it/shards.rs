//! Beyond one machine, tested here without a cluster:
//! - `run --partition hash:K/3` (and `list`, and `count:`) over every ready suite runs
//!   every job exactly once;
//! - the k8s manifests for several suites, shard counts and options validate against every
//!   Kubernetes release from 1.29 to the newest the validator knows (`kubernetes-validate`,
//!   installed by `.ci/run`), and read the same in YAML 1.1 (PyYAML) as in YAML 1.2;
//! - 4 shard processes of `suites/load.toml`, started with the Indexed Job's own script
//!   and `JOB_COMPLETION_INDEX`, against one simulator, merged by the merge Job's script:
//!   every merged percentile equals the one computed from the union of the shards'
//!   request records, the merged load is the sum of the shards' load, and the merged
//!   directory is a normal run directory for every reader.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use inferscope_bench::model::stats::RequestFigures;
use inferscope_bench::model::{RequestRecord, RunReport, Summary};
use serde_json::Value;

use support::{describe, repo, run};

/// The suites that run on the built-in simulator (llama-cpp.toml needs a real engine).
const READY: [&str; 4] = [
    "suites/agentic.toml",
    "suites/context.toml",
    "suites/swe.toml",
    "suites/load.toml",
];

fn read(dir: &Path) -> RunReport {
    // With each job's records from requests.jsonl (checked against report.json).
    inferscope_bench::commands::read_report_with_requests(dir).unwrap()
}

fn listed(args: &[&str]) -> Vec<String> {
    let o = run(&repo(), args);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// Done-when item 1: `run --partition hash:1/3 … 3/3` over all ready suites runs every
/// job exactly once, and `list --partition` lists exactly what `run` runs.
#[test]
fn hash_partitions_of_every_ready_suite_run_every_job_exactly_once() {
    let mut all_args = vec!["list"];
    all_args.extend(READY);
    let all = listed(&all_args);
    assert!(all.len() >= 7, "{all:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut ran: BTreeMap<String, u32> = BTreeMap::new();
    let mut fingerprints = BTreeSet::new();
    for k in 1..=3 {
        let p = format!("hash:{k}/3");
        let mut list_args = vec!["list", "--partition", &p];
        list_args.extend(READY);
        let listed_k = listed(&list_args);
        let out = tmp.path().join(format!("p{k}"));
        let mut args = vec!["run", "--partition", &p, "--out", out.to_str().unwrap()];
        args.extend(READY);
        let o = run(&repo(), &args);
        assert!(
            matches!(o.status.code(), Some(0) | Some(100)),
            "{}",
            describe(&o)
        );
        let r = read(&out);
        let ids: Vec<String> = r.jobs.iter().map(|j| j.id.clone()).collect();
        assert_eq!(ids, listed_k, "run and list agree on partition {p}");
        for j in &r.jobs {
            assert!(j.status.ran(), "{} {:?}", j.id, j.status);
            *ran.entry(j.id.clone()).or_default() += 1;
        }
        let s = r.shard.as_ref().expect("shard identity");
        assert_eq!((s.k, s.n), (k, 3));
        assert_eq!(s.selected_jobs, all);
        fingerprints.insert(s.suite_fingerprint.clone());
    }
    assert_eq!(fingerprints.len(), 1, "one run: one fingerprint");
    assert_eq!(ran.keys().cloned().collect::<Vec<_>>(), {
        let mut a = all.clone();
        a.sort();
        a
    });
    assert!(ran.values().all(|&c| c == 1), "{ran:?}");

    // Counted partitions (cheap, through `list`): also every job exactly once, and the
    // round-robin is over the sorted ids.
    let mut sorted = all.clone();
    sorted.sort();
    for n in [1u32, 2, 5] {
        let mut seen = Vec::new();
        for k in 1..=n {
            let p = format!("count:{k}/{n}");
            let mut a = vec!["list", "--partition", &p];
            a.extend(READY);
            let got = listed(&a);
            for id in &got {
                let i = sorted.iter().position(|s| s == id).unwrap();
                assert_eq!(i as u32 % n, k - 1, "{id} in {p}");
            }
            seen.extend(got);
        }
        seen.sort();
        assert_eq!(seen, sorted, "count:K/{n}");
    }
    // Bad values are bad input, before anything runs.
    for bad in ["hash:0/3", "hash:4/3", "slice:1/2", "hash:1/x"] {
        let o = run(&repo(), &["list", "suites/load.toml", "--partition", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--partition"),
            "{bad}"
        );
    }
}

/// The `kubernetes-validate` executable: `INFERSCOPE_KUBE_VALIDATE`, else the venv `.ci/run`
/// installs. `None` (the test skips, saying so) only when it is absent and
/// `INFERSCOPE_REQUIRE_KUBE_VALIDATE` is unset.
fn kube_validate() -> Option<PathBuf> {
    let exe = std::env::var_os("INFERSCOPE_KUBE_VALIDATE")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| {
                PathBuf::from(h).join(
                    ".cache/inferscope-bench/venv-kube-validate-1.37.0/bin/kubernetes-validate",
                )
            })
        })
        .filter(|p| p.is_file());
    if exe.is_none() {
        assert!(
            std::env::var_os("INFERSCOPE_REQUIRE_KUBE_VALIDATE").is_none(),
            "INFERSCOPE_REQUIRE_KUBE_VALIDATE is set but kubernetes-validate is not installed \
             (.ci/run installs kubernetes-validate==1.37.0 into \
             ~/.cache/inferscope-bench/venv-kube-validate-1.37.0)"
        );
        eprintln!(
            "SKIP: kubernetes-validate not installed (run .ci/run, or set \
             INFERSCOPE_KUBE_VALIDATE); the manifests were not schema-checked"
        );
    }
    exe
}

/// `k8s` with `args` in `cwd`: exit 0 and five documents (YAML 1.2), whose Indexed Job has
/// `n` completions; the text.
fn k8s_text(cwd: &Path, args: &[&str], n: u32) -> String {
    let mut all = vec!["k8s"];
    all.extend_from_slice(args);
    let o = run(cwd, &all);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {}", describe(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let docs = yaml_1_2(&text);
    assert_eq!(docs.len(), 5, "{args:?}");
    let spec = &docs[3]["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(
        (&spec["completions"], &spec["parallelism"]),
        (&n.into(), &n.into())
    );
    text
}

fn yaml_1_2(text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

/// One strict `kubernetes-validate` run over `files` against release `1.minor`: `None` when
/// the validator does not know that release, else its exit status and output.
fn validate(exe: &Path, files: &[&Path], minor: u32) -> Option<(Option<i32>, String)> {
    let o = Command::new(exe)
        .args(["--strict", "-k", &format!("1.{minor}.0")])
        .args(files)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if out.contains("does not support kubernetes version") {
        return None;
    }
    Some((o.status.code(), out))
}

/// The manifests validate, strictly (unknown fields rejected), against every
/// Kubernetes release from their `--kubernetes-version` (default: the oldest supported,
/// 1.29) through the newest the validator knows, for several suites, shard counts, partition
/// modes and options; a target older than 1.29 is refused naming the release it needs.
/// Controls: a misspelled field fails on every release, and a pod-condition pattern without
/// `status` (what the manifests wrote before) fails on 1.29 to 1.34 and passes from 1.35.
#[test]
fn k8s_manifests_validate_on_every_kubernetes_release_from_their_target() {
    use inferscope_bench::commands::k8s::{NEWEST_CHECKED, OLDEST};
    let tmp = tempfile::tempdir().unwrap();
    let key = support::write(
        tmp.path(),
        "key.toml",
        "name = \"key\"\nendpoint = \"http://engine.inference.svc:8000/v1\"\nmodel = \"m\"\n\
         api_key_env = \"ON\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
    );
    let engine = "--endpoint http://engine.inference.svc:8000/v1 --model served-model";
    // (arguments, shards, the target's minor)
    let cases = [
        (
            format!("suites/load.toml --partition-mode hash {engine}"),
            8,
            29,
        ),
        ("suites/load.toml --partition-mode count".into(), 1, 29),
        (
            format!("suites/load.toml --partition-mode shard --capture-timeline {engine}"),
            3,
            29,
        ),
        (
            "suites/load.toml --partition-mode shard --kubernetes-version 1.33".into(),
            1000,
            33,
        ),
        ("suites/agentic.toml --capture-timeline".into(), 2, 29),
        (
            "suites/context.toml --partition-mode count --name yes --api-key-secret no \
             --runs-volume off --model 2001-01-01 --cpu 500m --memory 1Gi --wait-timeout 30m"
                .into(),
            5,
            29,
        ),
        ("suites/swe.toml --kubernetes-version v1.37.1".into(), 4, 37),
        (
            format!("{} --name 2001-01-01 --start-at 1767225600", key.display()),
            2,
            29,
        ),
    ];
    let mut files: Vec<(PathBuf, u32)> = Vec::new();
    for (i, (args, n, target)) in cases.iter().enumerate() {
        let shards = n.to_string();
        let mut all: Vec<&str> = args.split_whitespace().collect();
        all.extend([
            "--shards",
            &shards,
            "--image",
            "registry.example/inferscope-bench:0.1.0",
        ]);
        let text = k8s_text(&repo(), &all, *n);
        assert!(
            text.contains(&format!("# for Kubernetes 1.{target} or newer")),
            "{args}: {text}"
        );
        let f = tmp.path().join(format!("k8s-{i}.yaml"));
        std::fs::write(&f, &text).unwrap();
        files.push((f, *target));
    }
    let key_env = yaml_1_2(&std::fs::read_to_string(&files[7].0).unwrap())[3]["spec"]
        ["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "ON")
        .cloned()
        .expect("the suite's api_key_env");
    assert_eq!(
        key_env["valueFrom"]["secretKeyRef"]["name"],
        "inferscope-api-key"
    );

    // Older than 1.29: refused, naming the release; not a release: refused, naming the flag.
    for (bad, want) in [
        ("1.28", "needs Kubernetes 1.29"),
        ("1.25", "needs Kubernetes 1.26"),
        ("1.x", "--kubernetes-version"),
    ] {
        let args = format!("k8s suites/load.toml --shards 2 --image i --kubernetes-version {bad}");
        let o = run(&repo(), &args.split_whitespace().collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", describe(&o));
        assert!(o.stdout.is_empty(), "{bad}: nothing printed");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{bad}: {}",
            describe(&o)
        );
    }

    // Newer than the newest schema checked: written, with a note saying so.
    let o = k8s_load(&["--kubernetes-version", "1.99"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(!o.stdout.is_empty(), "the manifests are written");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a newer release is not"),
        "{}",
        describe(&o)
    );

    let Some(exe) = kube_validate() else { return };
    // Controls, validated beside the manifests: a misspelled field, and the pattern without
    // the `status` that 1.34 and older require.
    let text = std::fs::read_to_string(&files[0].0).unwrap();
    let broken = tmp.path().join("broken.yaml");
    std::fs::write(&broken, text.replace("completionMode:", "completionModes:")).unwrap();
    let no_status = tmp.path().join("no-status.yaml");
    let without = text.replace("            status: \"True\"\n", "");
    assert_ne!(without, text);
    std::fs::write(&no_status, without).unwrap();
    let refused = |out: &str, f: &Path| out.contains(&format!("{} did not validate", f.display()));
    let mut minor = OLDEST.minor;
    loop {
        let chosen: Vec<&Path> = files
            .iter()
            .filter(|(_, t)| *t <= minor)
            .map(|(f, _)| f.as_path())
            .collect();
        let mut all = chosen.clone();
        all.extend([broken.as_path(), no_status.as_path()]);
        let Some((code, out)) = validate(&exe, &all, minor) else {
            break;
        };
        assert_ne!(
            code,
            Some(0),
            "Kubernetes 1.{minor}: the controls fail: {out}"
        );
        for f in &chosen {
            let passed = format!("{} passed for resource", f.display());
            assert_eq!(
                out.matches(&passed).count(),
                5,
                "Kubernetes 1.{minor}: {out}"
            );
        }
        assert!(refused(&out, &broken), "Kubernetes 1.{minor}: {out}");
        assert_eq!(
            refused(&out, &no_status),
            minor < 35,
            "Kubernetes 1.{minor}: {out}"
        );
        minor += 1;
    }
    assert!(
        minor > NEWEST_CHECKED.minor,
        "validated 1.{} to 1.{}: the validator must know 1.{} (NEWEST_CHECKED)",
        OLDEST.minor,
        minor - 1,
        NEWEST_CHECKED.minor
    );
    assert_eq!(
        minor - 1,
        NEWEST_CHECKED.minor,
        "the validator knows a newer release: raise NEWEST_CHECKED and docs/sharding.md's range"
    );
}

/// A YAML 1.1 reader (PyYAML, as kubectl's parser reads YAML 1.1) reads the
/// manifests as the YAML 1.2 reader does, whatever the names and values: `--name yes`
/// stays the string "yes", `--model 2001-01-01` a string, not a date.
#[test]
fn k8s_manifests_read_the_same_in_yaml_1_1() {
    let tmp = tempfile::tempdir().unwrap();
    // DNS labels, and any strings, that YAML 1.1 reads as something else when plain.
    let names: Vec<&str> = "yes no on off y n true null 123 2001-01-01 1e3 0x1f 017"
        .split(' ')
        .collect();
    #[rustfmt::skip]
    let models = [
        "2001-01-01", "2001-12-14t21:59:43.10-05:00", "~", "=", "<<", "1_000", "1:20", ".inf",
        "0o17", "a: b", "# x", "- x", "'q'", "\"dq\"", "back\\slash", "yes\nno", "tab\tcr\r",
        "nel\u{85}ls\u{2028}bom\u{FEFF}", "é😀", " lead", "trail ",
    ];
    // Every name with a model and an image from the list; then the rest of the list.
    let mut files = Vec::new();
    for i in 0..names.len().max(models.len()) {
        let (name, model) = (names.get(i), models[i % models.len()]);
        let image = format!("--image={}", models[(i + 3) % models.len()]);
        let model_arg = format!("--model={model}");
        let mut args = vec!["suites/load.toml", "--shards", "2", &image, &model_arg];
        if let Some(name) = name {
            args.extend([
                "--name",
                name,
                "--api-key-secret",
                "no",
                "--runs-volume",
                "off",
            ]);
            // Valid values (`k8s` refuses what no cluster accepts) that YAML 1.1 or 1.2
            // reads as numbers when plain: an octal 0170000000, floats 1e3 and 1e9.
            let memory = if i % 2 == 0 {
                "--memory=1e9"
            } else {
                "--memory=0170000000"
            };
            args.extend(["--cpu=1e3", memory, "--wait-timeout=90m"]);
        }
        let text = k8s_text(&repo(), &args, 2);
        let name = name.copied().unwrap_or("inferscope-bench");
        files.push((tmp.path().join(format!("y{i}.yaml")), text, name, model));
    }
    for (f, text, _, _) in &files {
        std::fs::write(f, text).unwrap();
    }
    let Some(exe) = kube_validate() else { return };
    // The validator's own interpreter, which has PyYAML (kubernetes-validate reads with it).
    let python = exe.with_file_name("python3");
    if !python.is_file() {
        assert!(
            std::env::var_os("INFERSCOPE_REQUIRE_KUBE_VALIDATE").is_none(),
            "INFERSCOPE_REQUIRE_KUBE_VALIDATE is set but {} (the validator's venv) is missing",
            python.display()
        );
        eprintln!(
            "SKIP: no python3 beside {}: YAML 1.1 not checked",
            exe.display()
        );
        return;
    }
    let script = "import json, sys, yaml\n\
                  out = {}\n\
                  for p in sys.argv[1:]:\n\
                  \x20   with open(p, encoding='utf-8') as f:\n\
                  \x20       out[p] = list(yaml.safe_load_all(f))\n\
                  print(json.dumps(out, default=lambda o: {'not json': repr(o)}))\n";
    let o = Command::new(&python)
        .arg("-c")
        .arg(script)
        .args(files.iter().map(|(f, ..)| f))
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", python.display()));
    assert_eq!(o.status.code(), Some(0), "PyYAML: {}", describe(&o));
    let read: serde_json::Map<String, Value> = serde_json::from_slice(&o.stdout).unwrap();
    for (f, text, name, model) in &files {
        let v11 = &read[f.to_str().unwrap()];
        let v12 = Value::from(yaml_1_2(text));
        assert_eq!(v11, &v12, "{name:?} {model:?}: YAML 1.1 vs 1.2:\n{text}");
        assert_eq!(
            v11[0]["metadata"]["labels"]["app.kubernetes.io/instance"],
            **name
        );
        let env = &v11[3]["spec"]["template"]["spec"]["containers"][0]["env"];
        let got = env
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "INFERSCOPE_MODEL");
        assert_eq!(got.unwrap()["value"], *model, "{text}");
    }
}

/// The simulator as its own process on a free loopback port; killed on drop.
struct Sim(std::process::Child, String);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sim() -> Sim {
    let (child, url) = support::spawn_sim(&repo(), &[]);
    Sim(child, url)
}

/// The container of a Job (`docs[i]`): its script and its environment.
fn container(doc: &Value) -> (String, Vec<(String, String)>) {
    let c = &doc["spec"]["template"]["spec"]["containers"][0];
    let script = c["args"][0].as_str().unwrap().to_string();
    let env = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str()?.to_string(),
            ))
        })
        .collect();
    (script, env)
}

/// `k8s suites/load.toml --shards 2 --image i EXTRA…`.
fn k8s_load(extra: &[&str]) -> std::process::Output {
    let mut args = vec!["k8s", "suites/load.toml", "--shards", "2", "--image", "i"];
    args.extend_from_slice(extra);
    run(&repo(), &args)
}

/// The shard and merge containers' scripts and env of a `k8s` command's output (exit 0).
type PodScript = (String, Vec<(String, String)>);
fn pod_scripts(o: &std::process::Output) -> (PodScript, PodScript) {
    assert_eq!(o.status.code(), Some(0), "{}", describe(o));
    let text = String::from_utf8(o.stdout.clone()).unwrap();
    let docs: Vec<Value> = serde_norway::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    (container(&docs[3]), container(&docs[4]))
}

/// Runs a pod's script with `sh -c` as Kubernetes would (its env, `runs` for the shared
/// volume, `inferscope-bench` on PATH), in the repository (the image's working directory).
fn pod(script: &str, env: &[(String, String)], runs: &Path, index: Option<u32>) -> Command {
    let bin_dir = support::bin_path().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(script)
        .current_dir(repo())
        .env("PATH", path);
    for (k, v) in env {
        c.env(k, v);
    }
    c.env("INFERSCOPE_RUNS", runs);
    if let Some(i) = index {
        c.env("JOB_COMPLETION_INDEX", i.to_string());
    }
    c
}

fn summary_eq(what: &str, merged: Option<&Summary>, union: &[f64]) {
    let expect = Summary::from_samples(union);
    assert_eq!(merged, expect.as_ref(), "{what}: merged vs the union's");
}

/// The shards' requests of `job`, with their warm-up flags (each shard's own).
fn shard_requests(shards: &[RunReport], job: &str) -> Vec<(RequestRecord, bool)> {
    shards
        .iter()
        .flat_map(|r| {
            let j = r.jobs.iter().find(|j| j.id == job).unwrap();
            let warm: BTreeSet<&str> = j
                .load
                .as_ref()
                .map(|l| l.warmup_requests.iter().map(String::as_str).collect())
                .unwrap_or_default();
            j.requests
                .iter()
                .map(|q| (q.clone(), warm.contains(q.request_id.as_str())))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Done-when item 2 and issue item 4: 4 shards of `suites/load.toml` against one simulator,
/// each started with the Indexed Job's script and `JOB_COMPLETION_INDEX`, merged by the
/// merge Job's script.
#[test]
fn four_shards_of_load_merge_into_the_union_of_their_records() {
    let sim = sim();
    let start_at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + Duration::from_secs(3);
    let start_at = format!("{}.{:03}", start_at.as_secs(), start_at.subsec_millis());
    let o = run(
        &repo(),
        &[
            "k8s",
            "suites/load.toml",
            "--shards",
            "4",
            "--image",
            "local",
            "--partition-mode",
            "shard",
            "--endpoint",
            &sim.1,
            "--model",
            "inferscope-sim",
            "--capture-timeline",
            "--start-at",
            &start_at,
        ],
    );
    let ((shard_script, shard_env), (merge_script, merge_env)) = pod_scripts(&o);
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();

    let children: Vec<_> = (0..4)
        .map(|i| {
            pod(&shard_script, &shard_env, &runs, Some(i))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    }
    let shards: Vec<RunReport> = (1..=4)
        .map(|k| read(&runs.join(format!("shard-{k}"))))
        .collect();
    for (k, r) in shards.iter().enumerate() {
        let id = r.shard.as_ref().unwrap();
        assert_eq!((id.k, id.n), (k as u32 + 1, 4));
        let s = id.start_at.as_ref().expect("start_at recorded");
        assert!(
            s.lag_ns >= 0 && s.lag_ns < 2_000_000_000,
            "lag {}",
            s.lag_ns
        );
        assert!(s.first_request_lag_ns.unwrap() >= s.lag_ns);
    }
    let domains: BTreeSet<&str> = shards.iter().map(|r| r.clock_domain_id.as_str()).collect();
    assert_eq!(domains.len(), 4, "each shard its own clock domain");

    let o = pod(&merge_script, &merge_env, &runs, None)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let merged_dir = runs.join("merged");
    let m = read(&merged_dir);
    let mi = m.merge.as_ref().expect("merge section");
    assert_eq!(mi.n, 4);
    assert_eq!(mi.shards.len(), 4);
    assert_eq!(mi.alignment.basis, "same_host");
    let anchor = shards
        .iter()
        .map(|r| r.reference_instant_unix_ns)
        .min()
        .unwrap();
    assert_eq!(m.reference_instant_unix_ns, anchor);
    for (s, r) in mi.shards.iter().zip(&shards) {
        assert_eq!(s.clock_domain_id, r.clock_domain_id);
        assert_eq!(s.offset_ns, r.reference_instant_unix_ns - anchor);
        assert!(merged_dir.join(&s.dir).join("report.json").is_file());
        assert!(
            merged_dir
                .join(&s.dir)
                .join("timeline/manifest.json")
                .is_file()
        );
    }

    for job in ["load::fanout", "load::arrivals"] {
        let mj = m.jobs.iter().find(|j| j.id == job).unwrap();
        let union = shard_requests(&shards, job);
        // Every shard's request is in the merged job, shifted by its shard's offset only:
        // durations within a shard are unchanged to the nanosecond.
        assert_eq!(mj.requests.len(), union.len(), "{job}");
        let measured: Vec<_> = union
            .iter()
            .filter(|(_, w)| !w)
            .map(|(r, _)| RequestFigures::of(r))
            .collect();
        let ok: Vec<_> = measured.iter().filter(|f| f.ok).collect();
        let st = mj.stats.as_ref().unwrap();
        assert_eq!(st.requests, measured.len() as u64, "{job}");
        let ttft: Vec<f64> = ok.iter().filter_map(|f| f.ttft_ms).collect();
        let e2e: Vec<f64> = ok.iter().filter_map(|f| f.e2e_ms).collect();
        let itl: Vec<f64> = ok.iter().flat_map(|f| f.itl_ms.iter().copied()).collect();
        let lag: Vec<f64> = measured.iter().filter_map(|f| f.schedule_lag_ms).collect();
        summary_eq(&format!("{job} ttft"), st.ttft_ms.as_ref(), &ttft);
        summary_eq(&format!("{job} e2e"), st.e2e_ms.as_ref(), &e2e);
        summary_eq(&format!("{job} itl"), st.itl_ms.as_ref(), &itl);
        summary_eq(&format!("{job} lag"), st.schedule_lag_ms.as_ref(), &lag);
        // Every unit of every shard is a unit line of the merged requests.jsonl; report.json
        // keeps each shard's first trajectory of each point.
        let ids: BTreeSet<&str> = mj.units.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.len(), mj.units.len(), "{job}: unit ids unique");
        let shard_unit_count: usize = shards
            .iter()
            .map(|r| r.jobs.iter().find(|j| j.id == job).unwrap().units.len())
            .sum();
        assert_eq!(
            mj.units.len(),
            shard_unit_count,
            "{job}: the union of units"
        );
        assert!(mj.units.iter().all(|t| t.shard.is_some()));
        assert!(mj.trajectories.iter().all(|t| t.shard.is_some()));
        let points = mj.sweep.as_ref().unwrap().points.len();
        assert!(
            mj.trajectories.len() <= points * shards.len(),
            "{job}: a sample"
        );

        // Per point: the union's percentiles, and the load is the sum of the shards'.
        let sw = mj.sweep.as_ref().unwrap();
        for p in &sw.points {
            let share = |r: &RunReport| {
                r.shard
                    .as_ref()
                    .unwrap()
                    .load
                    .iter()
                    .find(|l| l.job == job)
                    .unwrap()
                    .points[p.index]
                    .clone()
            };
            let shares: Vec<_> = shards.iter().map(share).collect();
            let sum_c: u32 = shares.iter().filter_map(|s| s.concurrency).sum();
            assert_eq!(Some(sum_c), p.concurrency, "{job} point {}", p.index);
            let sum_u: u64 = shares.iter().filter_map(|s| s.units).sum();
            assert_eq!(sum_u, p.units, "{job} point {}", p.index);
            assert_eq!(Some(sum_u), shares[0].configured_units);
            if let Some(rate) = p.rate {
                let sum_r: f64 = shares.iter().filter_map(|s| s.rate).sum();
                assert!((sum_r - rate).abs() < 1e-9, "{sum_r} vs {rate}");
            }
            let shard_units: u64 = shards
                .iter()
                .map(|r| {
                    let j = r.jobs.iter().find(|j| j.id == job).unwrap();
                    j.sweep.as_ref().unwrap().points[p.index].units
                })
                .sum();
            assert_eq!(shard_units, p.units);
            let in_point: BTreeSet<String> = mj
                .units
                .iter()
                .filter(|u| u.point == p.index)
                .map(|u| u.id.replacen('#', ".t", 1) + ".")
                .collect();
            let preqs: Vec<_> = union
                .iter()
                .filter(|(r, w)| !w && in_point.iter().any(|t| r.request_id.starts_with(t)))
                .map(|(r, _)| RequestFigures::of(r))
                .collect();
            let pttft: Vec<f64> = preqs
                .iter()
                .filter(|f| f.ok)
                .filter_map(|f| f.ttft_ms)
                .collect();
            let pe2e: Vec<f64> = preqs
                .iter()
                .filter(|f| f.ok)
                .filter_map(|f| f.e2e_ms)
                .collect();
            summary_eq(
                &format!("{job} point {} ttft", p.index),
                p.stats.ttft_ms.as_ref(),
                &pttft,
            );
            summary_eq(
                &format!("{job} point {} e2e", p.index),
                p.stats.e2e_ms.as_ref(),
                &pe2e,
            );
            if let Some(g) = &p.goodput {
                assert!(g.good_requests <= preqs.len() as u64);
            }
        }
    }
    // The fanout's union of units has the trajectory ids of one unsharded run.
    let fan = m.jobs.iter().find(|j| j.id == "load::fanout").unwrap();
    let ids: BTreeSet<String> = fan.units.iter().map(|t| t.id.clone()).collect();
    let want: BTreeSet<String> = (0..3)
        .flat_map(|p| (0..16).map(move |k| format!("load::fanout#p{p}.{k}")))
        .collect();
    assert_eq!(ids, want);

    // A normal run directory for every reader.
    let cwd = tmp.path();
    let md = merged_dir.to_str().unwrap();
    let o = run(cwd, &["timeline", "verify", md]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).matches("shard ").count(),
        4
    );
    for f in ["markdown", "json", "junit", "html", "perfetto", "otlp-json"] {
        let out = cwd.join(format!("merged.{f}"));
        let o = run(
            cwd,
            &["report", md, "--format", f, "-o", out.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(0), "{f}: {}", describe(&o));
    }
    let trace: Value =
        serde_json::from_slice(&std::fs::read(cwd.join("merged.perfetto")).unwrap()).unwrap();
    let pids: BTreeSet<u64> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["pid"].as_u64())
        .collect();
    // Every shard's processes (its run at K*1000+1, its jobs after it) on their own pids.
    let shards: BTreeSet<u64> = pids.iter().map(|p| p / 1000).collect();
    assert_eq!(
        shards,
        (1..=4).collect(),
        "Perfetto processes of every shard"
    );
    assert!(pids.iter().all(|p| p % 1000 >= 1), "{pids:?}");
    for k in 1..=4u64 {
        assert!(pids.contains(&(k * 1000 + 1)), "shard {k}'s run process");
    }
    // The dashboard's view: one lane group per shard, every trajectory in its shard's
    // group, each group shifted by its shard's offset with the anchor uncertainty stated;
    // the self-contained HTML report carries the same groups.
    let groups = inferscope_bench::serve::view::shard_views(&m);
    assert_eq!(groups.iter().map(|g| g.k).collect::<Vec<_>>(), [1, 2, 3, 4]);
    for (g, s) in groups.iter().zip(&mi.shards) {
        assert_eq!(
            (g.offset_ns, g.n, g.uncertainty_ns),
            (s.offset_ns, 4, mi.alignment.uncertainty_ns)
        );
        assert!(!g.trajectories.is_empty(), "shard {} has lanes", g.k);
        for id in &g.trajectories {
            let t = m
                .jobs
                .iter()
                .flat_map(|j| &j.trajectories)
                .find(|t| &t.id == id)
                .unwrap();
            assert_eq!(t.shard, Some(g.k));
        }
    }
    let lanes: usize = groups.iter().map(|g| g.trajectories.len()).sum();
    assert_eq!(
        lanes,
        m.jobs.iter().map(|j| j.trajectories.len()).sum::<usize>()
    );
    let html = std::fs::read_to_string(cwd.join("merged.html")).unwrap();
    assert!(
        html.contains("\"shards\":[{\"k\":1,\"n\":4"),
        "the page's data holds the shard groups"
    );
    assert!(html.contains("renderShardGroups"));

    let o = run(cwd, &["baseline", "save", md, "--name", "merged"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(cwd, &["compare", md, "--baseline", "merged"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));

    // Shards that do not belong together: exit 2 naming what does not match.
    let s = |k: u32| runs.join(format!("shard-{k}"));
    let tampered = cwd.join("tampered");
    support::copy_dir(&s(4), &tampered);
    let mut r: Value =
        serde_json::from_slice(&std::fs::read(tampered.join("report.json")).unwrap()).unwrap();
    r["shard"]["suite_fingerprint"] = Value::from("sha256:0000");
    std::fs::write(
        tampered.join("report.json"),
        serde_json::to_vec(&r).unwrap(),
    )
    .unwrap();
    let cases: Vec<(Vec<PathBuf>, &str)> = vec![
        (
            vec![s(1), s(2), s(3), tampered.clone()],
            "suite fingerprint sha256:0000 differs",
        ),
        (vec![s(1), s(2), s(3)], "missing"),
        (vec![s(1), s(2), s(3), s(3)], "appears twice"),
        (
            vec![s(1), s(2), s(3), merged_dir.clone()],
            "already a merged run",
        ),
    ];
    for (i, (dirs, want)) in cases.into_iter().enumerate() {
        let out = cwd.join(format!("bad{i}"));
        let mut args: Vec<String> = vec!["merge".into()];
        args.extend(dirs.iter().map(|d| d.display().to_string()));
        args.extend(["--out".into(), out.display().to_string()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run(cwd, &refs);
        assert_eq!(o.status.code(), Some(2), "{want}: {}", describe(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(want),
            "{want}: {}",
            describe(&o)
        );
    }
}

/// `k8s` refuses what every shard pod would fail on: an `api_key_env` naming a variable
/// the pods set or their shell needs (the key would replace it and be printed), and a
/// `--start-delay-s` past the 24 h that `run --start-at` accepts.
#[test]
fn k8s_refuses_a_colliding_key_variable_and_a_start_past_a_day() {
    let tmp = tempfile::tempdir().unwrap();
    for var in ["INFERSCOPE_RUNS", "PATH", "JOB_COMPLETION_INDEX", "CI"] {
        let suite = support::write(
            tmp.path(),
            "k.toml",
            &format!(
                "name = \"k\"\nendpoint = \"http://engine:8000/v1\"\nmodel = \"m\"\n\
                 api_key_env = \"{var}\"\n[[jobs]]\nname = \"one\"\nkind = \"context\"\n\
                 sizes = [16]\n"
            ),
        );
        let o = run(
            &repo(),
            &[
                "k8s",
                suite.to_str().unwrap(),
                "--shards",
                "2",
                "--image",
                "i",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{var}: {}", describe(&o));
        assert!(o.stdout.is_empty(), "{var}: no manifest");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("field `api_key_env`"), "{var}: {err}");
    }
    let o = k8s_load(&["--start-delay-s", "86401"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--start-delay-s 86401"));
}

/// A shard pod stopped by the kubelet (SIGTERM to its shell, the container's PID 1) passes
/// the signal to its run, which writes a cancelled run directory, and fails (143) so the
/// Job's DisruptionTarget rule retries it; the retry, and a re-applied Job's pods and
/// merge, set the earlier attempt's directory aside under `earlier/` and run again.
#[test]
fn a_stopped_or_retried_shard_pod_sets_its_earlier_attempt_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::write(
        tmp.path(),
        "s.toml",
        "name = \"s\"\n[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [16]\n\
         max_tokens = 64\nconcurrency = 1\ncount = 20\n",
    );
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let start_at = format!("{}.000", now.as_secs());
    let o = run(
        &repo(),
        &[
            "k8s",
            suite.to_str().unwrap(),
            "--shards",
            "1",
            "--image",
            "local",
            "--start-at",
            &start_at,
        ],
    );
    let ((shard_script, shard_env), (merge_script, merge_env)) = pod_scripts(&o);
    let runs = tmp.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let report_of = |dir: &Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap()
    };

    // Stopped mid-run: the run is cancelled, the pod fails with 143.
    let child = pod(&shard_script, &shard_env, &runs, Some(0))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: kill(2) on the child's pid; no memory is touched.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(143), "{}", describe(&o));
    assert_eq!(report_of(&runs.join("shard-1"))["cancelled"], true);

    // The retry: the cancelled attempt is set aside, the shard runs to its end.
    let o = pod(&shard_script, &shard_env, &runs, Some(0))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("kept as earlier/shard-1.1"));
    assert_eq!(
        report_of(&runs.join("earlier/shard-1.1"))["cancelled"],
        true
    );
    assert_eq!(report_of(&runs.join("shard-1"))["cancelled"], false);

    // The merge, then a re-applied merge: the first merged run is set aside.
    for _ in 0..2 {
        let o = pod(&merge_script, &merge_env, &runs, None)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    }
    assert!(runs.join("earlier/merged.1/report.json").is_file());
    assert!(runs.join("merged/report.json").is_file());
}
