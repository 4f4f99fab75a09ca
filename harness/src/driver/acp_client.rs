//! A recording ACP client: JSON-RPC 2.0, one object per line, over any byte stream.
//!
//! Every message in either direction is kept, in order, as the transcript the judge reads. It
//! is deliberately not built on an SDK: it must send malformed lines on purpose and keep
//! whatever the agent sends, including lines that are not JSON, as evidence.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

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
}

/// A client over the agent's output (`reader`) and input (`writer`).
#[derive(Debug)]
pub struct AcpClient<R, W> {
    reader: BufReader<R>,
    /// `None` once closed: dropping it is what closes a pipe.
    writer: Option<W>,
    next_id: i64,
    /// Every message, `{"from": "client" | "agent", "message": ...}` or `"raw": ...` for a line
    /// that was not JSON.
    pub transcript: Vec<Value>,
    /// How long to wait for any one message.
    pub patience: Duration,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> AcpClient<R, W> {
    /// A client that waits up to `patience` for each message.
    pub fn new(reader: R, writer: W, patience: Duration) -> Self {
        AcpClient { reader: BufReader::new(reader), writer: Some(writer), next_id: 0, transcript: Vec::new(), patience }
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

    /// The next message from the agent.
    pub async fn next(&mut self, waiting_for: &str) -> Result<Value, ClientError> {
        let mut line = Vec::new();
        let read = tokio::time::timeout(self.patience, self.reader.read_until(b'\n', &mut line)).await;
        let n = match read {
            Err(_) => {
                let timeout_ms = u64::try_from(self.patience.as_millis()).unwrap_or(u64::MAX);
                return Err(ClientError::Timeout { waiting_for: waiting_for.to_owned(), timeout_ms });
            }
            Ok(read) => read?,
        };
        if n == 0 {
            return Err(ClientError::Closed { waiting_for: waiting_for.to_owned() });
        }
        match serde_json::from_slice::<Value>(&line) {
            Ok(message) if message.is_object() => {
                self.transcript.push(json!({"from": FROM_AGENT, "message": message}));
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

    /// Reads whatever the agent still writes until it closes its output (bounded by patience).
    pub async fn drain(&mut self) {
        while self.next("the agent to finish").await.is_ok() {}
    }
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
