//! A one-pass reader of the common chunk shapes into the typed [`ChunkView`].
//!
//! [`scan_chunk`] walks one data event's bytes once, reading the members the accumulator
//! uses and skipping every other value without building anything; strings are borrowed
//! from the event and their escapes decoded only when present. It is a fast path in front
//! of the serde reading ([`ChunkView::parse`]), not a second definition of it:
//!
//! - it returns `Some(view)` only where [`ChunkView::parse`] returns `Some` of the same
//!   view (the property tests in `accumulate/tests.rs` hold the two to that on random and
//!   adversarial chunks);
//! - anything it does not read itself gives `None` and the caller runs the serde reading:
//!   a non-null `usage`, `timings`, `error` or `delta.tool_calls` (at most a few events per
//!   response), an escaped key, a field of an unexpected type, a duplicate member, a lone
//!   surrogate escape, nesting deeper than [`MAX_DEPTH`], and any input that is not JSON.
//!
//! Its grammar is JSON's (RFC 8259) as serde_json reads it: whitespace is space, tab, LF
//! and CR; numbers `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; strings without raw
//! control characters; nothing after the top-level object but whitespace.

use std::borrow::Cow;

use super::view::{ChoiceView, Choices, ChunkView, DeltaView, JStr, ToolDeltas};

/// Deepest nesting read here (serde_json's own limit is 128); deeper input goes to serde.
const MAX_DEPTH: u32 = 64;

/// The typed view of one data event, when it has one of the shapes read here (see the
/// module docs); `None` otherwise, and then [`ChunkView::parse`] decides.
#[cfg(test)]
pub(super) fn scan_chunk(data: &str) -> Option<ChunkView<'_>> {
    let mut view = ChunkView::default();
    scan_into(data, &mut view).then_some(view)
}

/// [`scan_chunk`] into a view the caller holds (the hot path): `true` when `data` was
/// read here, `false` when it was not (then `view` holds whatever was read before the
/// scan stopped, and the caller discards it). The views are filled in place at every
/// level, never built and returned: a chunk's view is a few hundred bytes, and moving it
/// up through each level of the scan was a fifth of the parse (BENCHMARKS.md
/// "Client cost").
pub(super) fn scan_into<'a>(data: &'a str, view: &mut ChunkView<'a>) -> bool {
    let mut p = Scanner {
        s: data,
        b: data.as_bytes(),
        i: 0,
    };
    if p.chunk(view).is_none() {
        return false;
    }
    p.ws();
    p.i == p.b.len()
}

/// The last content chunk's bytes around its content string. A streamed
/// response repeats one chunk shape: every content chunk of a vLLM or SGLang stream is
/// `{"id":…,"object":…,"created":…,"model":…,"choices":[{"index":0,"delta":{"content":"`,
/// the text, then `"},"logprobs":null,"finish_reason":null}]}`, byte for byte the same
/// around the text. When a chunk is the bytes before the last content string, then a run
/// of plain string bytes (no `"`, `\` or control character), then the bytes after it,
/// [`scan_into`] would read it exactly as it read the last one with only the content
/// changed: the scan depends on nothing but the bytes, and a plain run ends the string at
/// the same place whatever its length. So such a chunk is read by two comparisons and one
/// run instead of a scan; anything else (another shape, an escape in the text, a field
/// that changes per chunk such as llama.cpp's `timings`) is scanned as before and, when
/// it has the shape, becomes the new memo.
#[derive(Debug, Default)]
pub(super) struct ContentMemo {
    /// The chunk's bytes with the content text cut out: `bytes[..split]` ends with the
    /// text's opening quote, `bytes[split..]` starts with its closing quote.
    bytes: Vec<u8>,
    split: usize,
    /// The choice's `index` member as the scan read it.
    index: Option<u64>,
}

impl ContentMemo {
    /// Whether a chunk was learned (a learned chunk's bytes start with its `{`).
    #[inline]
    fn armed(&self) -> bool {
        !self.bytes.is_empty()
    }

    /// The content text of `data` when `data` has the memo's shape (see the type's docs).
    #[inline]
    pub(super) fn content<'a>(&self, data: &'a str) -> Option<(Option<u64>, &'a str)> {
        if !self.armed() {
            return None;
        }
        let b = data.as_bytes();
        let (prefix, suffix) = self.bytes.split_at(self.split);
        if b.len() < self.bytes.len() || !b.starts_with(prefix) {
            return None;
        }
        let end = plain_run(b, prefix.len());
        if b.get(end..)? != suffix {
            return None;
        }
        // `end` is an ASCII byte's index, so both bounds are char boundaries.
        Some((self.index, data.get(prefix.len()..end)?))
    }

    /// Remembers `data` (read by [`scan_into`] into `view`) when it is a one-choice
    /// content chunk: a `delta` with a content string that had no escape and nothing else
    /// the accumulator reads, no `finish_reason`, `text`, `usage`, `timings` or `error`.
    /// Anything else leaves the memo as it was.
    pub(super) fn learn(&mut self, data: &str, view: &ChunkView<'_>) {
        let Some(Choices {
            first: Some(c),
            rest,
        }) = &view.choices
        else {
            return;
        };
        let Some(d) = &c.delta else { return };
        let Some(JStr(Cow::Borrowed(text))) = &d.content else {
            return;
        };
        let plain = rest.is_empty()
            && c.finish_reason.is_none()
            && c.text.is_none()
            && d.reasoning_content.is_none()
            && d.reasoning.is_none()
            && d.tool_calls.is_none()
            && view.usage.is_none()
            && view.timings.is_none()
            && view.error.is_none();
        let start = (text.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let end = start.wrapping_add(text.len());
        if !plain || end > data.len() || data.as_bytes().get(end) != Some(&b'"') {
            return;
        }
        self.bytes.clear();
        self.bytes.extend_from_slice(&data.as_bytes()[..start]);
        self.bytes.extend_from_slice(&data.as_bytes()[end..]);
        self.split = start;
        self.index = c.index;
    }
}

/// One [`ContentMemo`] for each of the first two choice indices seen: with n = 2, vLLM
/// alternates the choices chunk by chunk, and one memo would be relearned at every chunk.
/// A chunk is read by the first memo that reads it (each is exact on its own); a learned
/// chunk replaces the memo of its own index, or takes a free one; with more indices the
/// second memo is relearned.
#[derive(Debug, Default)]
pub(super) struct ContentMemos([ContentMemo; 2]);

impl ContentMemos {
    #[inline]
    pub(super) fn content<'a>(&self, data: &'a str) -> Option<(Option<u64>, &'a str)> {
        self.0[0].content(data).or_else(|| self.0[1].content(data))
    }

    pub(super) fn learn(&mut self, data: &str, view: &ChunkView<'_>) {
        let index = view
            .choices
            .as_ref()
            .and_then(|c| c.first.as_ref())
            .and_then(|c| c.index);
        let [a, b] = &mut self.0;
        let slot = if !a.armed() || a.index == index { a } else { b };
        slot.learn(data, view);
    }
}

/// Where the run of plain string bytes starting at `i` ends: the index of the first `"`,
/// `\\` or control character (< 0x20) at or after `i`, or `b.len()`. Eight bytes are tested
/// at a time (SWAR): in each of the three masks a byte's high bit is set where that byte
/// matches, and possibly in bytes above a true match (borrow), never below one, so the
/// lowest set bit of their union is the first byte that matches.
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let quote = w ^ (ONES * u64::from(b'"'));
        let slash = w ^ (ONES * u64::from(b'\\'));
        let hit = (quote.wrapping_sub(ONES) & !quote)
            | (slash.wrapping_sub(ONES) & !slash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let hit = hit & HIGH;
        if hit != 0 {
            return i + (hit.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Object members read into a view, by bit: a second one fails the serde reading (a
/// duplicate field), so it ends this one.
struct Seen(u8);

impl Seen {
    #[inline]
    fn first(&mut self, bit: u8) -> Option<()> {
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

impl<'a> Scanner<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace (not consumed).
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    #[inline]
    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + lit.len())? == lit {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// `null` next: consumed, `true`.
    #[inline]
    fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(true);
        }
        Some(false)
    }

    /// The members of an object: `member(self, key)` reads each value. Keys with escapes
    /// are not read here.
    #[inline]
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = match self.string()? {
                Cow::Borrowed(k) => k,
                Cow::Owned(_) => return None,
            };
            self.eat(b':')?;
            self.ws();
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A JSON string (the cursor on its opening quote): borrowed when it has no escape.
    #[inline]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.i += 1;
        let start = self.i;
        self.i = plain_run(self.b, self.i);
        match *self.b.get(self.i)? {
            b'"' => {
                let s = self.s.get(start..self.i)?;
                self.i += 1;
                return Some(Cow::Borrowed(s));
            }
            b'\\' => {}
            _ => return None,
        }
        let mut out = String::with_capacity(self.i - start + 8);
        out.push_str(self.s.get(start..self.i)?);
        self.escaped(Some(&mut out))?;
        Some(Cow::Owned(out))
    }

    /// The rest of a string from its first backslash to past its closing quote, decoded
    /// into `out` (or only checked).
    #[cold]
    fn escaped(&mut self, mut out: Option<&mut String>) -> Option<()> {
        loop {
            let run = self.i;
            self.i = plain_run(self.b, self.i);
            if let Some(o) = out.as_deref_mut() {
                o.push_str(self.s.get(run..self.i)?);
            }
            match *self.b.get(self.i)? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                b'\\' => {}
                _ => return None,
            }
            let c = match *self.b.get(self.i + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    self.i += 2;
                    let hi = self.hex4()?;
                    let code = match hi {
                        0xD800..=0xDBFF => {
                            self.literal(b"\\u")?;
                            let lo = self.hex4()?;
                            if !(0xDC00..=0xDFFF).contains(&lo) {
                                return None;
                            }
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        }
                        0xDC00..=0xDFFF => return None,
                        _ => hi,
                    };
                    if let Some(o) = out.as_deref_mut() {
                        o.push(char::from_u32(code)?);
                    }
                    continue;
                }
                _ => return None,
            };
            self.i += 2;
            if let Some(o) = out.as_deref_mut() {
                o.push(c);
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut v = 0u32;
        for &d in digits {
            v = v * 16 + char::from(d).to_digit(16)?;
        }
        self.i += 4;
        Some(v)
    }

    /// A string, or `null` (`None`); any other type is not read here.
    #[inline]
    fn opt_str(&mut self) -> Option<Option<JStr<'a>>> {
        match *self.b.get(self.i)? {
            b'"' => Some(Some(JStr(self.string()?))),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    /// A string-or-null member read into `field`, the first time it is seen.
    #[inline]
    fn str_member(&mut self, seen: &mut Seen, bit: u8, field: &mut Option<JStr<'a>>) -> Option<()> {
        seen.first(bit)?;
        *field = self.opt_str()?;
        Some(())
    }

    /// An unsigned integer that fits in u64, or `null`.
    #[inline]
    fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&d @ b'0'..=b'9') = self.b.get(self.i) {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
            self.i += 1;
        }
        let n = self.i - start;
        // No digits, a leading zero, or a fraction / exponent (a float is not a u64).
        if n == 0 || (n > 1 && self.b[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        Some(Some(v))
    }

    /// Skips one value of any type, checking its syntax.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                self.i = plain_run(self.b, self.i + 1);
                match *self.b.get(self.i)? {
                    b'"' => {
                        self.i += 1;
                        Some(())
                    }
                    b'\\' => self.escaped(None),
                    _ => None,
                }
            }
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'{' => self.object(|p, _| p.skip(depth + 1)),
            b'[' => {
                self.i += 1;
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.skip(depth + 1)?;
                    match self.peek()? {
                        b',' => self.i += 1,
                        b']' => {
                            self.i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            _ => self.number(),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        self.i - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Option<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match *self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// A member that is read elsewhere when present: only `null` is read here.
    #[inline]
    fn only_null(&mut self) -> Option<()> {
        self.null()?.then_some(())
    }

    fn chunk(&mut self, view: &mut ChunkView<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|p, key| match key {
            "choices" => {
                seen.first(1)?;
                p.choices(&mut view.choices)
            }
            "object" => p.str_member(&mut seen, 2, &mut view.object),
            "model" => p.str_member(&mut seen, 4, &mut view.model),
            "usage" => seen.first(8).and_then(|()| p.only_null()),
            "timings" => seen.first(16).and_then(|()| p.only_null()),
            "error" => seen.first(32).and_then(|()| p.only_null()),
            _ => p.skip(1),
        })
    }

    /// `null` (left `None`) or the array, into `slot`.
    fn choices(&mut self, slot: &mut Option<Choices<'a>>) -> Option<()> {
        if self.null()? {
            return Some(());
        }
        self.eat(b'[')?;
        let out = slot.insert(Choices::default());
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            let c = if out.first.is_none() {
                out.first.insert(ChoiceView::default())
            } else {
                out.rest.push(ChoiceView::default());
                out.rest.last_mut()?
            };
            self.choice(c)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn choice(&mut self, c: &mut ChoiceView<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|p, key| match key {
            "index" => {
                seen.first(1)?;
                c.index = p.opt_u64()?;
                Some(())
            }
            "finish_reason" => p.str_member(&mut seen, 2, &mut c.finish_reason),
            "delta" => {
                seen.first(4)?;
                if p.null()? {
                    c.delta = None;
                    Some(())
                } else {
                    p.delta(c.delta.insert(DeltaView::default()))
                }
            }
            "text" => p.str_member(&mut seen, 8, &mut c.text),
            _ => p.skip(3),
        })
    }

    fn delta(&mut self, d: &mut DeltaView<'a>) -> Option<()> {
        let mut seen = Seen(0);
        self.object(|p, key| match key {
            "content" => p.str_member(&mut seen, 1, &mut d.content),
            "reasoning_content" => p.str_member(&mut seen, 2, &mut d.reasoning_content),
            "reasoning" => p.str_member(&mut seen, 4, &mut d.reasoning),
            "tool_calls" => {
                seen.first(8)?;
                // `null` and `[]` here; entries go to serde.
                if !p.null()? {
                    p.eat(b'[')?;
                    p.eat(b']')?;
                    d.tool_calls = Some(ToolDeltas::default());
                }
                Some(())
            }
            _ => p.skip(4),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::plain_run;
    use proptest::prelude::*;

    /// The byte-at-a-time definition `plain_run` must agree with.
    fn plain_run_bytewise(b: &[u8], from: usize) -> usize {
        b.iter()
            .enumerate()
            .skip(from)
            .find(|&(_, &c)| c == b'"' || c == b'\\' || c < 0x20)
            .map_or(b.len().max(from), |(i, _)| i)
    }

    #[test]
    fn plain_run_finds_the_first_stop_byte_in_and_across_words() {
        // Every stop byte at every position of a 20-byte run of plain bytes (ASCII and
        // UTF-8 continuation bytes), behind an earlier stop byte, and none.
        for stop in [b'"', b'\\', 0x00, 0x0A, 0x1F] {
            for at in 0..20 {
                let mut b: Vec<u8> = (0..20u8)
                    .map(|k| if k % 3 == 0 { 0x80 | k } else { b'a' + k })
                    .collect();
                b[at] = stop;
                assert_eq!(plain_run(&b, 0), at, "stop {stop:#x} at {at}");
                if at + 1 < 20 {
                    b[at + 1] = b'"';
                    assert_eq!(plain_run(&b, 0), at, "stop {stop:#x} at {at}, quote after");
                }
            }
        }
        assert_eq!(plain_run(b"abcdefghijklmnop", 0), 16);
        assert_eq!(plain_run(b"\x20\x7f\xff\xfe\x21\x5b\x5d\x23", 0), 8);
        assert_eq!(plain_run(b"ab", 5), 5);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn plain_run_agrees_with_the_bytewise_loop(
            b in proptest::collection::vec(prop_oneof![9 => 0x23u8..=0xff, 1 => any::<u8>()], 0..64),
            from in 0usize..70,
        ) {
            prop_assert_eq!(plain_run(&b, from), plain_run_bytewise(&b, from));
        }
    }
}
