//! The tool seam: the Turn loop sees tools only through a [`Toolbox`], a list of
//! [`ToolSet`]s registered when a Session is set up (the workspace tools always, the delegation
//! tools when the Session delegates, the `plan` tool when the agent offers it). The Turn offers the definitions, runs a call by name,
//! and lets each set catch up on background work only at the points where a parent may
//! record it (SUB-REPLAY-TERMINAL-ONLY), so the loop names no tool and imports no tool family.

pub mod mcp;
pub mod plan;
pub mod workspace;

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use crate::event::{Data, object};
use crate::log::LogError;
use crate::session::Session;

/// A tool call in flight; `Err` only when the Log could not be written.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Data, LogError>> + Send + 'a>>;

/// A set getting ready before a Turn's first Provider call ([`ToolSet::prepare`]).
pub type Prepare<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// A family of tools: what it offers the model, and how it runs a call on a Session.
pub trait ToolSet: Send {
    /// The definitions offered to the model, in the order they are sent.
    fn definitions(&self) -> Vec<Value>;

    /// Runs the tool `name` with the Session's context, or `None` when this set has no such tool.
    fn execute<'a>(&'a mut self, session: &'a mut Session, name: &'a str, args: &'a Value) -> Option<ToolFuture<'a>>;

    /// Gets ready before the Turn's first Provider call (MCP servers started and their tools
    /// listed); `None` when there is nothing to wait for.
    fn prepare(&mut self) -> Option<Prepare<'_>> {
        None
    }

    /// Records what happened in the background since the last look, without waiting. The Turn
    /// calls it when it starts and before each Provider call.
    fn catch_up(&mut self, session: &mut Session) -> Result<(), LogError> {
        let _ = session;
        Ok(())
    }
}

/// The tool sets of one Session, in registration order.
#[derive(Default)]
pub struct Toolbox {
    sets: Vec<Box<dyn ToolSet>>,
}

impl std::fmt::Debug for Toolbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolbox").field("n_sets", &self.sets.len()).finish()
    }
}

impl Toolbox {
    /// The workspace tools alone, as every Session has them.
    pub fn workspace() -> Toolbox {
        Toolbox::default().with(workspace::Workspace)
    }

    /// This toolbox with `set` registered after the others.
    #[must_use]
    pub fn with(mut self, set: impl ToolSet + 'static) -> Toolbox {
        self.sets.push(Box::new(set));
        self
    }

    /// Every definition, set by set: the `tools` of a Provider request.
    pub fn definitions(&self) -> Value {
        Value::Array(self.sets.iter().flat_map(|set| set.definitions()).collect())
    }

    /// Runs a call with the first set that has the tool; an unknown name is a failed result,
    /// and so are arguments that are not a JSON object, which no tool runs
    /// (ACP-INVALID-ARGUMENTS: the model hears why, in its next request).
    pub async fn execute(&mut self, session: &mut Session, name: &str, args: &Value) -> Result<Data, LogError> {
        if let Value::String(text) = args {
            return Ok(failed(
                "invalid_arguments",
                &format!("the arguments of `{name}` are not a JSON object: {text}"),
            ));
        }
        for set in &mut self.sets {
            if let Some(call) = set.execute(session, name, args) {
                return call.await;
            }
        }
        Ok(failed("unknown_tool", &format!("no tool named `{name}`")))
    }

    /// Lets every set get ready (see [`ToolSet::prepare`]).
    pub async fn prepare(&mut self) {
        for set in &mut self.sets {
            if let Some(ready) = set.prepare() {
                ready.await;
            }
        }
    }

    /// Lets every set record its background work (see [`ToolSet::catch_up`]).
    pub fn catch_up(&mut self, session: &mut Session) -> Result<(), LogError> {
        self.sets.iter_mut().try_for_each(|set| set.catch_up(session))
    }
}

/// A failed `tool_result`: `ok: false` and `error{kind, message}`.
pub fn failed(kind: &str, message: &str) -> Data {
    object(json!({"ok": false, "error": {"kind": kind, "message": message}}))
}
