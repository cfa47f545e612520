//! Syntax of the identifiers a timeline accepts (docs/artifacts.md "Timeline capture rules":
//! usage counts and request ids are kept only when observed and valid; names are closed stage
//! names or validated case ids, never free tool text).
//!
//! Only these syntaxes can carry caller-supplied text into an artifact. None admits a
//! space, a quote, a backslash, a brace or a control character, so free text (a prompt,
//! a response, a tool argument, an error message) cannot pass as an id, and no accepted
//! id needs escaping in JSON.

/// Longest accepted id (run, timeline, request, session, case, clock domain), in bytes.
pub const MAX_ID_LEN: usize = 128;
/// Longest accepted fixture tool name, in bytes.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// A tool name: `[a-z][a-z0-9_]{0,63}` (fixture span names).
pub fn is_valid_tool_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_TOOL_NAME_LEN
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_')
}

/// An opaque id: `[A-Za-z0-9_.:-]{1,128}` (run_id, timeline_id, request_id, telemetry
/// session id, clock_domain_id).
pub fn is_valid_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && b.len() <= MAX_ID_LEN && b.iter().all(|&c| is_id_byte(c))
}

/// A case id: `[A-Za-z0-9_.:#/-]{1,128}`, e.g. `agentic::lookup#0/step3` (the id syntax
/// plus `#` and `/`, which synthetic case ids use for repeat index and step).
pub fn is_valid_case_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_ID_LEN
        && b.iter().all(|&c| is_id_byte(c) || c == b'#' || c == b'/')
}

#[inline]
fn is_id_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b':' | b'-')
}

/// A validated id copied into a fixed inline buffer, so a record holds no heap pointer.
/// Length 0 means absent.
#[derive(Clone, Copy)]
pub(crate) struct InlineId {
    len: u8,
    buf: [u8; MAX_ID_LEN],
}

impl std::fmt::Debug for InlineId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}

impl InlineId {
    pub(crate) const NONE: InlineId = InlineId {
        len: 0,
        buf: [0; MAX_ID_LEN],
    };

    /// Copies `s` if `valid(s)`; `Err(())` otherwise. Allocates nothing.
    #[inline]
    pub(crate) fn new(s: &str, valid: fn(&str) -> bool) -> Result<Self, ()> {
        if !valid(s) {
            return Err(());
        }
        let mut id = Self::NONE;
        id.buf[..s.len()].copy_from_slice(s.as_bytes());
        id.len = s.len() as u8;
        Ok(id)
    }

    /// The id, or `None` when absent.
    pub(crate) fn get(&self) -> Option<&str> {
        if self.len == 0 {
            None
        } else {
            // Validated ASCII on the way in; a failure here is impossible, and would
            // read as absent rather than as text.
            std::str::from_utf8(&self.buf[..self.len as usize]).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        assert!(is_valid_tool_name("read_file"));
        assert!(is_valid_tool_name("a"));
        assert!(is_valid_tool_name(&format!("a{}", "b".repeat(63))));
        assert!(!is_valid_tool_name(&format!("a{}", "b".repeat(64))));
        for bad in ["", "Read", "1abc", "read-file", "read file", "_x", "é"] {
            assert!(!is_valid_tool_name(bad), "{bad}");
        }
    }

    #[test]
    fn case_ids_and_ids() {
        assert!(is_valid_case_id("agentic::lookup#0/step3"));
        assert!(!is_valid_id("agentic::lookup#0/step3"));
        assert!(is_valid_id("chatcmpl-8f0a.1:x_y"));
        assert!(is_valid_case_id(&"x".repeat(128)));
        assert!(!is_valid_case_id(&"x".repeat(129)));
        for bad in ["", "a b", "a\"b", "a\\b", "{x}", "a\nb", "ü", "a'b"] {
            assert!(!is_valid_case_id(bad), "{bad:?}");
            assert!(!is_valid_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn inline_id_round_trip() {
        let id = InlineId::new("agentic::x#1/step2", is_valid_case_id).unwrap();
        assert_eq!(id.get(), Some("agentic::x#1/step2"));
        assert!(InlineId::new("no spaces allowed", is_valid_case_id).is_err());
        assert_eq!(InlineId::NONE.get(), None);
    }
}
