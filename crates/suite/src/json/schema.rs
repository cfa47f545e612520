//! Minimal JSON-schema validation of tool arguments: `type` (one name or a list),
//! `required`, `properties` (recursively), `additionalProperties: false`, `enum` and
//! array `items`. Anything else in the schema is accepted and ignored; the model sees the
//! full schema.

use serde_json::Value;

use super::json_values_equal;

/// Checks `args` against `schema`; the error names the first offending argument by its
/// JSON pointer-like path (`city`, `filters.limit`, `paths[2]`) and never includes the
/// argument's value.
pub fn validate_arguments(schema: &Value, args: &Value) -> Result<(), String> {
    validate_at(schema, args, "")
}

fn validate_at(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Ok(());
    };
    let name = if at.is_empty() {
        "the arguments".to_string()
    } else {
        format!("`{at}`")
    };
    if let Some(t) = s.get("type") {
        let names: Vec<&str> = match t {
            Value::String(n) => vec![n.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.is_empty() && !names.iter().any(|n| type_matches(n, v)) {
            return Err(format!(
                "{name} must be of type {}, found {}",
                names.join(" or "),
                type_name(v)
            ));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum")
        && !options.iter().any(|o| json_values_equal(o, v))
    {
        return Err(format!("{name} is not one of the allowed values"));
    }
    if let Value::Object(obj) = v {
        if let Some(Value::Array(req)) = s.get("required") {
            for r in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    return Err(format!("missing required argument `{}`", child(at, r)));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(ps) => validate_at(ps, val, &child(at, k))?,
                None => {
                    if s.get("additionalProperties") == Some(&Value::Bool(false)) {
                        return Err(format!("unexpected argument `{}`", child(at, k)));
                    }
                }
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (v, s.get("items")) {
        for (i, item) in items.iter().enumerate() {
            validate_at(item_schema, item, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Checks the shape of a tool's `parameters` at suite load: an object schema whose
/// `properties` is a table and whose `required` names declared properties.
pub(crate) fn check_parameters_shape(schema: &Value) -> Result<(), String> {
    let Some(s) = schema.as_object() else {
        return Err("`parameters` must be a table".into());
    };
    if s.get("type").and_then(Value::as_str) != Some("object") {
        return Err("`parameters` must be an object schema: `type = \"object\"`".into());
    }
    let props = match s.get("properties") {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(_) => return Err("`parameters.properties` must be a table".into()),
    };
    match s.get("required") {
        None => {}
        Some(Value::Array(req)) => {
            for r in req {
                let Some(r) = r.as_str() else {
                    return Err("`parameters.required` must list property names".into());
                };
                if !props.is_some_and(|p| p.contains_key(r)) {
                    return Err(format!(
                        "`parameters.required` names `{r}`, which is not in `properties`"
                    ));
                }
            }
        }
        Some(_) => return Err("`parameters.required` must be an array of names".into()),
    }
    Ok(())
}

fn child(at: &str, k: &str) -> String {
    if at.is_empty() {
        k.to_string()
    } else {
        format!("{at}.{k}")
    }
}

fn type_matches(name: &str, v: &Value) -> bool {
    match name {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        // Unknown type names are not ours to reject.
        _ => true,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
