//! Deterministic fixture tools declared in a suite's `[[tools]]` (docs/suite.md;
//! docs/architecture.md `tools`).
//!
//! A [`ToolRegistry`] is built once per run from a loaded [`Suite`]: fixed responses
//! and response-table files are read into memory then, so [`ToolRegistry::execute`] does
//! no I/O except for `read_root` tools, which read one sandboxed file. `execute` is
//! synchronous and never sleeps: the declared latency is returned in
//! [`ToolResult::latency`] and awaited by the driver. Each execution is its own step.
//!
//! Tool failures are results ([`ToolStatus::Error`] with a closed [`ToolErrorCode`]),
//! never panics: the model sees the error text and the run goes on.

mod sandbox;

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::suite::{ResponseBody, Suite, ToolSource, ToolSpec};

pub use crate::json::schema::validate_arguments;
pub use crate::json::{arguments_equal, json_values_equal, table_to_json, toml_to_json};
pub use sandbox::MAX_READ_BYTES;

/// Outcome class of one tool execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    /// The tool produced its content.
    Ok,
    /// The tool failed; see [`ToolResult::error_code`].
    Error,
}

/// Closed set of tool failure codes (a tool step's `tool_error`): the report model's.
pub use crate::model::ToolErrorCode;

/// The result of one tool execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// What the model receives as the tool message: the response text, or for an error
    /// `{"error":{"code":"…","message":"…"}}`. A tool payload: never written to a
    /// timeline artifact.
    pub content: String,
    /// Ok or error.
    pub status: ToolStatus,
    /// Set exactly when `status` is [`ToolStatus::Error`].
    pub error_code: Option<ToolErrorCode>,
    /// The declared `latency_ms` of the tool (zero for an unknown tool), for the driver
    /// to await.
    pub latency: Duration,
}

/// A failure to build the registry: a response file that existed at load time cannot be
/// read now.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Reading a response file failed.
    #[error("tool `{tool}`: cannot read {}: {source}", path.display())]
    Read {
        /// Tool name.
        tool: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A response file is not UTF-8 text.
    #[error("tool `{tool}`: {} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// Tool name.
        tool: String,
        /// The file.
        path: PathBuf,
    },
}

#[derive(Debug)]
enum Responder {
    Fixed(String),
    Read {
        root: PathBuf,
        path_argument: String,
    },
    Table {
        rows: Vec<(Value, String)>,
        default: Option<String>,
    },
}

#[derive(Debug)]
struct Tool {
    spec: ToolSpec,
    responder: Responder,
}

/// The fixture tools of one suite, ready to execute.
#[derive(Debug)]
pub struct ToolRegistry {
    tools: Vec<Tool>,
}

impl ToolRegistry {
    /// Loads every fixed response and response-table file of `suite` into memory and
    /// canonicalizes each `read_root`.
    ///
    /// Errors: [`RegistryError`] when a file cannot be read or is not UTF-8.
    pub fn new(suite: &Suite) -> Result<Self, RegistryError> {
        let mut tools = Vec::with_capacity(suite.tools.len());
        for spec in &suite.tools {
            let read =
                |p: &PathBuf| -> Result<String, RegistryError> {
                    // The bounded reader: no symlink, no FIFO or device, size-capped.
                    let bytes = crate::fsio::read(p, crate::fsio::limits::TOOL_FILE_BYTES)
                        .map_err(|e| RegistryError::Read {
                            tool: spec.name.clone(),
                            path: p.clone(),
                            source: std::io::Error::other(e.to_string()),
                        })?;
                    String::from_utf8(bytes).map_err(|_| RegistryError::NotUtf8 {
                        tool: spec.name.clone(),
                        path: p.clone(),
                    })
                };
            let body = |b: &ResponseBody| match b {
                ResponseBody::Text(t) => Ok(t.clone()),
                ResponseBody::File(p) => read(p),
            };
            let responder = match &spec.source {
                ToolSource::File(p) => Responder::Fixed(read(p)?),
                ToolSource::ReadRoot {
                    root,
                    path_argument,
                } => Responder::Read {
                    root: root.canonicalize().map_err(|source| RegistryError::Read {
                        tool: spec.name.clone(),
                        path: root.clone(),
                        source,
                    })?,
                    path_argument: path_argument.clone(),
                },
                ToolSource::Table { responses, default } => Responder::Table {
                    rows: responses
                        .iter()
                        .map(|r| Ok((r.when.clone(), body(&r.body)?)))
                        .collect::<Result<_, RegistryError>>()?,
                    default: default.as_ref().map(body).transpose()?,
                },
            };
            tools.push(Tool {
                spec: spec.clone(),
                responder,
            });
        }
        Ok(Self { tools })
    }

    /// The declared tool named `name`.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tool(name).map(|t| &t.spec)
    }

    fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.spec.name == name)
    }

    /// OpenAI `tools` request entries for `names`, in that order:
    /// `{"type":"function","function":{"name","description","parameters"}}`. Names not
    /// declared are skipped (suite validation guarantees a job's names exist).
    pub fn openai_tools(&self, names: &[String]) -> Vec<Value> {
        names
            .iter()
            .filter_map(|n| self.spec(n))
            .map(|s| {
                serde_json::json!({
                    "type": "function",
                    "function": {
                        "name": s.name,
                        "description": s.description,
                        "parameters": s.parameters,
                    }
                })
            })
            .collect()
    }

    /// Executes tool `name` with the model's `arguments_json` (empty = `{}`). Never
    /// panics, never sleeps; see [`ToolResult`] and [`ToolErrorCode`] for the outcomes.
    pub fn execute(&self, name: &str, arguments_json: &str) -> ToolResult {
        let Some(tool) = self.tool(name) else {
            return failure(
                ToolErrorCode::UnknownTool,
                format!("unknown tool `{name}`"),
                Duration::ZERO,
            );
        };
        let latency = tool.spec.latency;
        let args = match crate::json::parse_arguments(arguments_json) {
            Ok(v) => v,
            Err(e) => {
                return failure(
                    ToolErrorCode::BadArguments,
                    format!(
                        "arguments are not valid JSON (line {}, column {})",
                        e.line(),
                        e.column()
                    ),
                    latency,
                );
            }
        };
        if !args.is_object() {
            return failure(
                ToolErrorCode::BadArguments,
                "arguments must be a JSON object".into(),
                latency,
            );
        }
        if let Err(m) = validate_arguments(&tool.spec.parameters, &args) {
            return failure(ToolErrorCode::BadArguments, m, latency);
        }
        match &tool.responder {
            Responder::Fixed(text) => success(text.clone(), latency),
            Responder::Table { rows, default } => {
                match rows.iter().find(|(when, _)| json_values_equal(when, &args)) {
                    Some((_, text)) => success(text.clone(), latency),
                    None => match default {
                        Some(text) => success(text.clone(), latency),
                        None => failure(
                            ToolErrorCode::NoMatchingResponse,
                            format!("no response of `{name}` matches these arguments"),
                            latency,
                        ),
                    },
                }
            }
            Responder::Read {
                root,
                path_argument,
            } => {
                let Some(rel) = args.get(path_argument.as_str()) else {
                    return failure(
                        ToolErrorCode::BadArguments,
                        format!("missing argument `{path_argument}`"),
                        latency,
                    );
                };
                let Some(rel) = rel.as_str() else {
                    return failure(
                        ToolErrorCode::BadArguments,
                        format!("argument `{path_argument}` must be a string"),
                        latency,
                    );
                };
                match sandbox::read_confined(root, rel) {
                    Ok(text) => success(text, latency),
                    Err((code, message)) => failure(code, message, latency),
                }
            }
        }
    }
}

fn success(content: String, latency: Duration) -> ToolResult {
    ToolResult {
        content,
        status: ToolStatus::Ok,
        error_code: None,
        latency,
    }
}

fn failure(code: ToolErrorCode, message: String, latency: Duration) -> ToolResult {
    let content = serde_json::json!({"error": {"code": code.as_str(), "message": message}});
    ToolResult {
        content: content.to_string(),
        status: ToolStatus::Error,
        error_code: Some(code),
        latency,
    }
}

#[cfg(test)]
mod tests;
