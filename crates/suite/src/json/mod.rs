//! JSON helpers shared by the suite schema, the fixture tools and grading: parsed-JSON
//! equality, TOML → JSON conversion and ([`schema`]) the minimal JSON-schema check of
//! tool arguments. A leaf: pure, no I/O, no imports from the rest of the crate.

pub mod schema;

use serde_json::Value;

/// Parsed-JSON equality: objects compare regardless of key order, arrays element-wise,
/// numbers by numeric value (`1`, `1.0` and `1e0` are equal; integers beyond 2^53 compare
/// exactly as integers). Used for response tables (`when`), repeated-call detection
/// (`max_repeated_tool_calls`) and `json_path` checks (docs/suite.md).
pub fn json_values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_values_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_values_equal(v, w)))
        }
        _ => false,
    }
}

fn numbers_equal(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    if let (Some(p), Some(q)) = (x.as_i64(), y.as_i64()) {
        return p == q;
    }
    if let (Some(p), Some(q)) = (x.as_u64(), y.as_u64()) {
        return p == q;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(p), Some(q)) => p == q,
        _ => false,
    }
}

/// Whether two tool-call argument strings are equal as parsed JSON (an empty string is
/// `{}`); when either does not parse, the raw strings are compared. For the agentic
/// driver's `max_repeated_tool_calls` (docs/suite.md).
pub fn arguments_equal(a: &str, b: &str) -> bool {
    match (parse_arguments(a), parse_arguments(b)) {
        (Ok(x), Ok(y)) => json_values_equal(&x, &y),
        _ => a == b,
    }
}

/// Parses tool-call arguments; empty or whitespace-only text is `{}` (models send `""`
/// for tools without parameters).
pub fn parse_arguments(s: &str) -> Result<Value, serde_json::Error> {
    if s.trim().is_empty() {
        Ok(Value::Object(serde_json::Map::new()))
    } else {
        serde_json::from_str(s)
    }
}

/// Converts a TOML value to JSON: datetimes become their RFC 3339 string; a non-finite
/// float is an error (JSON cannot hold it).
pub fn toml_to_json(v: &toml::Value) -> Result<Value, String> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("{f} cannot be represented in JSON"))?,
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => {
            Value::Array(a.iter().map(toml_to_json).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(t) => Value::Object(table_to_json(t)?),
    })
}

/// [`toml_to_json`] for a table.
pub fn table_to_json(t: &toml::Table) -> Result<serde_json::Map<String, Value>, String> {
    t.iter()
        .map(|(k, v)| Ok((k.clone(), toml_to_json(v)?)))
        .collect()
}
