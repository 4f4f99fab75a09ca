//! The tool side of the mock: the tools gauntlet's MCP server offers an agent (the corpus's
//! `read`, `write`, `list` and `wait`), what each call answers, and a journal of every call the
//! server received and how it ended.
//!
//! The MCP server the agent starts ([`crate::mcp`]) is a relay on stdio: it asks this server,
//! over loopback HTTP, what to answer, does it (answer, fail, crash, hang), and says how the
//! call ended. So the judge knows what each tool really returned, whatever the agent then tells
//! its model or its client. A call runs for real on the scenario's workspace unless its
//! scripted call gives an `outcome` (a result, an `isError` result, a JSON-RPC error, a crash,
//! a hang, a slow answer).
//!
//! Endpoints: `GET /tools` lists the tools, `POST /call` (`{tool, args}`) returns the call's
//! number and [`Answer`], `POST /end` (`{call, end}`) records how it ended.

use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[cfg(feature = "server")]
use crate::dialect::json_answer;
#[cfg(feature = "server")]
use crate::provider::{MockReply, MockRequest};
use crate::script::{Script, ToolOutcome};
#[cfg(feature = "server")]
use crate::server::Responder;
use crate::tool_names::{TOOLS, marker};

/// What the MCP server does with one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case")]
pub enum Answer {
    /// A `tools/call` result, after `after_ms` milliseconds of the scenario's time.
    Result {
        /// Its one text content.
        text: String,
        /// MCP's `isError`.
        is_error: bool,
        /// How long the server waits before answering, on the scenario's clock.
        after_ms: u64,
    },
    /// A JSON-RPC error response.
    RpcError {
        /// Its message.
        message: String,
    },
    /// The server exits without answering.
    Crash,
    /// The server never answers.
    Hang,
}

impl Answer {
    /// Whether it tells the client the tool succeeded.
    pub fn is_success(&self) -> bool {
        matches!(self, Answer::Result { is_error: false, .. })
    }
}

/// How a call ended at the server, as the MCP server reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallEnd {
    /// Its answer was sent.
    Answered,
    /// The client cancelled it (`notifications/cancelled`) before its answer.
    Cancelled,
}

/// One call the server received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Its number, from 1, in the order the server received calls.
    pub call: usize,
    /// The tool, by the server's name for it.
    pub tool: String,
    /// Its arguments.
    pub args: Value,
    /// Whether the scenario scripted its answer (else the tool ran).
    pub scripted: bool,
    /// What the server was told to do.
    #[serde(flatten)]
    pub answer: Answer,
    /// How long the server waits before it answers, in real milliseconds: the answer's
    /// `after_ms` on the run's time scale (not golden: it depends on the scale).
    #[serde(default)]
    pub wait_ms: u64,
    /// How it ended; `None` when the server never said (it crashed, hung or was stopped).
    pub end: Option<CallEnd>,
}

impl ToolCall {
    /// As its golden holds it: on the scenario's clock, without the run's real wait.
    pub fn golden(&self) -> Value {
        let mut value = json!(self);
        if let Some(fields) = value.as_object_mut() {
            fields.remove("wait_ms");
        }
        value
    }

    /// Whether the client got a successful result for it.
    pub fn succeeded(&self) -> bool {
        self.answer.is_success() && self.end == Some(CallEnd::Answered)
    }

    /// The text its result carried, when one was sent.
    pub fn text(&self) -> Option<&str> {
        match (&self.answer, self.end) {
            (Answer::Result { text, .. }, Some(CallEnd::Answered)) => Some(text),
            _ => None,
        }
    }
}

/// The tool server of one scenario.
#[derive(Debug)]
pub struct ToolServer {
    workspace: PathBuf,
    time_scale: f64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The scripted calls of the corpus's tools with an outcome, each answered once.
    scripted: Vec<Scripted>,
    journal: Vec<ToolCall>,
}

#[derive(Debug)]
struct Scripted {
    tool: String,
    args: Value,
    outcome: ToolOutcome,
    used: bool,
}

impl ToolServer {
    /// The tools of `script` on `workspace`; durations shrink by `time_scale`.
    pub fn new(script: &Script, workspace: &Path, time_scale: f64) -> ToolServer {
        let scripted = script
            .routes
            .values()
            .flatten()
            .flat_map(|response| &response.calls)
            .filter(|call| TOOLS.contains(&call.name.as_str()))
            .filter_map(|call| {
                let outcome = call.outcome.clone()?;
                Some(Scripted { tool: call.name.clone(), args: call.args.clone(), outcome, used: false })
            })
            .collect();
        let state = Mutex::new(State { scripted, journal: Vec::new() });
        ToolServer { workspace: workspace.to_owned(), time_scale, state }
    }

    /// Every call received so far, in order.
    pub fn journal(&self) -> Vec<ToolCall> {
        self.lock().journal.clone()
    }

    /// The tools as MCP's `tools/list` gives them.
    pub fn tools() -> Value {
        let path = json!({"type": "string", "description": "Path relative to the workspace root"});
        let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
            json!({
                "name": name,
                "description": format!("{description} {}", marker(name)),
                "inputSchema": {"type": "object", "properties": properties, "required": required},
            })
        };
        json!({"tools": [
            tool("list", "List the entries of a folder in the workspace, one per line; folders end with `/`.", json!({"path": path}), &[]),
            tool("read", "Read a UTF-8 text file from the workspace.", json!({"path": path}), &["path"]),
            tool("write", "Write a UTF-8 text file in the workspace, replacing it if it exists.", json!({"path": path, "content": {"type": "string"}}), &["path", "content"]),
            tool("wait", "Wait for a number of milliseconds, as a long-running command would.", json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"]),
        ]})
    }

    /// Decides and journals the answer to one call.
    pub fn call(&self, tool: &str, args: &Value) -> ToolCall {
        let mut state = self.lock();
        let scripted = state.scripted.iter_mut().find(|s| !s.used && s.tool == tool && s.args == *args).map(|s| {
            s.used = true;
            s.outcome.clone()
        });
        let answer = match &scripted {
            Some(outcome) => self.scripted_answer(tool, args, outcome),
            None => self.run(tool, args, 0),
        };
        let wait_ms = match &answer {
            Answer::Result { after_ms, .. } => self.scaled(*after_ms),
            _ => 0,
        };
        let call = ToolCall {
            call: state.journal.len() + 1,
            tool: tool.to_owned(),
            args: args.clone(),
            scripted: scripted.is_some(),
            answer,
            wait_ms,
            end: None,
        };
        state.journal.push(call.clone());
        call
    }

    /// Records how call `call` ended.
    pub fn end(&self, call: usize, end: CallEnd) {
        if let Some(entry) = self.lock().journal.get_mut(call.wrapping_sub(1)) {
            entry.end.get_or_insert(end);
        }
    }

    fn scripted_answer(&self, tool: &str, args: &Value, outcome: &ToolOutcome) -> Answer {
        match outcome {
            ToolOutcome::Result(text) => Answer::Result { text: text.clone(), is_error: false, after_ms: 0 },
            ToolOutcome::Error(text) => Answer::Result { text: text.clone(), is_error: true, after_ms: 0 },
            ToolOutcome::RpcError(message) => Answer::RpcError { message: message.clone() },
            ToolOutcome::Crash => Answer::Crash,
            ToolOutcome::Hang => Answer::Hang,
            ToolOutcome::SlowMs(ms) => self.run(tool, args, *ms),
        }
    }

    /// Runs the tool on the workspace; its answer waits `after_ms` more.
    fn run(&self, tool: &str, args: &Value, after_ms: u64) -> Answer {
        let (text, is_error, wait) = match run(&self.workspace, tool, args) {
            Ran::Done(text) => (text, false, 0),
            Ran::Waited(ms) => (format!("waited {ms} ms"), false, ms),
            Ran::Failed(text) => (text, true, 0),
        };
        Answer::Result { text, is_error, after_ms: after_ms + wait }
    }

    fn scaled(&self, ms: u64) -> u64 {
        // Rounded up, so a short wait stays a wait.
        (ms as f64 * self.time_scale).ceil() as u64
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What running a tool gave.
enum Ran {
    Done(String),
    /// `wait`: succeeds after this many scenario milliseconds.
    Waited(u64),
    Failed(String),
}

fn run(workspace: &Path, tool: &str, args: &Value) -> Ran {
    let path = || -> Result<PathBuf, String> {
        let relative = args.get("path").and_then(Value::as_str).unwrap_or(".");
        let inside =
            Path::new(relative).components().all(|part| matches!(part, Component::Normal(_) | Component::CurDir));
        if inside { Ok(workspace.join(relative)) } else { Err(format!("`{relative}` is not inside the workspace")) }
    };
    let done = |result: Result<String, String>| result.map_or_else(Ran::Failed, Ran::Done);
    match tool {
        "read" => done(path().and_then(|path| std::fs::read_to_string(path).map_err(|error| error.to_string()))),
        "write" => done(path().and_then(|path| {
            let content = args.get("content").and_then(Value::as_str).ok_or("`content` must be a string")?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|error| error.to_string())?;
            }
            std::fs::write(path, content).map_err(|error| error.to_string())?;
            Ok(format!("wrote {} bytes", content.len()))
        })),
        "list" => done(path().and_then(|path| {
            let entries = std::fs::read_dir(path).map_err(|error| error.to_string())?;
            let mut names: Vec<String> = entries
                .flatten()
                .map(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if entry.path().is_dir() { format!("{name}/") } else { name }
                })
                .collect();
            names.sort();
            Ok(names.join("\n"))
        })),
        "wait" => match args.get("ms").and_then(Value::as_u64) {
            Some(ms) => Ran::Waited(ms),
            None => Ran::Failed("`ms` must be a whole number".to_owned()),
        },
        other => Ran::Failed(format!("no tool `{other}`")),
    }
}

/// A call as the MCP server asks it.
#[cfg(feature = "server")]
#[derive(Debug, Deserialize)]
struct Asked {
    tool: String,
    #[serde(default)]
    args: Value,
}

/// An end as the MCP server reports it.
#[cfg(feature = "server")]
#[derive(Debug, Deserialize)]
struct Ended {
    call: usize,
    end: CallEnd,
}

#[cfg(feature = "server")]
impl Responder for ToolServer {
    fn respond(&self, request: MockRequest) -> MockReply {
        let answer = match (request.method.as_str(), request.path.as_str()) {
            ("GET", "/tools") => json_answer(200, ToolServer::tools()),
            ("POST", "/call") => match serde_json::from_slice::<Asked>(&request.body) {
                Ok(asked) => json_answer(200, json!(self.call(&asked.tool, &asked.args))),
                Err(error) => json_answer(400, json!({"error": error.to_string()})),
            },
            ("POST", "/end") => match serde_json::from_slice::<Ended>(&request.body) {
                Ok(ended) => {
                    self.end(ended.call, ended.end);
                    json_answer(200, json!({}))
                }
                Err(error) => json_answer(400, json!({"error": error.to_string()})),
            },
            (method, path) => json_answer(404, json!({"error": format!("no endpoint {method} {path}")})),
        };
        MockReply { status: answer.status, headers: answer.headers, steps: answer.steps, end: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(toml: &str) -> Script {
        match Script::from_toml_str(toml) {
            Ok(script) => script,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn a_call_runs_on_the_workspace_unless_its_outcome_is_scripted() {
        let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        std::fs::write(workspace.path().join("notes.md"), "alpha").unwrap_or_else(|error| panic!("{error}"));
        let script = script(
            r#"
            [[routes.root]]
            calls = [{ name = "read", args = { path = "notes.md" }, outcome = { error = "disk on fire" } }]
            "#,
        );
        let server = ToolServer::new(&script, workspace.path(), 0.5);
        let args = json!({"path": "notes.md"});
        let scripted = server.call("read", &args);
        assert_eq!(scripted.answer, Answer::Result { text: "disk on fire".into(), is_error: true, after_ms: 0 });
        assert!(scripted.scripted);
        // The scripted outcome answers one call; the next runs the tool.
        let ran = server.call("read", &args);
        assert_eq!(ran.answer, Answer::Result { text: "alpha".into(), is_error: false, after_ms: 0 });
        let outside = server.call("read", &json!({"path": "../etc/passwd"}));
        assert!(!outside.answer.is_success());
        let waited = server.call("wait", &json!({"ms": 3}));
        assert_eq!(waited.answer, Answer::Result { text: "waited 3 ms".into(), is_error: false, after_ms: 3 });
        assert_eq!(waited.wait_ms, 2, "scaled by 0.5, rounded up");
        server.end(2, CallEnd::Answered);
        server.end(2, CallEnd::Cancelled);
        let journal = server.journal();
        assert_eq!(journal.iter().map(|call| call.call).collect::<Vec<_>>(), [1, 2, 3, 4]);
        assert_eq!(journal[1].end, Some(CallEnd::Answered), "the first end reported stays");
        assert!(journal[1].succeeded() && !journal[0].succeeded());
    }

    #[test]
    fn every_tool_carries_its_marker() {
        let tools = ToolServer::tools();
        for (listed, name) in tools["tools"].as_array().into_iter().flatten().zip(TOOLS) {
            assert_eq!(listed["name"], name);
            assert!(listed["description"].as_str().is_some_and(|text| text.ends_with(&marker(name))));
        }
    }
}
