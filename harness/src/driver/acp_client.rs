//! A recording ACP client: JSON-RPC 2.0, one object per line, over any byte stream.
//!
//! Every message in either direction is kept, in order, as the transcript the judge reads. It
//! is deliberately not built on an SDK: it must send malformed lines on purpose and keep
//! whatever the agent sends, including lines that are not JSON, as evidence.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// Which side sent a transcript entry.
pub const FROM_CLIENT: &str = "client";
/// Which side sent a transcript entry.
pub const FROM_AGENT: &str = "agent";

/// Why the conversation could not go on.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The pipe to or from the agent failed.
    #[error("talking to the agent: {0}")]
    Io(#[from] std::io::Error),
    /// The agent closed its output.
    #[error("the agent closed its output while the client waited for {waiting_for}")]
    Closed {
        /// What the client was waiting for.
        waiting_for: String,
    },
    /// Nothing arrived in time.
    #[error("no message from the agent within {timeout_ms} ms while waiting for {waiting_for}")]
    Timeout {
        /// What the client was waiting for.
        waiting_for: String,
        /// The deadline.
        timeout_ms: u64,
    },
    /// The agent wrote a line that is not a JSON object.
    #[error("the agent wrote a line that is not JSON-RPC: {line}")]
    NotJson {
        /// The line, cut to 200 characters.
        line: String,
    },
    /// The agent wrote a line longer than any ACP message should be.
    #[error("the agent wrote a line of more than {limit} bytes (flooding), starting: {start}")]
    Flood {
        /// The limit.
        limit: usize,
        /// The line's first 200 bytes.
        start: String,
    },
}

/// The longest line the client reads (a file's content in one update fits well within it).
pub const MAX_LINE: usize = 8 * 1024 * 1024;
/// The most messages read after the client closed the agent's input.
const DRAIN_LIMIT: usize = 10_000;

/// A client over the agent's output (`reader`) and input (`writer`).
#[derive(Debug)]
pub struct AcpClient<R, W> {
    reader: BufReader<R>,
    /// `None` once closed: dropping it is what closes a pipe.
    writer: Option<W>,
    next_id: i64,
    /// The start of a line whose end has not arrived yet (a wait that timed out keeps it).
    partial: Vec<u8>,
    /// Every message, `{"from": "client" | "agent", "message": ...}` or `"raw": ...` for a line
    /// that was not JSON.
    pub transcript: Vec<Value>,
    /// How long to wait for any one message.
    pub patience: Duration,
    /// How permission requests are answered.
    pub permission: Permission,
    /// The agent declared `promptCapabilities.image` at `initialize`: only then may a prompt
    /// carry an image (ACP "Prompt Capabilities").
    pub accepts_images: bool,
    mcp_servers: Value,
}

/// How the client behaves: how long it waits, and how it answers permission requests.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How long to wait for any one message.
    pub patience: Duration,
    /// How permission requests are answered.
    pub permission: Permission,
    /// The `mcpServers` of every `session/new`, `session/load` and `session/resume`: gauntlet's
    /// MCP server, when the agent is given it, or none.
    pub mcp_servers: Value,
}

/// How the client answers the agent's `session/request_permission`: the first option of this
/// kind (ACP `PermissionOptionKind`), else the first option offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// Allow this once (the scenario's tools run in a scratch workspace).
    #[default]
    AllowOnce,
    /// Allow this and every later request like it.
    AllowAlways,
    /// Refuse this once.
    RejectOnce,
    /// Refuse this and every later request like it.
    RejectAlways,
}

impl Permission {
    /// The ACP option kind.
    pub fn kind(self) -> &'static str {
        match self {
            Permission::AllowOnce => "allow_once",
            Permission::AllowAlways => "allow_always",
            Permission::RejectOnce => "reject_once",
            Permission::RejectAlways => "reject_always",
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> AcpClient<R, W> {
    /// A client with `settings`.
    pub fn new(reader: R, writer: W, settings: Settings) -> Self {
        AcpClient {
            reader: BufReader::new(reader),
            writer: Some(writer),
            next_id: 0,
            partial: Vec::new(),
            transcript: Vec::new(),
            patience: settings.patience,
            permission: settings.permission,
            accepts_images: false,
            mcp_servers: settings.mcp_servers,
        }
    }

    /// The `mcpServers` a Session is opened with.
    pub fn mcp_servers(&self) -> Value {
        self.mcp_servers.clone()
    }

    /// Sends a request and returns its id; the answer is read with [`AcpClient::next`].
    pub async fn send_request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        Ok(id)
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) -> Result<(), ClientError> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params})).await
    }

    /// Sends `session/cancel` for `session_id`; returns when it was sent, on tokio's clock (the
    /// mock Provider's, so the judge can tell how long a request stayed open after it).
    pub async fn cancel(&mut self, session_id: &str) -> Result<tokio::time::Instant, ClientError> {
        self.notify("session/cancel", json!({"sessionId": session_id})).await?;
        Ok(tokio::time::Instant::now())
    }

    /// Sends `$/cancel_request` naming the client's request `request_id` (ACP "Cancellation");
    /// returns when it was sent, on tokio's clock.
    pub async fn cancel_request(&mut self, request_id: &Value) -> Result<tokio::time::Instant, ClientError> {
        let method = agent_client_protocol_schema::v1::PROTOCOL_LEVEL_METHOD_NAMES.cancel_request;
        self.notify(method, json!({"requestId": request_id})).await?;
        Ok(tokio::time::Instant::now())
    }

    async fn send(&mut self, message: Value) -> Result<(), ClientError> {
        let line = format!("{message}\n");
        self.transcript.push(json!({"from": FROM_CLIENT, "message": message}));
        self.write(line.as_bytes()).await
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), ClientError> {
        let writer =
            self.writer.as_mut().ok_or(ClientError::Closed { waiting_for: "nothing: the client closed".into() })?;
        writer.write_all(bytes).await?;
        writer.flush().await?;
        Ok(())
    }

    /// Sends one line exactly as given (for malformed input on purpose).
    pub async fn send_raw(&mut self, line: &str) -> Result<(), ClientError> {
        self.transcript.push(json!({"from": FROM_CLIENT, "raw": line}));
        self.write(format!("{line}\n").as_bytes()).await
    }

    /// The next message from the agent, waiting up to the client's patience.
    pub async fn next(&mut self, waiting_for: &str) -> Result<Value, ClientError> {
        self.next_within(self.patience, waiting_for).await
    }

    /// The next message from the agent, waiting up to `wait`. A wait that times out keeps what
    /// it read of a line, so the conversation can go on after it.
    pub async fn next_within(&mut self, wait: Duration, waiting_for: &str) -> Result<Value, ClientError> {
        let room = (MAX_LINE - self.partial.len().min(MAX_LINE)) as u64;
        let mut limited = (&mut self.reader).take(room);
        let read = tokio::time::timeout(wait, limited.read_until(b'\n', &mut self.partial)).await;
        let n = match read {
            Err(_) => {
                let timeout_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                return Err(ClientError::Timeout { waiting_for: waiting_for.to_owned(), timeout_ms });
            }
            Ok(read) => read?,
        };
        let line = std::mem::take(&mut self.partial);
        if n == 0 && line.is_empty() {
            return Err(ClientError::Closed { waiting_for: waiting_for.to_owned() });
        }
        if line.len() >= MAX_LINE && line.last() != Some(&b'\n') {
            let start: String = String::from_utf8_lossy(&line[..200]).into_owned();
            self.transcript.push(json!({"from": FROM_AGENT, "raw": format!("{start}... ({MAX_LINE}+ bytes, cut)")}));
            return Err(ClientError::Flood { limit: MAX_LINE, start });
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(message) if message.is_object() => {
                self.transcript.push(json!({"from": FROM_AGENT, "message": message}));
                if let (Some(id), Some(method)) = (message.get("id"), message.get("method").and_then(Value::as_str)) {
                    self.send(answer_agent_request(id, method, &message, self.permission)).await?;
                }
                Ok(message)
            }
            _ => {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                self.transcript.push(json!({"from": FROM_AGENT, "raw": text}));
                Err(ClientError::NotJson { line: text.chars().take(200).collect() })
            }
        }
    }

    /// Sends a request and reads until its answer, keeping notifications in the transcript.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.send_request(method, params).await?;
        self.answer_to(&id, method).await
    }

    /// Reads until the answer to request `id`.
    pub async fn answer_to(&mut self, id: &Value, method: &str) -> Result<Value, ClientError> {
        loop {
            let message = self.next(&format!("the answer to {method}")).await?;
            if is_response(&message) && message.get("id") == Some(id) {
                return Ok(message);
            }
        }
    }

    /// Closes the agent's input: the end of the conversation.
    pub async fn close(&mut self) -> Result<(), ClientError> {
        if let Some(mut writer) = self.writer.take() {
            writer.shutdown().await?;
        }
        Ok(())
    }

    /// Reads whatever the agent still writes until it closes its output, bounded by patience
    /// per message and by a message count, so a flooding agent cannot hold the run.
    pub async fn drain(&mut self) {
        for _ in 0..DRAIN_LIMIT {
            if self.next("the agent to finish").await.is_err() {
                break;
            }
        }
    }
}

/// The client's answer to a request from the agent. Permission requests are answered as the
/// profile says (by default granted once: the scenario's tools run in a scratch workspace);
/// the client offers no file system or terminal, so anything else is -32601.
fn answer_agent_request(id: &Value, method: &str, request: &Value, permission: Permission) -> Value {
    if method == "session/request_permission" {
        let options = request.pointer("/params/options").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let wanted = |option: &&Value| option.get("kind").and_then(Value::as_str) == Some(permission.kind());
        let chosen = options.iter().find(wanted).or_else(|| options.first());
        if let Some(option_id) = chosen.and_then(|option| option.get("optionId")) {
            return json!({"jsonrpc": "2.0", "id": id,
                "result": {"outcome": {"outcome": "selected", "optionId": option_id}}});
        }
    }
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("the gauntlet client does not offer {method}")}})
}

/// A JSON-RPC response (it has `result` or `error` and no `method`).
pub fn is_response(message: &Value) -> bool {
    message.get("method").is_none() && (message.get("result").is_some() || message.get("error").is_some())
}

/// The `session/update` payload of a notification, if it is one.
pub fn session_update(message: &Value) -> Option<&Value> {
    (message.get("method").and_then(Value::as_str) == Some("session/update"))
        .then(|| message.pointer("/params/update"))
        .flatten()
}
