//! A small deterministic tool set over the Session's workspace folder, so tool loops are real:
//! `read`, `write` and `list` touch real files, and nothing escapes the workspace; `wait` takes
//! (virtual) time, like a long command, so a cancel can land while a tool runs.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{ToolFuture, ToolSet};
use crate::event::Data;
use crate::session::{STATE_DIR, Session};

/// The workspace tools, registered in every Session's [`Toolbox`](super::Toolbox).
#[derive(Debug, Clone, Copy)]
pub struct Workspace;

impl ToolSet for Workspace {
    fn definitions(&self) -> Vec<Value> {
        definitions()
    }

    fn execute<'a>(&'a mut self, session: &'a mut Session, name: &'a str, args: &'a Value) -> Option<ToolFuture<'a>> {
        let tool = Tool::parse(name)?;
        let workspace = session.workspace().to_owned();
        Some(Box::pin(async move { Ok(execute(&workspace, tool, args).await) }))
    }
}

/// A workspace tool, by the name [`definitions`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    List,
    Read,
    Write,
    Wait,
}

impl Tool {
    fn parse(name: &str) -> Option<Tool> {
        match name {
            "list" => Some(Tool::List),
            "read" => Some(Tool::Read),
            "write" => Some(Tool::Write),
            "wait" => Some(Tool::Wait),
            _ => None,
        }
    }
}

/// The tool definitions sent to the Provider, sorted by name.
fn definitions() -> Vec<Value> {
    let path = json!({"type": "string", "description": "Path relative to the workspace root"});
    vec![
        json!({
            "type": "function",
            "name": "list",
            "description": "List the entries of a folder in the workspace, one per line; folders end with `/`.",
            "parameters": {"type": "object", "properties": {"path": path}, "required": [], "additionalProperties": false},
        }),
        json!({
            "type": "function",
            "name": "read",
            "description": "Read a UTF-8 text file from the workspace.",
            "parameters": {"type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false},
        }),
        json!({
            "type": "function",
            "name": "write",
            "description": "Write a UTF-8 text file in the workspace, replacing it if it exists.",
            "parameters": {
                "type": "object",
                "properties": {"path": path, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": false,
            },
        }),
        json!({
            "type": "function",
            "name": "wait",
            "description": "Wait for a number of milliseconds, as a long-running command would.",
            "parameters": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
                "required": ["ms"],
                "additionalProperties": false,
            },
        }),
    ]
}

/// Runs a tool and returns its `tool_result` data: `ok` and `output`, or `ok: false` and `error`.
async fn execute(workspace: &Path, tool: Tool, args: &Value) -> Data {
    let result = match tool {
        Tool::Wait => match args.get("ms").and_then(Value::as_u64) {
            Some(ms) => {
                tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                Ok(format!("waited {ms} ms"))
            }
            None => Err(failure("invalid_args", "`ms` must be a whole number")),
        },
        Tool::Read => resolve(workspace, args, true)
            .and_then(|path| std::fs::read_to_string(&path).map_err(|error| failure("io_error", &error.to_string()))),
        Tool::Write => resolve(workspace, args, true).and_then(|path| {
            let content = args
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| failure("invalid_args", "`content` must be a string"))?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|error| failure("io_error", &error.to_string()))?;
            }
            std::fs::write(&path, content).map_err(|error| failure("io_error", &error.to_string()))?;
            Ok(format!("wrote {} bytes", content.len()))
        }),
        Tool::List => resolve(workspace, args, false).and_then(|path| list(&path)),
    };
    let value = match result {
        Ok(output) => json!({"ok": true, "output": output}),
        Err(error) => json!({"ok": false, "error": error}),
    };
    match value {
        Value::Object(map) => map,
        _ => Data::new(),
    }
}

fn failure(kind: &str, message: &str) -> Value {
    json!({"kind": kind, "message": message})
}

/// The workspace path named by `args.path`, refusing absolute paths and `..`.
fn resolve(workspace: &Path, args: &Value, required: bool) -> Result<PathBuf, Value> {
    let relative = match args.get("path").and_then(Value::as_str) {
        Some(path) => path,
        None if required => return Err(failure("invalid_args", "`path` must be a string")),
        None => ".",
    };
    let escapes = Path::new(relative)
        .components()
        .any(|component| !matches!(component, Component::Normal(_) | Component::CurDir));
    if escapes {
        return Err(failure("path_outside_workspace", &format!("`{relative}` is not inside the workspace")));
    }
    Ok(workspace.join(relative))
}

fn list(path: &Path) -> Result<String, Value> {
    let entries = std::fs::read_dir(path).map_err(|error| failure("io_error", &error.to_string()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name() != STATE_DIR)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() { format!("{name}/") } else { name }
        })
        .collect();
    names.sort();
    Ok(names.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn write_read_and_list_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let wrote = execute(dir.path(), Tool::Write, &json!({"path": "notes/a.txt", "content": "hi"})).await;
        assert_eq!(wrote["ok"], true);
        assert_eq!(execute(dir.path(), Tool::Read, &json!({"path": "notes/a.txt"})).await["output"], "hi");
        assert_eq!(execute(dir.path(), Tool::List, &json!({})).await["output"], "notes/");
    }

    #[tokio::test(start_paused = true)]
    async fn wait_takes_virtual_time() {
        let started = tokio::time::Instant::now();
        let result = execute(Path::new("."), Tool::Wait, &json!({"ms": 60_000})).await;
        assert_eq!(result["output"], "waited 60000 ms");
        assert_eq!(started.elapsed().as_millis(), 60_000);
    }

    #[tokio::test]
    async fn paths_may_not_escape_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        for path in ["../x", "/etc/passwd"] {
            let result = execute(dir.path(), Tool::Read, &json!({"path": path})).await;
            assert_eq!(result["error"]["kind"], "path_outside_workspace", "{path}");
        }
    }
}
