//! `requests.jsonl`: the run's per-request records beside `report.json`.
//!
//! [`RecordsWriter`] streams compact lines ([`inferscope_model::records`]) to disk through a
//! bounded buffer, hashing as it writes; [`RecordsWriter::finish`] gives the
//! [`RequestsFile`] reference that `report.json` (written last) carries. [`read_into`]
//! reads the file back line by line through the bounded, no-follow reader
//! ([`inferscope_fsio`]): its length must be the one `report.json` states before a byte is
//! parsed, each line is bounded ([`limits::REQUESTS_LINE_BYTES`]), and the record count
//! and SHA-256 must match at the end. Every error names the file and, for a line, its
//! number and field.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use inferscope_fsio::{self as fsio, limits};
use inferscope_model::records::{
    REQUESTS_FILE, REQUESTS_SCHEMA, RequestsHeader, UNIT_LINE_PREFIX, UnitRecord, decode_line,
    decode_unit_line, encode_line, encode_unit_line, is_readable_schema,
};
use inferscope_model::{RequestRecord, RequestsFile, RunReport};

/// Bytes buffered before a write to disk.
const WRITE_BUFFER_BYTES: usize = 256 << 10;

/// Streams `requests.jsonl`: a header line, then one compact line per record.
pub struct RecordsWriter {
    out: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    jobs: Vec<String>,
    hasher: Sha256,
    bytes: u64,
    records: u64,
    units: u64,
}

impl RecordsWriter {
    /// Creates (truncates) `run_dir/requests.jsonl` and writes the header of a run with
    /// these job ids (in `report.json` order).
    pub fn create(run_dir: &Path, run_id: &str, jobs: Vec<String>) -> std::io::Result<Self> {
        let path = run_dir.join(REQUESTS_FILE);
        // Owner-only, like report.json (records carry redacted server error text).
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        let mut w = Self {
            out: std::io::BufWriter::with_capacity(WRITE_BUFFER_BYTES, file),
            path,
            jobs: Vec::new(),
            hasher: Sha256::new(),
            bytes: 0,
            records: 0,
            units: 0,
        };
        let header = RequestsHeader::new(run_id, jobs);
        let line = serde_json::to_vec(&header).expect("the header always serializes");
        w.jobs = header.jobs;
        w.put(&line)?;
        Ok(w)
    }

    fn put(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.out.write_all(line)?;
        self.out.write_all(b"\n")?;
        self.hasher.update(line);
        self.hasher.update(b"\n");
        self.bytes += line.len() as u64 + 1;
        Ok(())
    }

    /// Appends the record of a request of job `job` (an index into the header's jobs).
    pub fn append(&mut self, job: usize, r: &RequestRecord) -> std::io::Result<()> {
        let job_id = self.jobs.get(job).map_or("", String::as_str);
        let line = encode_line(job, job_id, r);
        self.records += 1;
        self.put(&line)
    }

    /// Appends the unit line of a unit of load job `job` (an index into the header's jobs).
    pub fn append_unit(&mut self, job: usize, u: &UnitRecord) -> std::io::Result<()> {
        let job_id = self.jobs.get(job).map_or("", String::as_str);
        let line = encode_unit_line(job, job_id, u);
        self.units += 1;
        self.put(&line)
    }

    /// Flushes and syncs the file; the reference `report.json` carries.
    pub fn finish(mut self) -> std::io::Result<RequestsFile> {
        self.out.flush()?;
        self.out.get_ref().sync_all()?;
        Ok(RequestsFile {
            path: REQUESTS_FILE.into(),
            schema: REQUESTS_SCHEMA.into(),
            bytes: self.bytes,
            records: self.records,
            units: self.units,
            sha256: hex::encode(self.hasher.finalize()),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes every job's `requests` of `report` to `run_dir/requests.jsonl` and sets
/// `report.requests_file`.
pub fn write_report_records(run_dir: &Path, report: &mut RunReport) -> std::io::Result<()> {
    let jobs = report.jobs.iter().map(|j| j.id.clone()).collect();
    let mut w = RecordsWriter::create(run_dir, &report.run_id, jobs)?;
    for (i, j) in report.jobs.iter().enumerate() {
        for r in &j.requests {
            w.append(i, r)?;
        }
        for u in &j.units {
            w.append_unit(i, u)?;
        }
    }
    report.requests_file = Some(w.finish()?);
    Ok(())
}

/// Fills every job's `requests` of `report` (read from `run_dir`) from its
/// `requests.jsonl`, checked against `report.requests_file`. A report without a
/// `requests_file` is refused (every run names its records file). Errors name the file
/// (and the line and field of a bad line).
pub fn read_into(run_dir: &Path, report: &mut RunReport) -> Result<(), String> {
    let mut requests: Vec<Vec<RequestRecord>> = vec![Vec::new(); report.jobs.len()];
    let mut units: Vec<Vec<UnitRecord>> = vec![Vec::new(); report.jobs.len()];
    visit(run_dir, report, |j, line| match line {
        Line::Request(r) => requests[j].push(*r),
        Line::Unit(u) => units[j].push(u),
    })?;
    for ((j, r), u) in report.jobs.iter_mut().zip(requests).zip(units) {
        j.requests = r;
        j.units = u;
    }
    Ok(())
}

/// One line of `requests.jsonl` after its header.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A request's record (boxed: a line is handed over one at a time).
    Request(Box<RequestRecord>),
    /// A load unit's line.
    Unit(UnitRecord),
}

/// Streams the lines of `run_dir/requests.jsonl` to `f` with their job index, one at a
/// time (nothing is held but the line being read), checked as [`read_into`] checks them:
/// a caller that keeps only what it needs reads a run of any size in bounded memory. The
/// length is checked before the first line; the count and SHA-256 only at the end, so `f`
/// may have seen lines of a file that is then refused (the error says so).
pub fn visit(run_dir: &Path, report: &RunReport, f: impl FnMut(usize, Line)) -> Result<(), String> {
    let Some(meta) = report.requests_file.clone() else {
        // Every run writes its records file and names it here: a v3 report without the
        // entry was damaged or edited, and its per-request figures cannot be read.
        return Err(format!(
            "{}: `requests_file` is missing or null: a run's report names its \
             per-request records file ({REQUESTS_FILE}), so the records cannot be read",
            run_dir.join("report.json").display()
        ));
    };
    let shown = run_dir.join(REQUESTS_FILE);
    let shown = shown.display();
    let run_id = report.run_id.as_str();
    let ids: Vec<&str> = report.jobs.iter().map(|j| j.id.as_str()).collect();
    read_file(run_dir, &meta, run_id, &ids, f).map_err(|e| format!("{shown}: {e}"))
}

fn read_file(
    run_dir: &Path,
    meta: &RequestsFile,
    run_id: &str,
    ids: &[&str],
    mut f: impl FnMut(usize, Line),
) -> Result<(), String> {
    check_entry(meta)?;
    let mut reader = BufReader::new(open_checked(run_dir, meta)?);
    let mut hasher = Sha256::new();
    let mut buf = Vec::new();
    let mut line_no = 0usize;
    let mut records = 0u64;
    let mut units = 0u64;
    let mut header: Option<RequestsHeader> = None;
    while read_line(&mut reader, &mut buf, line_no + 1)? {
        line_no += 1;
        hasher.update(&buf);
        let line = &buf[..buf.len() - 1];
        match &header {
            None => header = Some(check_header(line, line_no, meta, run_id, ids)?),
            Some(h)
                if h.schema != inferscope_model::records::REQUESTS_SCHEMA_V1
                    && line.starts_with(UNIT_LINE_PREFIX) =>
            {
                let (j, u) =
                    decode_unit_line(line, &h.jobs).map_err(|e| format!("line {line_no}: {e}"))?;
                units += 1;
                if units > meta.units {
                    return Err(format!(
                        "line {line_no}: more unit lines than the {} report.json states",
                        meta.units
                    ));
                }
                f(j, Line::Unit(u));
            }
            Some(h) => {
                let (j, r) =
                    decode_line(line, &h.jobs).map_err(|e| format!("line {line_no}: {e}"))?;
                records += 1;
                if records > meta.records {
                    return Err(format!(
                        "line {line_no}: more records than the {} report.json states",
                        meta.records
                    ));
                }
                f(j, Line::Request(Box::new(r)));
            }
        }
    }
    if header.is_none() {
        return Err("empty: no header line".into());
    }
    check_totals(meta, records, units, &hex::encode(hasher.finalize()))
}

/// What report.json's `requests_file` entry says, checked before the file is opened: its
/// path, a schema this version reads, and a length within the limit.
fn check_entry(meta: &RequestsFile) -> Result<(), String> {
    if meta.path != REQUESTS_FILE {
        return Err(format!(
            "report.json names the records file {:?}; only {REQUESTS_FILE:?} is read",
            meta.path
        ));
    }
    if !is_readable_schema(&meta.schema) {
        return Err(format!(
            "unknown schema {:?} (this version reads {REQUESTS_SCHEMA:?} and v1)",
            meta.schema
        ));
    }
    if meta.bytes > limits::REQUESTS_BYTES {
        return Err(format!(
            "report.json says {} bytes, above the limit of {}",
            meta.bytes,
            fsio::human_bytes(limits::REQUESTS_BYTES)
        ));
    }
    Ok(())
}

/// Opens the records file under `run_dir` and checks its length against the entry's; the
/// reader it returns stops one byte past the recorded length.
fn open_checked(run_dir: &Path, meta: &RequestsFile) -> Result<std::io::Take<File>, String> {
    let opened = fsio::Root::open(run_dir, true)
        .and_then(|r| r.open_file(&[REQUESTS_FILE]))
        .map_err(|e| match e {
            fsio::ReadError::NotFound => {
                "not found: report.json lists per-request records in it".to_string()
            }
            e => e.to_string(),
        })?;
    let len = opened.meta.len();
    if len != meta.bytes {
        let what = if len < meta.bytes {
            "truncated"
        } else {
            "longer than recorded"
        };
        return Err(format!(
            "{what}: {len} bytes, report.json says {} bytes",
            meta.bytes
        ));
    }
    Ok(opened.file.take(meta.bytes.saturating_add(1)))
}

/// Reads line `line_no` into `buf`, line end included: `false` at the end of the file; an
/// error for a line over the limit or one without a line end.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, line_no: usize) -> Result<bool, String> {
    buf.clear();
    let n = reader
        .take(limits::REQUESTS_LINE_BYTES + 1)
        .read_until(b'\n', buf)
        .map_err(|e| format!("unreadable ({})", e.kind()))?;
    if n == 0 {
        return Ok(false);
    }
    if buf.last() != Some(&b'\n') {
        if n as u64 > limits::REQUESTS_LINE_BYTES {
            return Err(format!(
                "line {line_no}: longer than the limit of {}",
                fsio::human_bytes(limits::REQUESTS_LINE_BYTES)
            ));
        }
        return Err(format!("line {line_no}: truncated (no line end)"));
    }
    Ok(true)
}

/// The file's first line: a header of the schema report.json states, for this run and
/// its jobs.
fn check_header(
    line: &[u8],
    line_no: usize,
    meta: &RequestsFile,
    run_id: &str,
    ids: &[&str],
) -> Result<RequestsHeader, String> {
    let h: RequestsHeader = serde_json::from_slice(line)
        .map_err(|e| format!("line {line_no}: not a requests header: {e}"))?;
    if h.schema != meta.schema {
        return Err(format!(
            "line {line_no}: field `schema`: {:?} is not the schema report.json \
             states ({:?})",
            h.schema, meta.schema
        ));
    }
    if h.run_id != run_id {
        return Err(format!(
            "line {line_no}: field `run_id`: {:?} is not this run's ({run_id:?})",
            h.run_id
        ));
    }
    if h.jobs != ids {
        return Err(format!(
            "line {line_no}: field `jobs`: does not list report.json's jobs"
        ));
    }
    Ok(h)
}

/// The counts and the SHA-256 of a file read to its end, against report.json's entry.
fn check_totals(meta: &RequestsFile, records: u64, units: u64, sha: &str) -> Result<(), String> {
    if records != meta.records {
        return Err(format!(
            "{records} records, report.json says {}",
            meta.records
        ));
    }
    if units != meta.units {
        return Err(format!(
            "{units} unit lines, report.json says {}",
            meta.units
        ));
    }
    if sha != meta.sha256 {
        return Err(format!(
            "SHA-256 {sha} does not match report.json's {}",
            meta.sha256
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferscope_model::RequestStatus;

    fn rec(id: &str, send: u64) -> RequestRecord {
        let mut r = RequestRecord::new(id, send, send, true);
        r.status = RequestStatus::Success;
        r.ttft_ns = Some(send + 1_000);
        r.itl_ns = vec![10, 20];
        r
    }

    #[test]
    fn written_records_read_back_and_their_reference_matches() {
        let dir = tempfile::tempdir().unwrap();
        let jobs = vec!["s::a".to_string(), "s::b".to_string()];
        let mut w = RecordsWriter::create(dir.path(), "run1", jobs).unwrap();
        w.append(0, &rec("s::a#0", 5)).unwrap();
        w.append(1, &rec("elsewhere", 7)).unwrap();
        w.append(0, &rec("s::a#1", 9)).unwrap();
        let meta = w.finish().unwrap();
        let bytes = std::fs::read(dir.path().join(REQUESTS_FILE)).unwrap();
        assert_eq!(meta.bytes, bytes.len() as u64);
        assert_eq!(meta.records, 3);
        assert_eq!(meta.sha256, hex::encode(Sha256::digest(&bytes)));
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 4);
    }

    /// A 128k-token streamed answer (131,071 gaps of about 20 ms, 8
    /// digits each: a line of about 1.2 MB, above the old 1 MiB bound) is written and read
    /// back like any other record, every gap exact.
    #[test]
    fn a_128k_token_answer_is_an_ordinary_line() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = rec("s::a#0", 5);
        r.itl_ns = (0..131_071u64)
            .map(|i| 19_000_000 + (i * 7_919) % 2_000_000)
            .collect();
        r.token_event_count = 131_072;
        let mut w = RecordsWriter::create(dir.path(), "run1", vec!["s::a".into()]).unwrap();
        w.append(0, &r).unwrap();
        let meta = w.finish().unwrap();
        assert!(meta.bytes > 1 << 20, "{} bytes", meta.bytes);
        let mut back = Vec::new();
        read_file(dir.path(), &meta, "run1", &["s::a"], |_, l| {
            if let Line::Request(q) = l {
                back.push(*q)
            }
        })
        .unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].itl_ns, r.itl_ns);
    }

    /// The line bound follows from what a record can hold: the most gaps the client keeps
    /// ([`inferscope_model::request::MAX_RECORDED_GAPS`]), each as long as a gap can be
    /// written (u64::MAX), in the request's list and again in its choices' lists, with the
    /// longest error text, fits [`limits::REQUESTS_LINE_BYTES`].
    #[test]
    fn the_worst_case_line_fits_the_line_bound() {
        use inferscope_model::request::{ChoiceRecord, MAX_ERROR_BYTES, MAX_RECORDED_GAPS};
        let mut r = rec("s::a#0", 5);
        r.itl_ns = vec![u64::MAX; MAX_RECORDED_GAPS];
        let half = MAX_RECORDED_GAPS / 2;
        r.choices = (0..2)
            .map(|i| ChoiceRecord {
                index: i,
                itl_ns: vec![u64::MAX; half],
                finish_reason: Some("length".into()),
                text_bytes: Some(u64::MAX),
                ..Default::default()
            })
            .collect();
        r.error = Some("\"".repeat(MAX_ERROR_BYTES));
        let line = encode_line(0, "s::a", &r);
        assert!(
            (line.len() as u64) < limits::REQUESTS_LINE_BYTES - (1 << 20),
            "{} bytes",
            line.len()
        );
    }
}
