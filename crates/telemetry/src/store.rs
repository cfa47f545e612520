//! Writing and reading `samples/` (formats in the module docs of [`super`]).

use super::{MetricsTimeline, PowerTimeline, ProcTimeline, TelemetryRun};
use serde::{Deserialize, Serialize};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Schema id written in `sources.json`.
pub const SCHEMA: &str = "inferscope.samples.v1";

/// Failure to write or read `samples/`.
#[derive(Debug, thiserror::Error)]
pub enum SamplesError {
    /// A file could not be created, written, renamed or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON value could not be encoded or decoded (line is 1-based; 0 for a whole file).
    #[error("{path}:{line}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line, 0 for `sources.json`.
        line: usize,
        /// The decoder error.
        #[source]
        source: serde_json::Error,
    },
    /// `sources.json` names another schema.
    #[error("{path}: schema {found:?}, expected {SCHEMA:?}")]
    Schema {
        /// The file.
        path: PathBuf,
        /// The schema found.
        found: String,
    },
}

#[derive(Serialize)]
struct SourcesOut<'a> {
    schema: &'static str,
    clock_domain_id: &'a str,
    reference_instant_unix_ns: u64,
    started_elapsed_ns: u64,
    stopped_elapsed_ns: u64,
    proc: &'a Option<ProcTimeline>,
    power: &'a Option<PowerTimeline>,
    metrics: &'a Option<MetricsTimeline>,
    prometheus: &'a Option<MetricsTimeline>,
}

/// `samples/sources.json` as read back (schema [`SCHEMA`]; format in the module docs of
/// [`crate`]). The timelines carry no samples here: those are in the JSONL files,
/// read separately.
#[derive(Clone, Debug, Deserialize)]
pub struct SamplesSources {
    /// Schema id.
    pub schema: String,
    /// Clock domain of every sample's `elapsed_ns`.
    pub clock_domain_id: String,
    /// Unix ns of that clock's reference instant.
    pub reference_instant_unix_ns: u64,
    /// Sampling start, ns.
    pub started_elapsed_ns: u64,
    /// Sampling stop, ns.
    pub stopped_elapsed_ns: u64,
    /// `/proc` source, `null` when not configured.
    pub proc: Option<ProcTimeline>,
    /// Power source, `null` when not configured.
    pub power: Option<PowerTimeline>,
    /// Metrics source, `null` when not configured.
    pub metrics: Option<MetricsTimeline>,
    /// Prometheus source, `null` (or absent, in files written before it existed) when not
    /// configured.
    #[serde(default)]
    pub prometheus: Option<MetricsTimeline>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SamplesError + '_ {
    move |source| SamplesError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `path` atomically (temp file in the same directory, then rename).
fn write_atomic(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> Result<(), SamplesError>,
) -> Result<(), SamplesError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir).map_err(io_err(path))?;
    {
        let mut w = BufWriter::new(tmp.as_file());
        f(&mut w)?;
        w.flush().map_err(io_err(path))?;
    }
    tmp.persist(path).map_err(|e| SamplesError::Io {
        path: path.to_path_buf(),
        source: e.error,
    })?;
    Ok(())
}

fn write_jsonl<T: Serialize>(path: &Path, items: &[T]) -> Result<(), SamplesError> {
    write_atomic(path, |w| {
        for (i, it) in items.iter().enumerate() {
            serde_json::to_writer(&mut *w, it).map_err(|source| SamplesError::Json {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })?;
            w.write_all(b"\n").map_err(io_err(path))?;
        }
        Ok(())
    })
}

/// Reads `path` through the bounded reader ([`crate::fsio`]: no symlink, no FIFO or
/// device such as `/dev/zero`, at most `limit` bytes checked before reading).
fn read_bounded(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, SamplesError> {
    inferscope_fsio::read_optional(path, limit).map_err(|e| SamplesError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e.to_string()),
    })
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, SamplesError> {
    let Some(bytes) = read_bounded(path, inferscope_fsio::limits::SAMPLES_FILE_BYTES)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.push(
            serde_json::from_slice(line).map_err(|source| SamplesError::Json {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })?,
        );
    }
    Ok(out)
}

impl TelemetryRun {
    /// Writes `<dir>/samples/{proc,gpu,metrics,prometheus}.jsonl` and `<dir>/samples/sources.json`
    /// (creating `samples/`), each file atomically. Formats: module docs of
    /// [`crate`]. Returns the `samples/` path.
    pub fn write_samples(&self, dir: &Path) -> Result<PathBuf, SamplesError> {
        let sdir = dir.join("samples");
        std::fs::create_dir_all(&sdir).map_err(io_err(&sdir))?;
        let empty_proc = Vec::new();
        let empty_power = Vec::new();
        let empty_metrics = Vec::new();
        write_jsonl(
            &sdir.join("proc.jsonl"),
            self.proc
                .as_ref()
                .map(|p| &p.samples)
                .unwrap_or(&empty_proc),
        )?;
        write_jsonl(
            &sdir.join("gpu.jsonl"),
            self.power
                .as_ref()
                .map(|p| &p.samples)
                .unwrap_or(&empty_power),
        )?;
        write_jsonl(
            &sdir.join("metrics.jsonl"),
            self.metrics
                .as_ref()
                .map(|p| &p.samples)
                .unwrap_or(&empty_metrics),
        )?;
        write_jsonl(
            &sdir.join("prometheus.jsonl"),
            self.prometheus
                .as_ref()
                .map(|p| &p.samples)
                .unwrap_or(&empty_metrics),
        )?;
        let sources = sdir.join("sources.json");
        let out = SourcesOut {
            schema: SCHEMA,
            clock_domain_id: &self.clock_domain_id,
            reference_instant_unix_ns: self.reference_instant_unix_ns,
            started_elapsed_ns: self.started_elapsed_ns,
            stopped_elapsed_ns: self.stopped_elapsed_ns,
            proc: &self.proc,
            power: &self.power,
            metrics: &self.metrics,
            prometheus: &self.prometheus,
        };
        write_atomic(&sources, |w| {
            serde_json::to_writer_pretty(&mut *w, &out).map_err(|source| SamplesError::Json {
                path: sources.clone(),
                line: 0,
                source,
            })?;
            w.write_all(b"\n").map_err(io_err(&sources))
        })?;
        Ok(sdir)
    }

    /// Reads a `samples/` directory back. `dir` may be the run directory (containing
    /// `samples/`) or the `samples/` directory itself. Missing JSONL files read as empty;
    /// `sources.json` is required. The `sample_count` fields are kept as written.
    pub fn read_samples(dir: &Path) -> Result<TelemetryRun, SamplesError> {
        let sdir = if dir.join("sources.json").is_file() {
            dir.to_path_buf()
        } else {
            dir.join("samples")
        };
        let sources = sdir.join("sources.json");
        let text = read_bounded(&sources, inferscope_fsio::limits::SAMPLES_SOURCES_BYTES)?
            .ok_or_else(|| io_err(&sources)(std::io::Error::from(std::io::ErrorKind::NotFound)))?;
        let s: SamplesSources =
            serde_json::from_slice(&text).map_err(|source| SamplesError::Json {
                path: sources.clone(),
                line: 0,
                source,
            })?;
        if s.schema != SCHEMA {
            return Err(SamplesError::Schema {
                path: sources,
                found: s.schema,
            });
        }
        let mut run = TelemetryRun {
            clock_domain_id: s.clock_domain_id,
            reference_instant_unix_ns: s.reference_instant_unix_ns,
            started_elapsed_ns: s.started_elapsed_ns,
            stopped_elapsed_ns: s.stopped_elapsed_ns,
            proc: s.proc,
            power: s.power,
            metrics: s.metrics,
            prometheus: s.prometheus,
        };
        if let Some(p) = &mut run.proc {
            p.samples = read_jsonl(&sdir.join("proc.jsonl"))?;
        }
        if let Some(p) = &mut run.power {
            p.samples = read_jsonl(&sdir.join("gpu.jsonl"))?;
        }
        if let Some(m) = &mut run.metrics {
            m.samples = read_jsonl(&sdir.join("metrics.jsonl"))?;
        }
        if let Some(m) = &mut run.prometheus {
            m.samples = read_jsonl(&sdir.join("prometheus.jsonl"))?;
        }
        Ok(run)
    }
}
