//! The tools of the MCP servers a client names in `session/new`, `session/load` or
//! `session/resume` (ACP: every Agent must support stdio MCP servers, `McpServerStdio`). Each
//! server is started when the Session's first Turn starts, its tools listed and offered to the
//! model as `mcp__<server>__<tool>` (the convention codex and Claude Code use), and each call
//! sent to it with a timeout; a call the Turn abandons (a cancel) is cancelled at the server.
//! Every outcome is the call's `tool_result`: a result, or `ok: false` for an `isError` result
//! (`tool_error`), a JSON-RPC error (`mcp_error`), a server that went away
//! (`mcp_server_exited`) or no answer in time (`timeout`).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{ToolFuture, ToolSet, failed};
use crate::event::{Data, object};
use crate::session::Session;

/// How long a call may run before the agent gives up on it and cancels it at the server.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A stdio MCP server as the client names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name, the middle of its tools' names.
    pub name: String,
    /// The program to start.
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it.
    pub env: Vec<(String, String)>,
}

/// A connection to a server: the two ends of its stdio, and the process behind them, if any
/// (killed when the connection is dropped).
pub struct Pipe {
    /// What the server writes.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// What the server reads.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// The server's process.
    pub child: Option<tokio::process::Child>,
}

/// How the agent reaches a server: by default it starts the command ([`Processes`]); an
/// embedder that runs the agent in process may connect servers its own way.
pub trait McpConnector: Send + Sync + fmt::Debug {
    /// Starts or reaches `server`, in `cwd`.
    fn connect(&self, server: &McpServer, cwd: &std::path::Path) -> std::io::Result<Pipe>;
}

/// Starts each server's command as a process with piped stdio.
#[derive(Debug, Clone, Copy, Default)]
pub struct Processes;

impl McpConnector for Processes {
    fn connect(&self, server: &McpServer, cwd: &std::path::Path) -> std::io::Result<Pipe> {
        let mut child = tokio::process::Command::new(&server.command)
            .args(&server.args)
            .envs(server.env.iter().map(|(name, value)| (name, value)))
            .current_dir(cwd)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(writer), Some(reader)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the server's pipes were not set up"));
        };
        Ok(Pipe { reader: Box::new(reader), writer: Box::new(writer), child: Some(child) })
    }
}

/// The MCP tools of one Session.
pub struct McpTools {
    servers: Vec<McpServer>,
    cwd: PathBuf,
    connector: Arc<dyn McpConnector>,
    /// Set once the first Turn started them.
    connected: Option<Vec<Connected>>,
}

struct Connected {
    name: String,
    service: RunningService<RoleClient, ()>,
    tools: Vec<Tool>,
    _child: Option<tokio::process::Child>,
}

impl McpTools {
    /// The tools of `servers`, reached through `connector` from `cwd`.
    pub fn new(servers: Vec<McpServer>, cwd: PathBuf, connector: Arc<dyn McpConnector>) -> McpTools {
        McpTools { servers, cwd, connector, connected: None }
    }

    async fn connect(&self, server: &McpServer) -> Option<Connected> {
        let pipe = self.connector.connect(server, &self.cwd).ok()?;
        let service = ().serve((pipe.reader, pipe.writer)).await.ok()?;
        let tools = service.list_all_tools().await.ok()?;
        Some(Connected { name: sanitized(&server.name), service, tools, _child: pipe.child })
    }

    /// The server and tool a model's tool name calls.
    fn lookup(&self, name: &str) -> Option<(&Connected, &Tool)> {
        let rest = name.strip_prefix("mcp__")?;
        self.connected.iter().flatten().find_map(|server| {
            let tool = rest.strip_prefix(server.name.as_str())?.strip_prefix("__")?;
            Some((server, server.tools.iter().find(|offered| offered.name == tool)?))
        })
    }
}

/// A name as a tool name may carry it: anything but letters, digits, `_` and `-` becomes `_`.
fn sanitized(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

impl ToolSet for McpTools {
    fn definitions(&self) -> Vec<Value> {
        let tools =
            self.connected.iter().flatten().flat_map(|server| server.tools.iter().map(move |tool| (server, tool)));
        tools
            .map(|(server, tool)| {
                json!({
                    "type": "function",
                    "name": format!("mcp__{}__{}", server.name, tool.name),
                    "description": tool.description.as_deref().unwrap_or_default(),
                    "parameters": Value::Object((*tool.input_schema).clone()),
                })
            })
            .collect()
    }

    fn prepare(&mut self) -> Option<super::Prepare<'_>> {
        if self.connected.is_some() {
            return None;
        }
        Some(Box::pin(async move {
            let mut connected = Vec::new();
            for server in &self.servers {
                // A server that cannot start offers no tools; the model is never told of them.
                connected.extend(self.connect(server).await);
            }
            self.connected = Some(connected);
        }))
    }

    fn execute<'a>(&'a mut self, _session: &'a mut Session, name: &'a str, args: &'a Value) -> Option<ToolFuture<'a>> {
        let (server, tool) = self.lookup(name)?;
        let mut params = CallToolRequestParams::new(tool.name.clone());
        if let Value::Object(arguments) = args {
            params = params.with_arguments(arguments.clone());
        }
        let peer = server.service.peer().clone();
        // Dropping the call (a cancel, the timeout) sends the server `notifications/cancelled`.
        Some(Box::pin(async move {
            Ok(match tokio::time::timeout(CALL_TIMEOUT, peer.call_tool(params)).await {
                Ok(answer) => outcome(answer),
                Err(_elapsed) => failed("timeout", &format!("`{name}` did not answer within {CALL_TIMEOUT:?}")),
            })
        }))
    }
}

/// A call's `tool_result` from what the server answered.
fn outcome(answer: Result<CallToolResult, ServiceError>) -> Data {
    match answer {
        Ok(result) => {
            let text: Vec<&str> =
                result.content.iter().filter_map(|block| block.as_text()).map(|text| text.text.as_str()).collect();
            let text = text.join("\n");
            match result.is_error {
                Some(true) => failed("tool_error", &text),
                _ => object(json!({"ok": true, "output": text})),
            }
        }
        Err(ServiceError::McpError(error)) => failed("mcp_error", &error.message),
        Err(error) => failed("mcp_server_exited", &error.to_string()),
    }
}
