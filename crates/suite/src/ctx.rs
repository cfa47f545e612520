//! The suite file being loaded ([`Ctx`]): its name, text and span index, from which every
//! stage (key check, validation) builds errors located at a key or a value.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

use super::doc::DocIndex;
use super::error::{LineStarts, SuiteError, SuiteErrorKind};

/// The file being loaded: its name, text and span index; builds located errors.
pub(crate) struct Ctx {
    pub file: PathBuf,
    pub text: Arc<str>,
    pub index: DocIndex,
    /// Where each line of `text` starts (shared by every error of the file).
    pub lines: LineStarts,
}

impl Ctx {
    /// An error at byte `span`.
    pub fn err(
        &self,
        span: Range<usize>,
        kind: SuiteErrorKind,
        path: Option<String>,
        message: String,
    ) -> SuiteError {
        SuiteError::located_in(
            self.file.clone(),
            &self.text,
            &self.lines,
            span,
            kind,
            path,
            message,
        )
    }

    /// An error at the key of `path` (the header of an array-of-tables element).
    pub fn at_key(&self, path: &str, kind: SuiteErrorKind, message: String) -> SuiteError {
        let span = self.span_or_parent(path, true);
        self.err(span, kind, Some(path.to_string()), message)
    }

    /// An error at the value of `path`.
    pub fn at_value(&self, path: &str, kind: SuiteErrorKind, message: String) -> SuiteError {
        let span = self.span_or_parent(path, false);
        self.err(span, kind, Some(path.to_string()), message)
    }

    /// The span of `path`, or of the closest ancestor present in the file (a missing key
    /// is reported at its table), or the start of the file.
    fn span_or_parent(&self, path: &str, key: bool) -> Range<usize> {
        let mut p = path;
        loop {
            let found = if key {
                self.index.key_span(p)
            } else {
                self.index.value_span(p)
            };
            if let Some(s) = found {
                return s;
            }
            if p.is_empty() {
                return 0..0;
            }
            // `jobs[0].x` → `jobs[0]`; `jobs[0]` → `jobs`.
            p = match p.rfind(['.', '[']) {
                Some(i) => &p[..i],
                None => "",
            };
        }
    }
}
