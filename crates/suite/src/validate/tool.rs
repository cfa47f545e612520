//! `[[tools]]` validation.

use std::time::Duration;

use serde_json::Value;

use super::super::ctx::Ctx;
use super::super::error::SuiteErrorKind as K;
use super::super::model::{ResponseBody, ToolResponse, ToolSource, ToolSpec};
use super::super::raw::{RawResponse, RawTool};
use super::checks::R;
use super::fixtures::{Fixtures, Want};
use crate::json::schema::{check_parameters_shape, validate_arguments};
use crate::json::table_to_json;

pub(super) fn tool(ctx: &Ctx, fx: &Fixtures, i: usize, t: RawTool) -> R<ToolSpec> {
    let p = format!("tools[{i}]");
    check_tool_name(&t.name).map_err(|m| ctx.at_value(&format!("{p}.name"), K::InvalidValue, m))?;
    let parameters = match &t.parameters {
        None => serde_json::json!({"type": "object", "properties": {}}),
        Some(table) => {
            let v = Value::Object(
                table_to_json(table)
                    .map_err(|m| ctx.at_value(&format!("{p}.parameters"), K::InvalidValue, m))?,
            );
            check_parameters_shape(&v)
                .map_err(|m| ctx.at_value(&format!("{p}.parameters"), K::InvalidValue, m))?;
            v
        }
    };
    check_one_source(ctx, &p, &t)?;
    let source = if let Some(f) = &t.response_file {
        ToolSource::File(fx.path(ctx, &format!("{p}.response_file"), f, Want::File)?)
    } else if let Some(r) = &t.read_root {
        let root = fx.path(ctx, &format!("{p}.read_root"), r, Want::Dir)?;
        let Some(arg) = t.path_argument.clone() else {
            return Err(ctx
                .at_key(
                    &format!("{p}.read_root"),
                    K::MissingField,
                    format!("tool `{}` has `read_root` but no `path_argument`", t.name),
                )
                .with_hint(Some(
                    "name the argument that carries the file path, e.g. `path_argument = \"path\"`"
                        .into(),
                )));
        };
        let declared = parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|props| props.contains_key(&arg));
        if !declared {
            return Err(ctx.at_value(
                &format!("{p}.path_argument"),
                K::UnknownReference,
                format!("`path_argument` `{arg}` is not a property in `parameters`"),
            ));
        }
        ToolSource::ReadRoot {
            root,
            path_argument: arg,
        }
    } else {
        table_source(
            ctx,
            fx,
            &p,
            &parameters,
            t.responses.unwrap_or_default(),
            t.default_text,
            t.default_file,
        )?
    };
    Ok(ToolSpec {
        name: t.name,
        description: t.description.unwrap_or_default(),
        parameters,
        latency: Duration::from_millis(t.latency_ms.unwrap_or(0)),
        source,
    })
}

/// A tool has exactly one response source (`response_file`, `read_root` or
/// `[[tools.responses]]`), and no key that belongs to another source.
fn check_one_source(ctx: &Ctx, p: &str, t: &RawTool) -> R<()> {
    let sources: Vec<&str> = [
        ("response_file", t.response_file.is_some()),
        ("read_root", t.read_root.is_some()),
        ("responses", t.responses.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    match sources.as_slice() {
        [] => {
            return Err(ctx
                .at_key(
                    p,
                    K::MissingField,
                    format!("tool `{}` has no response source", t.name),
                )
                .with_hint(Some(
                    "give exactly one of `response_file`, `read_root` (with `path_argument`) \
                     or `[[tools.responses]]`"
                        .into(),
                )));
        }
        [_] => {}
        [first, second, ..] => {
            return Err(ctx.at_key(
                &format!("{p}.{second}"),
                K::InvalidValue,
                format!(
                    "tool `{}` has both `{first}` and `{second}`: a tool has exactly one response source",
                    t.name
                ),
            ));
        }
    }
    let not_for = |key: &str, msg: &str| {
        ctx.at_key(&format!("{p}.{key}"), K::WrongKindField, msg.to_string())
    };
    if t.path_argument.is_some() && t.read_root.is_none() {
        return Err(not_for(
            "path_argument",
            "`path_argument` only applies to a `read_root` tool",
        ));
    }
    if t.responses.is_none() {
        for key in ["default_text", "default_file"] {
            let set = if key == "default_text" {
                t.default_text.is_some()
            } else {
                t.default_file.is_some()
            };
            if set {
                return Err(not_for(
                    key,
                    &format!("`{key}` only applies to a tool with `[[tools.responses]]`"),
                ));
            }
        }
    }
    Ok(())
}

/// The `[[tools.responses]]` source: each response's `when` (which must be able to match
/// `parameters`) and its text or file, then the default response.
fn table_source(
    ctx: &Ctx,
    fx: &Fixtures,
    p: &str,
    parameters: &Value,
    responses_raw: Vec<RawResponse>,
    default_text: Option<String>,
    default_file: Option<String>,
) -> R<ToolSource> {
    let mut responses = Vec::new();
    for (j, r) in responses_raw.into_iter().enumerate() {
        let rp = format!("{p}.responses[{j}]");
        let when = Value::Object(
            table_to_json(&r.when)
                .map_err(|m| ctx.at_value(&format!("{rp}.when"), K::InvalidValue, m))?,
        );
        validate_arguments(parameters, &when).map_err(|m| {
            ctx.at_value(
                &format!("{rp}.when"),
                K::InvalidValue,
                format!("`when` can never match the tool's parameters: {m}"),
            )
        })?;
        let body = match (r.text, r.file) {
            (Some(text), None) => ResponseBody::Text(text),
            (None, Some(f)) => {
                ResponseBody::File(fx.path(ctx, &format!("{rp}.file"), &f, Want::File)?)
            }
            (Some(_), Some(_)) => {
                return Err(ctx.at_key(
                    &format!("{rp}.file"),
                    K::InvalidValue,
                    "a response has `text` or `file`, not both".into(),
                ));
            }
            (None, None) => {
                return Err(ctx.at_key(
                    &rp,
                    K::MissingField,
                    "a response needs `text` or `file`".into(),
                ));
            }
        };
        responses.push(ToolResponse { when, body });
    }
    let default = match (default_text, default_file) {
        (None, None) => None,
        (Some(text), None) => Some(ResponseBody::Text(text)),
        (None, Some(f)) => Some(ResponseBody::File(fx.path(
            ctx,
            &format!("{p}.default_file"),
            &f,
            Want::File,
        )?)),
        (Some(_), Some(_)) => {
            return Err(ctx.at_key(
                &format!("{p}.default_file"),
                K::InvalidValue,
                "a tool has `default_text` or `default_file`, not both".into(),
            ));
        }
    };
    Ok(ToolSource::Table { responses, default })
}

/// `[a-z][a-z0-9_]{0,63}`: tool names.
fn check_tool_name(n: &str) -> Result<(), String> {
    let mut chars = n.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && n.len() <= 64;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{n}` is not a valid tool name: a lowercase letter, then up to 63 lowercase \
             letters, digits or `_`"
        ))
    }
}
