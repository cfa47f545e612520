//! `inferscope-bench report RUN_DIR --format html`: the dashboard's view of one run as one
//! self-contained file for CI artifacts. The page's own CSS and
//! JavaScript are inlined and the run's data is embedded as a
//! `<script type="application/json">` block, escaped so that no artifact text can close
//! the block or be parsed as markup; a `Content-Security-Policy` meta element allows
//! exactly the two inline blocks (by SHA-256) and nothing from any other origin. The run's
//! charts (`super::charts`, docs/charts.md) are written into the page as inline SVG.

use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::telemetry::{MetricsSample, PowerSample, ProcSample};
use crate::timeline::TimelineEvent;

use super::api::{RunListItem, list_item, public_event};
use super::assets::{APP_JS, INDEX_HTML, STYLE_CSS};
use super::charts::{Charts, charts_html, charts_of};
use super::runs::{RunDir, SampleFile, TimelineState};
use super::view::RunDetail;

/// Samples per source embedded at most; beyond it the view says it is truncated.
pub const MAX_INLINE_SAMPLES: usize = 50_000;
/// Schema id of [`Bundle`].
pub const BUNDLE_SCHEMA: &str = "inferscope-bench.serve.bundle/v1";

/// Everything the page draws for one run (the page builds the same from the API).
#[derive(Clone, Debug, Serialize)]
pub struct Bundle {
    /// [`BUNDLE_SCHEMA`].
    pub schema: &'static str,
    /// `static`.
    pub mode: &'static str,
    /// The run selector's rows (this run only).
    pub runs: Vec<RunListItem>,
    /// The run id.
    pub run_id: String,
    /// The detail, as `GET /v1/runs/{run_id}`.
    pub detail: RunDetail,
    /// Every timeline event (clock domain as fingerprint), `null` unless verified.
    pub events: Option<Vec<TimelineEvent>>,
    /// Samples by source, `null` when not recorded or not aligned.
    pub samples: BundleSamples,
    /// What was cut at [`MAX_INLINE_SAMPLES`].
    pub truncated: Truncated,
}

/// Samples by source.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BundleSamples {
    /// `samples/gpu.jsonl`.
    pub power: Option<Vec<PowerSample>>,
    /// `samples/proc.jsonl`.
    pub proc: Option<Vec<ProcSample>>,
    /// `samples/metrics.jsonl`.
    pub metrics: Option<Vec<MetricsSample>>,
}

/// Truncation flags.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Truncated {
    /// Events (never: the capture bound is 10,000).
    pub events: bool,
    /// Power samples.
    pub power: bool,
    /// Proc samples.
    pub proc: bool,
    /// Metrics samples.
    pub metrics: bool,
}

fn take<T>(v: Vec<T>, flag: &mut bool) -> Vec<T> {
    if v.len() > MAX_INLINE_SAMPLES {
        *flag = true;
        v.into_iter().take(MAX_INLINE_SAMPLES).collect()
    } else {
        v
    }
}

/// Reads one run directory into a [`Bundle`] (blocking I/O, the same checks as the
/// server).
pub fn bundle(dir: &RunDir) -> Bundle {
    bundle_of(dir, &super::http::DetailInputs::load(dir))
}

fn bundle_of(dir: &RunDir, inputs: &super::http::DetailInputs) -> Bundle {
    let detail = inputs.detail(&dir.run_id);
    let events = match &inputs.timeline {
        TimelineState::Ok(t) => Some(t.events.iter().map(public_event).collect()),
        _ => None,
    };
    let mut truncated = Truncated::default();
    let mut samples = BundleSamples::default();
    if detail.telemetry.aligned != Some(false) {
        let has = |src: &str| detail.telemetry.lanes.iter().any(|l| l.source == src);
        if has("power") {
            samples.power = dir
                .samples::<PowerSample>(SampleFile::Power)
                .ok()
                .map(|v| take(v, &mut truncated.power));
        }
        if has("proc") {
            samples.proc = dir
                .samples::<ProcSample>(SampleFile::Proc)
                .ok()
                .map(|v| take(v, &mut truncated.proc));
        }
        if has("metrics") {
            samples.metrics = dir
                .samples::<MetricsSample>(SampleFile::Metrics)
                .ok()
                .map(|v| take(v, &mut truncated.metrics));
        }
    }
    Bundle {
        schema: BUNDLE_SCHEMA,
        mode: "static",
        runs: vec![list_item(&dir.run_id, &inputs.report, dir.has_manifest())],
        run_id: dir.run_id.clone(),
        detail,
        events,
        samples,
        truncated,
    }
}

/// JSON text safe inside `<script type="application/json">` (pure): `<`, `>`, `&`,
/// U+2028 and U+2029 are written as `\uXXXX` escapes, which JSON reads back as the same
/// characters, so the text can neither close the element nor open a comment.
pub fn script_safe_json<T: Serialize>(v: &T) -> String {
    let raw = serde_json::to_string(v).unwrap_or_else(|_| "null".into());
    let mut out = String::with_capacity(raw.len() + 64);
    for c in raw.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// Standard base64 with padding (pure).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

const CSS_LINK: &str = "<link rel=\"stylesheet\" href=\"style.css\">";
/// The charts' container in the shell: the static report writes the charts into it.
const CHARTS_DIV: &str = "<div id=\"charts\" class=\"charts\"></div>";
const JS_TAG: &str = "<script src=\"app.js\" defer></script>";

/// The self-contained page for `bundle` with `charts` drawn into it as inline SVG (pure).
pub fn render_html(bundle: &Bundle, charts: &Charts) -> String {
    let css = format!("\n{STYLE_CSS}\n");
    let js = format!("\n{APP_JS}\n");
    let csp = format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; base-uri 'none'; \
         form-action 'none'",
        csp_hash(&js),
        csp_hash(&css)
    );
    let head = format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n<style>{css}</style>"
    );
    let body = format!(
        "<script type=\"application/json\" id=\"inferscope-data\">{}</script>\n<script>{js}</script>",
        script_safe_json(bundle)
    );
    let charts = format!(
        "<div id=\"charts\" class=\"charts\" data-source=\"report\">\n{}</div>",
        charts_html(charts)
    );
    INDEX_HTML
        .replacen(CSS_LINK, &head, 1)
        .replacen(CHARTS_DIV, &charts, 1)
        .replacen(JS_TAG, &body, 1)
}

/// The HTML report of `run_dir`: the page, and whether the timeline failed verification
/// (which the page shows).
pub fn report_html(run_dir: &Path) -> (String, bool) {
    // The operator's own path may hold symlinks (e.g. a `latest` link); below the run
    // directory nothing is followed.
    let resolved = std::fs::canonicalize(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
    let dir = RunDir::open_local(&resolved);
    let inputs = super::http::DetailInputs::load(&dir);
    let b = bundle_of(&dir, &inputs);
    let charts = charts_of(&inputs.report);
    let integrity = b.detail.timeline.state == "integrity_error";
    (render_html(&b, &charts), integrity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn embedded_json_cannot_close_its_script_block() {
        let v = serde_json::json!({"x": "</script><script>alert(1)</script><!-- & \u{2028}"});
        let s = script_safe_json(&v);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(!s.contains('\u{2028}'));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn the_shell_has_the_tags_the_report_replaces() {
        assert_eq!(INDEX_HTML.matches(CSS_LINK).count(), 1);
        assert_eq!(INDEX_HTML.matches(JS_TAG).count(), 1);
        assert_eq!(INDEX_HTML.matches(CHARTS_DIV).count(), 1);
    }
}
