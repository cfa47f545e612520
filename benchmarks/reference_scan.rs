//! The per-read work of the anchor's bare reference client (docs/measurement.md),
//! shared by `client_fidelity` (over the network) and `client_parse` (replayed reads): the
//! read is appended to a buffer, every complete event (`\n\n`) is cut off, and an event is
//! a content token when a byte search finds a non-empty `"content":"…"` member. No SSE
//! parsing, no JSON, no record: the least a streaming client can do.

/// Appends one read that arrived at `t` to `pending` and consumes every complete event:
/// pushes `t` to `stamps` for each content event; returns whether `[DONE]` was among them.
pub fn scan_read(pending: &mut Vec<u8>, read: &[u8], t: u64, stamps: &mut Vec<u64>) -> bool {
    let mut done = false;
    pending.extend_from_slice(read);
    while let Some(end) = find(pending, b"\n\n") {
        let event = &pending[..end];
        if find(event, b"[DONE]").is_some() {
            done = true;
        } else if find(event, b"\"content\":\"").is_some()
            && find(event, b"\"content\":\"\"").is_none()
        {
            stamps.push(t);
        }
        pending.drain(..end + 2);
    }
    done
}

/// The first position of `needle` in `hay` (a plain window search, as the anchor's).
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
