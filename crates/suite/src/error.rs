//! [`SuiteError`]: one located problem in a suite file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::{
    Diagnostic, LabeledSpan, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

/// A 1-based position in the suite file plus the byte span it labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column, in characters (not bytes) from the start of the line.
    pub column: usize,
    /// Byte offset of the labelled span in the file.
    pub offset: usize,
    /// Byte length of the labelled span (at least 1 for display).
    pub len: usize,
}

/// The class of a suite error; also the miette diagnostic code `suite::<kind>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteErrorKind {
    /// The suite file could not be read.
    Io,
    /// The file is not valid TOML (duplicate key, bad string, ...).
    Syntax,
    /// A key that the table does not accept.
    UnknownField,
    /// A table (`[name]`) that the suite does not accept.
    UnknownTable,
    /// A key that belongs to another job or check kind.
    WrongKindField,
    /// A value of the wrong type (string for an integer, table for a string, ...).
    WrongType,
    /// A required key is absent.
    MissingField,
    /// Two jobs or two tools with the same name.
    Duplicate,
    /// A job refers to a tool that is not declared in `[[tools]]`.
    UnknownReference,
    /// A value out of range or otherwise invalid (regex, JSON path, URL, name, ...).
    InvalidValue,
    /// A referenced fixture file or directory does not exist or leaves the fixtures root.
    Fixture,
    /// A literal secret (`api_key`) in the suite.
    Secret,
    /// `api_key_env` names an environment variable that is not set.
    EnvVar,
}

impl SuiteErrorKind {
    /// Stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SuiteErrorKind::Io => "io",
            SuiteErrorKind::Syntax => "syntax",
            SuiteErrorKind::UnknownField => "unknown_field",
            SuiteErrorKind::UnknownTable => "unknown_table",
            SuiteErrorKind::WrongKindField => "wrong_kind_field",
            SuiteErrorKind::WrongType => "wrong_type",
            SuiteErrorKind::MissingField => "missing_field",
            SuiteErrorKind::Duplicate => "duplicate",
            SuiteErrorKind::UnknownReference => "unknown_reference",
            SuiteErrorKind::InvalidValue => "invalid_value",
            SuiteErrorKind::Fixture => "fixture",
            SuiteErrorKind::Secret => "secret",
            SuiteErrorKind::EnvVar => "env_var",
        }
    }
}

/// One problem in a suite, found before any network I/O (field case C31).
///
/// `Display` is the plain one-line form
/// `suites/x.toml:7:1: unknown field `concurency` in `jobs[0]`; did you mean `concurrency`?`
/// (`file:line:col: message[; hint]`, or `file: message` without a position). The
/// [`Diagnostic`] impl carries the source text and a labelled span for miette's
/// graphical rendering — except for [`SuiteErrorKind::Secret`], whose source line would
/// print the secret.
///
/// Field paths are dotted from the document root with array indices, 0-based:
/// `jobs[1].max_steps`, `tools[0].responses[2].when`, `telemetry.sample_period_ms`;
/// a top-level key is its bare name (`capture_timeline`).
///
/// Boxed inside (one pointer wide) so `Result<_, SuiteError>` stays small.
#[derive(Debug, Clone)]
pub struct SuiteError {
    inner: Box<Inner>,
}

#[derive(Debug, Clone)]
struct Inner {
    file: PathBuf,
    location: Option<Location>,
    path: Option<String>,
    message: String,
    /// What the snippet of a located error masks ([`crate::redact::hidden_values`]): its
    /// message and hint never show it.
    hidden: Vec<String>,
    hint: Option<String>,
    kind: SuiteErrorKind,
    label: String,
    source: Option<Arc<Snippet>>,
}

/// The few lines of a suite file a located error shows: the lines of
/// its span with one line of context either side, masked ([`crate::redact::mask_source`]),
/// read by miette at their place in the file (offsets and line numbers of the file). An
/// error holds these lines only, never a copy of the file, so reporting N errors costs N
/// snippets, not N files.
#[derive(Debug)]
struct Snippet {
    name: String,
    text: String,
    /// Byte offset of `text` in the file.
    offset: usize,
    /// 0-based line of `text`'s first line in the file.
    line: usize,
}

impl SourceCode for Snippet {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span
            .offset()
            .checked_sub(self.offset)
            .ok_or(MietteError::OutOfBounds)?;
        let local = SourceSpan::new(start.into(), span.len());
        let c = self
            .text
            .as_str()
            .read_span(&local, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            c.data(),
            SourceSpan::new((c.span().offset() + self.offset).into(), c.span().len()),
            c.line() + self.line,
            c.column(),
            c.line_count(),
        )))
    }
}

/// The byte offset where each line of a suite file starts, built once per file so that
/// placing an error costs a binary search, not a scan of the file.
#[derive(Debug, Clone)]
pub(crate) struct LineStarts(Vec<usize>);

impl LineStarts {
    /// The line starts of `text` (pure).
    pub fn of(text: &str) -> Self {
        let mut v = vec![0];
        v.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Self(v)
    }

    /// The 0-based line holding byte `at`.
    fn line(&self, at: usize) -> usize {
        self.0.partition_point(|&s| s <= at).saturating_sub(1)
    }

    /// Bytes `[start, end)` of 0-based lines `first..=last` of `text`, the last line's
    /// newline included.
    fn span(&self, text: &str, first: usize, last: usize) -> std::ops::Range<usize> {
        let end = self.0.get(last + 1).copied().unwrap_or(text.len());
        self.0[first]..end
    }
}

/// Longest line (bytes) a source snippet shows; a snippet whose lines (the labelled ones
/// and one of context either side) are longer is left out, the `file:line:col` headline
/// and the bounded message kept.
pub const MAX_SNIPPET_LINE_BYTES: usize = 400;
/// Bytes a source snippet shows at most (all its lines together).
pub const MAX_SNIPPET_BYTES: usize = 4096;

/// A message as shown: URL userinfo redacted, and every backticked value longer than
/// [`crate::redact::EXCERPT_CHARS`] characters cut to an excerpt (pure).
fn bounded_message(message: &str) -> String {
    let m = crate::redact::urls(message);
    let mut out = String::with_capacity(m.len().min(4096));
    for (i, part) in m.split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        if i % 2 == 1 {
            out.push_str(&crate::redact::excerpt(part));
        } else {
            out.push_str(&crate::redact::excerpt_long(part));
        }
    }
    out
}

/// The bytes of the lines a snippet of `span` prints (its lines with one line of context
/// either side), the 0-based line they start at, and whether they fit
/// [`MAX_SNIPPET_LINE_BYTES`] and [`MAX_SNIPPET_BYTES`] (pure).
fn snippet_lines(
    text: &str,
    lines: &LineStarts,
    span: &std::ops::Range<usize>,
) -> (std::ops::Range<usize>, usize, bool) {
    let start = span.start.min(text.len());
    let end = span.end.clamp(start, text.len());
    let first = lines.line(start).saturating_sub(1);
    let last = (lines.line(end.saturating_sub(1).max(start)) + 1).min(lines.0.len() - 1);
    let r = lines.span(text, first, last);
    let shown = &text[r.clone()];
    let fits = shown.len() <= MAX_SNIPPET_BYTES
        && shown.lines().all(|l| l.len() <= MAX_SNIPPET_LINE_BYTES);
    (r, first, fits)
}

/// Lines before a snippet read with it when masking, at most: the start of a multi-line
/// array whose flag (`"--api-key",`) names a value the snippet shows.
const LEAD_LINES: usize = 8;

/// Bytes of suite text masked for one error at most (its snippet's lines and the lines
/// before them): past this, its message hides credential-looking words only.
const MAX_MASKED_BYTES: usize = 64 << 10;

/// The start of the text masked with a snippet starting at 0-based line `first`: up to
/// [`LEAD_LINES`] lines before it, back to the nearest that starts a statement (a bare
/// key or a `[table]` header), each within [`MAX_SNIPPET_LINE_BYTES`] (pure).
fn lead_start(text: &str, lines: &LineStarts, first: usize) -> usize {
    let mut lead = first;
    while lead > 0 && first - lead < LEAD_LINES {
        let r = lines.span(text, lead - 1, lead - 1);
        if r.len() > MAX_SNIPPET_LINE_BYTES {
            break;
        }
        lead -= 1;
        let t = text[r].trim_start();
        if t.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '[') {
            break;
        }
    }
    lines.0[lead]
}

impl SuiteError {
    /// An error at a 1-based `line`:`column` without source text (a file that is not
    /// UTF-8: the position of its first invalid byte).
    pub(crate) fn at_position(
        file: PathBuf,
        kind: SuiteErrorKind,
        line: usize,
        column: usize,
        message: String,
    ) -> Self {
        let mut e = Self::plain(file, kind, message);
        e.inner.location = Some(Location {
            line,
            column,
            offset: 0,
            len: 1,
        });
        e
    }

    /// An error without source text (I/O, environment).
    pub(crate) fn plain(file: PathBuf, kind: SuiteErrorKind, message: String) -> Self {
        Self {
            inner: Box::new(Inner {
                file,
                location: None,
                path: None,
                message: bounded_message(&message),
                hidden: Vec::new(),
                hint: None,
                kind,
                label: String::new(),
                source: None,
            }),
        }
    }

    /// A located error over `text` (the whole suite file) at byte `span`.
    pub(crate) fn located(
        file: PathBuf,
        text: &Arc<str>,
        span: std::ops::Range<usize>,
        kind: SuiteErrorKind,
        path: Option<String>,
        message: String,
    ) -> Self {
        Self::located_in(file, text, &LineStarts::of(text), span, kind, path, message)
    }

    /// [`SuiteError::located`] with the file's line starts already built (every error of
    /// one file shares them).
    pub(crate) fn located_in(
        file: PathBuf,
        text: &str,
        lines: &LineStarts,
        span: std::ops::Range<usize>,
        kind: SuiteErrorKind,
        path: Option<String>,
        message: String,
    ) -> Self {
        let location = location_in(text, lines, span.clone());
        // The snippet never shows a secret: URL userinfo, secret-looking keys' values and
        // credential-looking words are masked (same bytes, same offsets), and so is every
        // value around an unknown key; a snippet with overlong lines is left out (the
        // message stays located).
        let unknown = matches!(
            kind,
            SuiteErrorKind::UnknownField
                | SuiteErrorKind::UnknownTable
                | SuiteErrorKind::WrongKindField
        );
        // The snippet's lines are masked with a few lines before them (the start of a
        // multi-line array: `"--api-key",` hides the next line). The message never shows
        // what the snippet masks: every credential-looking word, and the values masked
        // under known keys (the message of an unknown key names keys, never a value).
        let (r, line, fits) = snippet_lines(text, lines, &span);
        let lead = lead_start(text, lines, line);
        let around = (r.end - lead <= MAX_MASKED_BYTES).then(|| &text[lead..r.end]);
        let shown = around.map(|t| crate::redact::mask_source(t, unknown));
        let hidden = match (around, shown.as_deref()) {
            (Some(t), Some(m)) if !unknown => crate::redact::hidden_values(t, m),
            _ => Vec::new(),
        };
        let source = shown
            .filter(|_| kind != SuiteErrorKind::Secret && fits)
            .and_then(|m| m.get(r.start - lead..).map(str::to_string))
            .map(|shown| {
                Arc::new(Snippet {
                    name: file.display().to_string(),
                    text: shown,
                    offset: r.start,
                    line,
                })
            });
        Self {
            inner: Box::new(Inner {
                file,
                location: Some(location),
                path,
                message: bounded_message(&crate::redact::mask_message(&message, &hidden)),
                hidden,
                hint: None,
                label: default_label(kind).to_string(),
                kind,
                source,
            }),
        }
    }

    /// Adds a hint (did-you-mean or fix).
    pub(crate) fn with_hint(mut self, hint: Option<String>) -> Self {
        self.inner.hint =
            hint.map(|h| bounded_message(&crate::redact::mask_message(&h, &self.inner.hidden)));
        self
    }

    /// Replaces the span label.
    pub(crate) fn with_label(mut self, label: impl Into<String>) -> Self {
        self.inner.label = label.into();
        self
    }

    /// Sets the dotted field path.
    pub(crate) fn with_path(mut self, path: impl Into<String>) -> Self {
        self.inner.path = Some(path.into());
        self
    }

    /// The suite file as given by the caller (not canonicalized).
    pub fn file(&self) -> &Path {
        &self.inner.file
    }

    /// Where in the file; `None` only for errors without a position (unreadable file,
    /// environment).
    pub fn location(&self) -> Option<Location> {
        self.inner.location
    }

    /// 1-based line, if located.
    pub fn line(&self) -> Option<usize> {
        self.inner.location.map(|l| l.line)
    }

    /// 1-based column (characters), if located.
    pub fn column(&self) -> Option<usize> {
        self.inner.location.map(|l| l.column)
    }

    /// Dotted field path of the offending key or table (`jobs[0].max_stpes`); `None` for
    /// syntax and I/O errors.
    pub fn path(&self) -> Option<&str> {
        self.inner.path.as_deref()
    }

    /// What is wrong, one line, never containing a secret value.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// A did-you-mean suggestion (`did you mean `max_steps`?`) or the fix.
    pub fn hint(&self) -> Option<&str> {
        self.inner.hint.as_deref()
    }

    /// The error class.
    pub fn kind(&self) -> SuiteErrorKind {
        self.inner.kind
    }

    /// miette's graphical rendering: the message, the source snippet with the labelled
    /// span (file:line:col in its header), and the hint as `help:`. `color` selects ANSI
    /// colors. Unlike rendering `self` directly, the headline is not repeated with the
    /// location and hint already shown below it. Errors without source text (I/O,
    /// secrets) keep the `file:line:col` prefix in the headline.
    pub fn render(&self, color: bool) -> String {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let mut out = String::new();
        let handler = miette::GraphicalReportHandler::new_themed(theme);
        if handler.render_report(&mut out, &Pretty(self)).is_err() {
            return self.to_string();
        }
        out
    }

    /// The source snippet of a located error alone: the `╭─[file:line:col]` frame with the
    /// labelled span, no headline, no code and no help (`None` without source text: an
    /// I/O error, a secret, an overlong line). What `check` prints under the one-line
    /// `error: file:line:col: message; hint` form, so each error's text appears once.
    pub fn snippet(&self, color: bool) -> Option<String> {
        self.inner.source.as_ref()?;
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let mut out = String::new();
        miette::GraphicalReportHandler::new_themed(theme)
            .render_report(&mut out, &SnippetOnly(self))
            .ok()?;
        // miette always writes a headline (empty here) before the frame.
        let start = out.find('\n').map_or(0, |i| i + 1);
        let frame = out[start..].trim_end();
        (!frame.is_empty()).then(|| format!("{frame}\n"))
    }
}

/// A [`SuiteError`] seen as its source snippet only (see [`SuiteError::snippet`]).
#[derive(Debug)]
struct SnippetOnly<'a>(&'a SuiteError);

impl fmt::Display for SnippetOnly<'_> {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

impl std::error::Error for SnippetOnly<'_> {}

impl Diagnostic for SnippetOnly<'_> {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.0.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.0.labels()
    }
}

/// [`SuiteError`] whose `Display` is the bare message when a snippet shows the location.
#[derive(Debug)]
struct Pretty<'a>(&'a SuiteError);

impl fmt::Display for Pretty<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.0.inner;
        if e.source.is_some() && e.location.is_some() {
            f.write_str(&e.message)
        } else {
            write!(f, "{}", e.file.display())?;
            if let Some(l) = e.location {
                write!(f, ":{}:{}", l.line, l.column)?;
            }
            write!(f, ": {}", e.message)
        }
    }
}

impl std::error::Error for Pretty<'_> {}

impl Diagnostic for Pretty<'_> {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.code()
    }
    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.0.help()
    }
    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.0.source_code()
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        self.0.labels()
    }
}

fn default_label(kind: SuiteErrorKind) -> &'static str {
    match kind {
        SuiteErrorKind::UnknownField => "unknown field",
        SuiteErrorKind::UnknownTable => "unknown table",
        SuiteErrorKind::WrongKindField => "not for this kind",
        SuiteErrorKind::WrongType => "wrong type",
        SuiteErrorKind::MissingField => "in this table",
        SuiteErrorKind::Duplicate => "duplicate",
        SuiteErrorKind::UnknownReference => "not declared",
        SuiteErrorKind::Fixture => "fixture",
        SuiteErrorKind::Secret => "secret",
        SuiteErrorKind::EnvVar => "names this variable",
        SuiteErrorKind::Syntax | SuiteErrorKind::InvalidValue | SuiteErrorKind::Io => "here",
    }
}

/// 1-based line and character column of byte `span.start` in `text`, whose line starts
/// are `lines`.
pub(crate) fn location_in(
    text: &str,
    lines: &LineStarts,
    span: std::ops::Range<usize>,
) -> Location {
    let offset = span.start.min(text.len());
    let offset = (0..=offset)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let line = lines.line(offset);
    let line_start = lines.0[line];
    let column = text[line_start..offset].chars().count() + 1;
    let end = span.end.clamp(offset, text.len());
    Location {
        line: line + 1,
        column,
        offset,
        len: (end - offset).max(1),
    }
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = &self.inner;
        write!(f, "{}", e.file.display())?;
        if let Some(l) = e.location {
            write!(f, ":{}:{}", l.line, l.column)?;
        }
        write!(f, ": {}", e.message)?;
        if let Some(h) = &e.hint {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SuiteError {}

impl Diagnostic for SuiteError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(format!("suite::{}", self.inner.kind.as_str())))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.inner
            .hint
            .as_ref()
            .map(|h| Box::new(h.as_str()) as Box<dyn fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        self.inner.source.as_deref().map(|s| s as &dyn SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let loc = self.inner.location?;
        self.inner.source.as_ref()?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(
            Some(self.inner.label.clone()),
            (loc.offset, loc.len),
        ))))
    }
}
