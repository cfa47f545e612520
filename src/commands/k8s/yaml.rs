//! Block YAML for the `k8s` manifests that YAML 1.1 readers (kubectl's parser, PyYAML) and
//! YAML 1.2 readers read as the same values.
//!
//! A plain scalar means different things to the two versions: YAML 1.1 reads `yes`, `no`,
//! `on`, `off`, `y`, `2001-01-01`, `1_000`, `1:20` or `=` as booleans, dates, numbers or tags
//! where YAML 1.2 reads strings, and a serializer written for one of them leaves them plain.
//! Nothing here guesses which strings are safe: every string value is written double-quoted
//! (or, when it spans lines and nothing in it needs escaping, as a literal block, which
//! both versions read as a string). A mapping key is plain only when it is ASCII letters
//! and not a boolean or null word of either version; any other key is double-quoted too.
//! Integers, booleans and null are written as both versions read them; other numbers are
//! refused (the manifests have none, and YAML 1.1 reads `1e3` as a string).

use serde_json::{Map, Number, Value};

/// `v` as one YAML document's text (no `---`), ending with a newline.
pub fn document(v: &Value) -> Result<String, String> {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => mapping(&mut out, m, 0)?,
        Value::Array(a) if !a.is_empty() => sequence(&mut out, a, 0)?,
        _ => {
            inline(&mut out, v)?;
            out.push('\n');
        }
    }
    Ok(out)
}

/// A non-empty mapping, one `key: …` line (or block) per entry at `indent`.
fn mapping(out: &mut String, m: &Map<String, Value>, indent: usize) -> Result<(), String> {
    for (k, v) in m {
        pad(out, indent);
        key(out, k);
        out.push(':');
        after_indicator(out, v, indent, false)?;
    }
    Ok(())
}

/// A non-empty sequence, one `- …` item per element at `indent`.
fn sequence(out: &mut String, a: &[Value], indent: usize) -> Result<(), String> {
    for v in a {
        pad(out, indent);
        out.push('-');
        after_indicator(out, v, indent, true)?;
    }
    Ok(())
}

/// What follows `key:` or (`item`) `-` at `indent`: an inline scalar, a literal block, or a
/// nested collection indented by two more (an item's collection starts on the item's line).
fn after_indicator(out: &mut String, v: &Value, indent: usize, item: bool) -> Result<(), String> {
    let mut block = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => mapping(&mut block, m, indent + 2)?,
        Value::Array(a) if !a.is_empty() => sequence(&mut block, a, indent + 2)?,
        Value::String(s) if literal_ok(s) => {
            literal(out, s, indent + 2);
            return Ok(());
        }
        _ => {
            out.push(' ');
            inline(out, v)?;
            out.push('\n');
            return Ok(());
        }
    }
    if item {
        // `- key: …` / `- - …`: the block's first line continues the item's line.
        out.push(' ');
        out.push_str(&block[indent + 2..]);
    } else {
        out.push('\n');
        out.push_str(&block);
    }
    Ok(())
}

/// `s` (see [`literal_ok`]) as a literal block whose lines are at `indent`: `|` keeps its
/// final line break, `|-` is for a text without one.
fn literal(out: &mut String, s: &str, indent: usize) {
    out.push_str(if s.ends_with('\n') { " |\n" } else { " |-\n" });
    for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
        if !line.is_empty() {
            pad(out, indent);
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// A scalar, or an empty collection, on one line.
fn inline(out: &mut String, v: &Value) -> Result<(), String> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&integer(n)?),
        Value::String(s) => quoted(out, s),
        Value::Object(_) => out.push_str("{}"),
        Value::Array(_) => out.push_str("[]"),
    }
    Ok(())
}

fn integer(n: &Number) -> Result<String, String> {
    if n.is_i64() || n.is_u64() {
        Ok(n.to_string())
    } else {
        Err(format!(
            "{n}: not an integer (the manifests write integers only)"
        ))
    }
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// A key: plain when it is ASCII letters and no boolean or null word, else double-quoted.
fn key(out: &mut String, k: &str) {
    let special = matches!(
        k.to_ascii_lowercase().as_str(),
        "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
    );
    if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphabetic()) && !special {
        out.push_str(k);
    } else {
        quoted(out, k);
    }
}

/// Whether `c` may stand unescaped in a YAML 1.1 and 1.2 stream: the printable set both
/// share, without the line breaks YAML 1.1 adds (U+0085, U+2028, U+2029) and the byte-order
/// mark.
fn printable(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{A0}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// `s` as a double-quoted scalar: `"` and `\` escaped, every character outside the printable
/// set escaped by its code point.
fn quoted(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if printable(c) => out.push(c),
            c if u32::from(c) <= 0xFFFF => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push_str(&format!("\\U{:08X}", u32::from(c))),
        }
    }
    out.push('"');
}

/// Whether `s` can be a literal block (`|` or `|-`) that reads back as exactly `s`: it spans
/// lines, every character is printable, no line starts or ends with white space (so the
/// block's indentation is found from its first line and nothing depends on trailing
/// spaces), it does not start with a line break and ends with at most one.
fn literal_ok(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    body.contains('\n')
        && !body.starts_with('\n')
        && !body.ends_with('\n')
        && body.chars().all(|c| c == '\n' || printable(c))
        && body
            .split('\n')
            .all(|l| !l.starts_with([' ', '\t']) && !l.ends_with([' ', '\t']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Strings that a YAML 1.1 or 1.2 reader takes for something else when plain.
    const HOSTILE: &[&str] = &[
        "yes",
        "No",
        "ON",
        "off",
        "y",
        "n",
        "true",
        "False",
        "null",
        "~",
        "",
        "2001-01-01",
        "2001-12-14t21:59:43.10-05:00",
        "1_000",
        "1:20",
        "0x1F",
        "0o17",
        "017",
        "1e3",
        ".5",
        ".inf",
        "-.NaN",
        "=",
        "<<",
        "123",
        "-1",
        "+1",
        "1767225600.000",
        " lead",
        "trail ",
        "a: b",
        "- x",
        "# c",
        "&a",
        "*a",
        "!t",
        "%d",
        "@x",
        "`x",
        "{}",
        "[]",
        "'q'",
        "\"dq\"",
        "back\\slash",
        "tab\there",
        "cr\rlf",
        "nul\0",
        "bell\u{7}",
        "del\u{7F}",
        "nel\u{85}",
        "ls\u{2028}",
        "ps\u{2029}",
        "bom\u{FEFF}",
        "é😀",
        "---",
        "...",
        "a\nb",
        "a\n\nb\n",
        "a\n",
        "\nlead",
        "x\n  indented\n",
        "trail \nx",
        "two\n\n",
        "#!/bin/sh\nexit 0\n",
    ];

    /// Every hostile string, as a value, a key and a sequence item, reads back (YAML 1.2)
    /// as itself, and no string value is plain.
    #[test]
    fn every_string_reads_back_as_itself() {
        for s in HOSTILE {
            let v = json!({
                "value": s,
                "list": [s, {"inner": s, "n": 1}, [s, true, null]],
                *s: {"k": s},
                "empty": {}, "none": [],
            });
            let text = document(&v).unwrap();
            let back: Value = serde_norway::from_str(&text).unwrap_or_else(|e| {
                panic!("{s:?}: {e}\n{text}");
            });
            assert_eq!(back, v, "{s:?}:\n{text}");
            if !literal_ok(s) {
                let mut q = String::new();
                quoted(&mut q, s);
                assert!(text.contains(&format!("value: {q}\n")), "{s:?}:\n{text}");
            }
        }
    }

    #[test]
    fn values_are_double_quoted_and_safe_keys_plain() {
        let v = json!({"name": "yes", "on": "off", "app.kubernetes.io/name": "2001-01-01",
            "values": [0, -3], "args": ["set -u\nexit 0\n"]});
        assert_eq!(
            document(&v).unwrap(),
            "name: \"yes\"\n\"on\": \"off\"\n\"app.kubernetes.io/name\": \"2001-01-01\"\n\
             values:\n  - 0\n  - -3\nargs:\n  - |\n    set -u\n    exit 0\n"
        );
        assert_eq!(
            document(&json!({"k": ["a\n", "b\nc"]})).unwrap(),
            "k:\n  - \"a\\n\"\n  - |-\n    b\n    c\n"
        );
        assert_eq!(
            document(&json!([[1, [2]], {"a": {"b": []}}])).unwrap(),
            "- - 1\n  - - 2\n- a:\n    b: []\n"
        );
        assert!(document(&json!({"x": 1.5})).unwrap_err().contains("1.5"));
    }
}
