//! Prometheus text format 0.0.4 and OpenMetrics 1.0 exposition parser (pure, no I/O).
//!
//! Families are built from `# TYPE` lines; the type is never inferred from a suffix
//! (`vllm:iteration_tokens_total` is a histogram). Source:
//! docs/telemetry.md "Engine counters and profiles", field cases C13 and C17.
//!
//! What the parser accepts:
//! - a counter declared as `x` (OpenMetrics: samples `x_total`, `x_created`) or as `x_total`
//!   (0.0.4: samples `x_total`, and `prometheus_client`'s separate `# TYPE x_created gauge`
//!   family, which is folded into the counter as its `_created` signal — never a value);
//! - `# HELP`, `# UNIT`, other comments, `# EOF` (anything after it is ignored);
//! - label values with the escapes `\"`, `\\`, `\n`;
//! - the values `NaN`, `+Inf`, `-Inf`, `Inf` (any case), and a timestamp after the value
//!   (0.0.4: integer milliseconds; OpenMetrics: seconds, possibly fractional), plus an
//!   OpenMetrics exemplar (` # {...} v [ts]`), which is skipped;
//! - `le="+Inf"` and `le="Inf"` both as the overflow bucket of a histogram.
//!
//! A line that does not parse is skipped and reported in [`Exposition::errors`]; the rest of
//! the exposition is still usable.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The exposition format of one scrape, chosen from the HTTP `Content-Type`
/// (see [`format_from_content_type`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpositionFormat {
    /// `text/plain; version=0.0.4` (or no / unknown content type).
    PrometheusText,
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
}

/// Chooses the exposition format from a `Content-Type` header value: any
/// `application/openmetrics-text` → [`ExpositionFormat::OpenMetrics`], anything else (including a
/// missing header) → [`ExpositionFormat::PrometheusText`]. Source: C13 ("format chosen from
/// Content-Type").
pub fn format_from_content_type(content_type: Option<&str>) -> ExpositionFormat {
    match content_type {
        Some(ct)
            if ct
                .trim()
                .to_ascii_lowercase()
                .starts_with("application/openmetrics-text") =>
        {
            ExpositionFormat::OpenMetrics
        }
        _ => ExpositionFormat::PrometheusText,
    }
}

/// A metric family's declared type (`# TYPE name <type>`); `Unknown` for samples with no
/// `# TYPE` line (0.0.4 "untyped", OpenMetrics "unknown").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricType {
    /// Monotonic counter; samples `_total` (value) and `_created` (start time, reset signal).
    Counter,
    /// Point-in-time value.
    Gauge,
    /// Cumulative histogram: `_bucket{le}`, `_sum`, `_count`, `_created`.
    Histogram,
    /// Summary: `{quantile}`, `_sum`, `_count`, `_created`.
    Summary,
    /// OpenMetrics gauge histogram: `_bucket`, `_gsum`, `_gcount`.
    GaugeHistogram,
    /// OpenMetrics info: `_info`.
    Info,
    /// OpenMetrics state set.
    StateSet,
    /// No or unrecognised `# TYPE`.
    Unknown,
}

impl MetricType {
    fn parse(s: &str) -> MetricType {
        match s {
            "counter" => MetricType::Counter,
            "gauge" => MetricType::Gauge,
            "histogram" => MetricType::Histogram,
            "summary" => MetricType::Summary,
            "gaugehistogram" => MetricType::GaugeHistogram,
            "info" => MetricType::Info,
            "stateset" => MetricType::StateSet,
            _ => MetricType::Unknown,
        }
    }

    /// Sample-name suffixes a family of this type may carry (besides the bare name).
    fn suffixes(self) -> &'static [&'static str] {
        match self {
            MetricType::Counter => &["_total", "_created"],
            MetricType::Histogram => &["_bucket", "_sum", "_count", "_created"],
            MetricType::Summary => &["_sum", "_count", "_created"],
            MetricType::GaugeHistogram => &["_bucket", "_gsum", "_gcount"],
            MetricType::Info => &["_info"],
            MetricType::Gauge | MetricType::StateSet | MetricType::Unknown => &[],
        }
    }
}

/// One sample line: `name{labels} value [timestamp]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricSample {
    /// The full sample name as written (e.g. `vllm:prompt_tokens_total`).
    pub name: String,
    /// The part of `name` after the family name: `""`, `"_total"`, `"_created"`, `"_bucket"`,
    /// `"_sum"`, `"_count"`, … For a 0.0.4 counter declared as `x_total`, its `x_total` samples
    /// have suffix `""` and its folded `x_created` samples have suffix `"_created"`.
    pub suffix: String,
    /// Labels in written order, values unescaped.
    pub labels: Vec<(String, String)>,
    /// The value; may be NaN or ±infinity (C17).
    pub value: f64,
    /// The timestamp as written after the value: integer ms in 0.0.4, seconds in OpenMetrics.
    pub timestamp: Option<f64>,
}

impl MetricSample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether this sample carries a counter's value (suffix `""` or `"_total"`).
    pub fn is_counter_value(&self) -> bool {
        self.suffix.is_empty() || self.suffix == "_total"
    }
}

/// One metric family: a `# TYPE` declaration (or an undeclared sample name) and its samples.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricFamily {
    /// The declared name (`x` or `x_total` for counters, see [`MetricFamily::base_name`]).
    pub name: String,
    /// Declared type.
    pub metric_type: MetricType,
    /// `# HELP` text, unescaped.
    pub help: Option<String>,
    /// `# UNIT` (OpenMetrics).
    pub unit: Option<String>,
    /// Samples in exposition order.
    pub samples: Vec<MetricSample>,
}

impl MetricFamily {
    /// The counter base name: the declared name without a trailing `_total` for counters
    /// (so `x` in OpenMetrics and `x_total` in 0.0.4 both give `x`); the name otherwise.
    pub fn base_name(&self) -> &str {
        base_of(&self.name, self.metric_type)
    }
}

fn base_of(name: &str, t: MetricType) -> &str {
    if t == MetricType::Counter {
        name.strip_suffix("_total").unwrap_or(name)
    } else {
        name
    }
}

/// A line the parser skipped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

/// A parsed exposition (one scrape body).
#[derive(Clone, Debug, PartialEq)]
pub struct Exposition {
    /// The format the body was parsed as.
    pub format: ExpositionFormat,
    /// Families in first-seen order.
    pub families: Vec<MetricFamily>,
    /// Whether `# EOF` was seen (mandatory in OpenMetrics; its absence may mean truncation).
    pub eof: bool,
    /// Lines that were skipped.
    pub errors: Vec<LineError>,
}

impl Exposition {
    /// The family declared with exactly this name.
    pub fn family(&self, name: &str) -> Option<&MetricFamily> {
        self.families.iter().find(|f| f.name == name)
    }

    /// The counter family `name`, found whether `name` is given as `x` or `x_total` and whether
    /// the family was declared as `x` (OpenMetrics) or `x_total` (0.0.4) (C13). Falls back to an
    /// undeclared (`Unknown`) family named exactly `x_total` or `x`. A family declared with another
    /// type (e.g. a histogram named `x_total`) is never returned.
    pub fn counter(&self, name: &str) -> Option<&MetricFamily> {
        let base = name.strip_suffix("_total").unwrap_or(name);
        self.families
            .iter()
            .find(|f| f.metric_type == MetricType::Counter && f.base_name() == base)
            .or_else(|| {
                let total = format!("{base}_total");
                self.families.iter().find(|f| {
                    f.metric_type == MetricType::Unknown && (f.name == total || f.name == base)
                })
            })
    }

    /// The gauge family `name` (also accepts an undeclared family with that exact name).
    pub fn gauge(&self, name: &str) -> Option<&MetricFamily> {
        self.families.iter().find(|f| {
            f.name == name && matches!(f.metric_type, MetricType::Gauge | MetricType::Unknown)
        })
    }

    /// The histogram family `name`.
    pub fn histogram_family(&self, name: &str) -> Option<&MetricFamily> {
        self.families
            .iter()
            .find(|f| f.name == name && f.metric_type == MetricType::Histogram)
    }

    /// The histogram `name` summed over the series whose labels (other than `le`) satisfy
    /// `keep`; `None` when the family is absent or no series is kept. See [`Histogram`].
    pub fn histogram(
        &self,
        name: &str,
        keep: impl Fn(&[(String, String)]) -> bool,
    ) -> Option<Histogram> {
        let fam = self.histogram_family(name)?;
        Histogram::from_family(fam, keep)
    }
}

/// Parses one exposition body. Never fails as a whole: bad lines are listed in
/// [`Exposition::errors`]. Pure.
pub fn parse_exposition(text: &str, format: ExpositionFormat) -> Exposition {
    let mut families: Vec<MetricFamily> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut errors = Vec::new();
    let mut eof = false;

    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('#') {
            let rest = rest.trim_start();
            if rest == "EOF" || rest.starts_with("EOF ") {
                eof = true;
                break;
            }
            let mut parts = rest.splitn(3, [' ', '\t']);
            let keyword = parts.next().unwrap_or("");
            let (name, arg) = (parts.next(), parts.next());
            match (keyword, name) {
                ("TYPE", Some(name)) => {
                    let t = MetricType::parse(arg.unwrap_or("").trim());
                    match by_name.get(name) {
                        Some(&idx) => {
                            // A TYPE after samples of an undeclared family of that name.
                            if families[idx].metric_type == MetricType::Unknown {
                                families[idx].metric_type = t;
                            }
                        }
                        None => {
                            by_name.insert(name.to_string(), families.len());
                            families.push(MetricFamily {
                                name: name.to_string(),
                                metric_type: t,
                                help: None,
                                unit: None,
                                samples: Vec::new(),
                            });
                        }
                    }
                }
                ("HELP", Some(name)) => {
                    let idx = *by_name.entry(name.to_string()).or_insert_with(|| {
                        families.push(MetricFamily {
                            name: name.to_string(),
                            metric_type: MetricType::Unknown,
                            help: None,
                            unit: None,
                            samples: Vec::new(),
                        });
                        families.len() - 1
                    });
                    families[idx].help = Some(unescape_help(arg.unwrap_or("")));
                }
                ("UNIT", Some(name)) => {
                    if let Some(&idx) = by_name.get(name) {
                        families[idx].unit = Some(arg.unwrap_or("").trim().to_string());
                    }
                }
                _ => {} // other comments
            }
            continue;
        }
        match parse_sample_line(line) {
            Ok(mut s) => {
                let idx = match find_family(&families, &by_name, &s.name) {
                    Some((idx, suffix)) => {
                        s.suffix = suffix;
                        idx
                    }
                    None => {
                        by_name.insert(s.name.clone(), families.len());
                        families.push(MetricFamily {
                            name: s.name.clone(),
                            metric_type: MetricType::Unknown,
                            help: None,
                            unit: None,
                            samples: Vec::new(),
                        });
                        s.suffix = String::new();
                        families.len() - 1
                    }
                };
                families[idx].samples.push(s);
            }
            Err(message) => errors.push(LineError {
                line: line_no,
                message,
            }),
        }
    }

    fold_created_gauges(&mut families);
    Exposition {
        format,
        families,
        eof,
        errors,
    }
}

/// Finds the family a sample name belongs to: the exact declared name, or a declared name plus
/// a suffix valid for that family's type.
fn find_family(
    families: &[MetricFamily],
    by_name: &HashMap<String, usize>,
    sample_name: &str,
) -> Option<(usize, String)> {
    if let Some(&idx) = by_name.get(sample_name) {
        return Some((idx, String::new()));
    }
    for suffix in [
        "_total", "_created", "_bucket", "_sum", "_count", "_gsum", "_gcount", "_info",
    ] {
        if let Some(stem) = sample_name.strip_suffix(suffix)
            && let Some(&idx) = by_name.get(stem)
            && families[idx].metric_type.suffixes().contains(&suffix)
        {
            return Some((idx, suffix.to_string()));
        }
    }
    // 0.0.4 counter declared as `x_total`: its `x_created` sample (when not declared separately).
    if let Some(stem) = sample_name.strip_suffix("_created") {
        let total = format!("{stem}_total");
        if let Some(&idx) = by_name.get(&total)
            && families[idx].metric_type == MetricType::Counter
        {
            return Some((idx, "_created".to_string()));
        }
    }
    None
}

/// `prometheus_client` in 0.0.4 exposes a counter `x_total`'s creation time as a separate
/// `# TYPE x_created gauge` family (histograms and summaries likewise). Those families are
/// folded into their owner as `_created` samples so they never read as values (C13).
fn fold_created_gauges(families: &mut Vec<MetricFamily>) {
    let mut moves: Vec<(usize, usize)> = Vec::new(); // (created family, owner)
    for (ci, f) in families.iter().enumerate() {
        if !matches!(f.metric_type, MetricType::Gauge | MetricType::Unknown) {
            continue;
        }
        let Some(stem) = f.name.strip_suffix("_created") else {
            continue;
        };
        let total = format!("{stem}_total");
        let owner = families.iter().position(|o| {
            (o.metric_type == MetricType::Counter && (o.name == total || o.name == stem))
                || (matches!(o.metric_type, MetricType::Histogram | MetricType::Summary)
                    && o.name == stem)
        });
        if let Some(oi) = owner {
            moves.push((ci, oi));
        }
    }
    if moves.is_empty() {
        return;
    }
    for &(ci, oi) in &moves {
        let samples: Vec<MetricSample> = families[ci]
            .samples
            .drain(..)
            .map(|mut s| {
                s.suffix = "_created".to_string();
                s
            })
            .collect();
        families[oi].samples.extend(samples);
    }
    let drop: std::collections::HashSet<usize> = moves.iter().map(|m| m.0).collect();
    let mut i = 0;
    families.retain(|_| {
        let keep = !drop.contains(&i);
        i += 1;
        keep
    });
}

fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('\\') => out.push('\\'),
                Some('"') => out.push('"'),
                Some(o) => {
                    out.push('\\');
                    out.push(o);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parses one sample line. The returned sample's `suffix` is filled in by the caller.
fn parse_sample_line(line: &str) -> Result<MetricSample, String> {
    let mut it = line.char_indices().peekable();
    // metric name
    let name_end = match it.peek() {
        Some(&(_, c)) if is_name_start(c) => {
            let mut end = 0;
            while let Some(&(i, c)) = it.peek() {
                if is_name_char(c) {
                    end = i + c.len_utf8();
                    it.next();
                } else {
                    break;
                }
            }
            end
        }
        _ => return Err("sample line does not start with a metric name".into()),
    };
    let name = line[..name_end].to_string();
    let mut labels = Vec::new();
    let mut pos = name_end;
    let bytes = line.as_bytes();
    if bytes.get(pos) == Some(&b'{') {
        pos += 1;
        loop {
            pos = skip_ws(line, pos);
            match bytes.get(pos) {
                Some(b'}') => {
                    pos += 1;
                    break;
                }
                Some(_) => {}
                None => return Err("unterminated label set".into()),
            }
            let lstart = pos;
            while pos < bytes.len() && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_') {
                pos += 1;
            }
            if pos == lstart {
                return Err(format!("bad label name at byte {pos}"));
            }
            let lname = line[lstart..pos].to_string();
            pos = skip_ws(line, pos);
            if bytes.get(pos) != Some(&b'=') {
                return Err(format!("expected '=' after label {lname}"));
            }
            pos = skip_ws(line, pos + 1);
            if bytes.get(pos) != Some(&b'"') {
                return Err(format!("expected '\"' to open the value of label {lname}"));
            }
            pos += 1;
            let mut value = String::new();
            let mut closed = false;
            let rest = &line[pos..];
            let mut chars = rest.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, '\\')) => value.push('\\'),
                        Some((_, '"')) => value.push('"'),
                        Some((_, o)) => {
                            value.push('\\');
                            value.push(o);
                        }
                        None => return Err("dangling escape in label value".into()),
                    },
                    '"' => {
                        pos += i + 1;
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(format!("unterminated value of label {lname}"));
            }
            labels.push((lname, value));
            pos = skip_ws(line, pos);
            match bytes.get(pos) {
                Some(b',') => pos += 1,
                Some(b'}') => {
                    pos += 1;
                    break;
                }
                _ => return Err("expected ',' or '}' after a label".into()),
            }
        }
    }
    // value, optional timestamp, optional exemplar
    let rest = &line[pos..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return Err("expected whitespace before the value".into());
    }
    let rest = match rest.find(" # ") {
        Some(i) => &rest[..i], // OpenMetrics exemplar
        None => rest,
    };
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next().ok_or("missing value")?)?;
    let timestamp = match fields.next() {
        Some(t) => Some(
            t.parse::<f64>()
                .map_err(|_| format!("bad timestamp {t:?}"))?,
        ),
        None => None,
    };
    if let Some(extra) = fields.next() {
        return Err(format!("unexpected text after timestamp: {extra:?}"));
    }
    Ok(MetricSample {
        name,
        suffix: String::new(),
        labels,
        value,
        timestamp,
    })
}

fn skip_ws(line: &str, mut pos: usize) -> usize {
    let b = line.as_bytes();
    while pos < b.len() && (b[pos] == b' ' || b[pos] == b'\t') {
        pos += 1;
    }
    pos
}

/// Parses a sample value: decimal/scientific floats, `NaN`, `+Inf`, `-Inf`, `Inf` (any case).
pub fn parse_value(s: &str) -> Result<f64, String> {
    match s.to_ascii_lowercase().as_str() {
        "nan" => return Ok(f64::NAN),
        "+inf" | "inf" | "+infinity" | "infinity" => return Ok(f64::INFINITY),
        "-inf" | "-infinity" => return Ok(f64::NEG_INFINITY),
        _ => {}
    }
    s.parse::<f64>().map_err(|_| format!("bad value {s:?}"))
}

/// A histogram snapshot (one scrape, or the difference of two), summed over the kept series.
/// Units are the metric's own (seconds for `*_seconds`, tokens for token histograms).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// `(le, cumulative count)` sorted by `le`; the last bound is `+Inf` when exposed
    /// (`le="+Inf"` and `le="Inf"` both parse to infinity, C17).
    pub buckets: Vec<(f64, u64)>,
    /// `_sum` (may be non-finite when the engine exposes it so).
    pub sum: f64,
    /// `_count`.
    pub count: u64,
}

/// A quantile read off a bucket layout: it lies in `(lower_bound, upper_bound]` and no finer
/// statement is supported by the data (C18).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BucketQuantile {
    /// The quantile asked for, in `[0, 1]`.
    pub q: f64,
    /// Lower edge of the bucket holding the quantile (0 for the first bucket).
    pub lower_bound: f64,
    /// Upper edge (`le`) of that bucket; `None` when it is the `+Inf` overflow bucket.
    pub upper_bound: Option<f64>,
    /// Always `true`: the figure is limited by the bucket layout, not measured (C18).
    pub bucket_limited: bool,
    /// The Prometheus-style linear interpolation inside the bucket, an artifact of the layout
    /// (C18: 0.297 s); `None` for the overflow bucket.
    pub interpolated: Option<f64>,
}

impl BucketQuantile {
    /// Human text such as `"≤ 0.3 s"` (or `"> 10 s"` for the overflow bucket); `unit` is
    /// appended after a space when non-empty.
    pub fn display(&self, unit: &str) -> String {
        let sep = if unit.is_empty() { "" } else { " " };
        match self.upper_bound {
            Some(u) => format!("≤ {u}{sep}{unit}"),
            None => format!("> {}{sep}{unit}", self.lower_bound),
        }
    }
}

impl Histogram {
    /// Builds the histogram from a family, summing the series (grouped by labels other than
    /// `le`) whose labels satisfy `keep`. `None` if nothing is kept or a bucket bound is bad.
    pub fn from_family(
        fam: &MetricFamily,
        keep: impl Fn(&[(String, String)]) -> bool,
    ) -> Option<Histogram> {
        let mut buckets: Vec<(f64, f64)> = Vec::new();
        let mut sum = 0.0f64;
        let mut count = 0.0f64;
        let mut any = false;
        for s in &fam.samples {
            let others: Vec<(String, String)> = s
                .labels
                .iter()
                .filter(|(k, _)| k != "le")
                .cloned()
                .collect();
            if !keep(&others) {
                continue;
            }
            match s.suffix.as_str() {
                "_bucket" => {
                    let le = parse_value(s.label("le")?).ok()?;
                    any = true;
                    match buckets.iter_mut().find(|(b, _)| *b == le) {
                        Some(b) => b.1 += s.value,
                        None => buckets.push((le, s.value)),
                    }
                }
                "_sum" => {
                    sum += s.value;
                    any = true;
                }
                "_count" => {
                    count += s.value;
                    any = true;
                }
                _ => {}
            }
        }
        if !any {
            return None;
        }
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Some(Histogram {
            buckets: buckets
                .into_iter()
                .map(|(le, c)| (le, to_count(c)))
                .collect(),
            sum,
            count: to_count(count),
        })
    }

    /// Mean observation = `_sum / _count` (C17: 5.5 / 4 = 1.375 s; C18: 12.0 / 1000 = 0.012 s).
    /// `None` when `count` is 0 or the result is not finite.
    pub fn mean(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let m = self.sum / self.count as f64;
        m.is_finite().then_some(m)
    }

    /// The cumulative count of the overflow (`+Inf`) bucket, if exposed; equals `count` in a
    /// consistent exposition (C17).
    pub fn overflow_count(&self) -> Option<u64> {
        self.buckets
            .last()
            .filter(|(le, _)| *le == f64::INFINITY)
            .map(|(_, c)| *c)
    }

    /// `self − earlier`, bucket by bucket (the window between two scrapes, C18). `None` if the
    /// layouts differ or any cumulative count decreased (a reset).
    pub fn delta(&self, earlier: &Histogram) -> Option<Histogram> {
        if self.buckets.len() != earlier.buckets.len() || self.count < earlier.count {
            return None;
        }
        let mut buckets = Vec::with_capacity(self.buckets.len());
        for ((le, c), (le0, c0)) in self.buckets.iter().zip(&earlier.buckets) {
            if le != le0 || c < c0 {
                return None;
            }
            buckets.push((*le, c - c0));
        }
        Some(Histogram {
            buckets,
            sum: self.sum - earlier.sum,
            count: self.count - earlier.count,
        })
    }

    /// The bucket holding quantile `q` (rank `q × count`, first bucket whose cumulative count
    /// reaches it), with the interpolated figure labelled as an artifact (C18: p99 of 1000
    /// observations all in `le=0.3` → `≤ 0.3 s`, interpolated 0.297). `None` when `count` is 0,
    /// `q` is outside `[0, 1]`, or there are no buckets.
    pub fn quantile(&self, q: f64) -> Option<BucketQuantile> {
        if !(0.0..=1.0).contains(&q) || self.count == 0 || self.buckets.is_empty() {
            return None;
        }
        let rank = q * self.count as f64;
        let mut prev_le = 0.0f64;
        let mut prev_c = 0u64;
        for &(le, c) in &self.buckets {
            if c as f64 >= rank && c > 0 {
                if le == f64::INFINITY {
                    return Some(BucketQuantile {
                        q,
                        lower_bound: prev_le,
                        upper_bound: None,
                        bucket_limited: true,
                        interpolated: None,
                    });
                }
                let lower = if prev_le > le { 0.0 } else { prev_le };
                let in_bucket = (c - prev_c) as f64;
                let frac = if in_bucket > 0.0 {
                    (rank - prev_c as f64) / in_bucket
                } else {
                    1.0
                };
                let interp = lower + (le - lower) * frac;
                return Some(BucketQuantile {
                    q,
                    lower_bound: lower,
                    upper_bound: Some(le),
                    bucket_limited: true,
                    interpolated: interp.is_finite().then_some(interp),
                });
            }
            prev_le = le;
            prev_c = c;
        }
        None
    }
}

fn to_count(v: f64) -> u64 {
    if v.is_finite() && v > 0.0 {
        v.round() as u64
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_label_values_and_timestamp() {
        let e = parse_exposition(
            "# TYPE g gauge\ng{a=\"x\\\"y\",b=\"back\\\\slash\",c=\"line\\nbreak\"} 3 1700000000000\n",
            ExpositionFormat::PrometheusText,
        );
        assert!(e.errors.is_empty(), "{:?}", e.errors);
        let s = &e.gauge("g").unwrap().samples[0];
        assert_eq!(s.label("a"), Some("x\"y"));
        assert_eq!(s.label("b"), Some("back\\slash"));
        assert_eq!(s.label("c"), Some("line\nbreak"));
        assert_eq!(s.value, 3.0);
        assert_eq!(s.timestamp, Some(1_700_000_000_000.0));
    }

    #[test]
    fn label_value_with_hash_and_braces() {
        let e = parse_exposition(
            "# TYPE g gauge\ng{path=\"/a # b}\"} 1\n",
            ExpositionFormat::PrometheusText,
        );
        assert!(e.errors.is_empty(), "{:?}", e.errors);
        assert_eq!(
            e.gauge("g").unwrap().samples[0].label("path"),
            Some("/a # b}")
        );
    }

    #[test]
    fn exemplar_is_skipped() {
        let e = parse_exposition(
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2 # {trace_id=\"abc\"} 0.5 123.4\nh_count 2\nh_sum 1\n# EOF\n",
            ExpositionFormat::OpenMetrics,
        );
        assert!(e.errors.is_empty(), "{:?}", e.errors);
        assert!(e.eof);
        let h = e.histogram("h", |_| true).unwrap();
        assert_eq!(h.buckets, vec![(1.0, 2)]);
    }

    #[test]
    fn bad_line_is_reported_not_fatal() {
        let e = parse_exposition(
            "# TYPE g gauge\ng{a=\"x} 1\ng 2\n",
            ExpositionFormat::PrometheusText,
        );
        assert_eq!(e.errors.len(), 1);
        assert_eq!(e.errors[0].line, 2);
        assert_eq!(e.gauge("g").unwrap().samples.len(), 1);
    }

    #[test]
    fn histogram_named_total_is_not_a_counter() {
        let e = parse_exposition(
            "# TYPE vllm:iteration_tokens_total histogram\nvllm:iteration_tokens_total_bucket{le=\"1\"} 1\nvllm:iteration_tokens_total_count 1\nvllm:iteration_tokens_total_sum 1\n",
            ExpositionFormat::PrometheusText,
        );
        assert!(e.counter("vllm:iteration_tokens").is_none());
        assert!(e.counter("vllm:iteration_tokens_total").is_none());
        assert!(e.histogram_family("vllm:iteration_tokens_total").is_some());
    }
}
