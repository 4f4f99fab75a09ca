//! gauntlet's MCP server: what an agent starts from the `mcpServers` of `session/new` (ACP asks
//! every agent to support stdio MCP servers). It speaks MCP through the official Rust SDK and
//! asks the scenario's [`ToolServer`] what each call answers, then does it: answer, answer with
//! an error, crash mid-call, or never answer. It reports how each call ended (answered, or
//! cancelled by the client), so the journal holds what the tool really returned.
//!
//! The tool server is reached over loopback HTTP by `gauntlet mcp` ([`serve_stdio`], a process
//! the agent starts), or directly when the agent runs in process ([`serve`] on a pipe).

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Notify;

use crate::tool_server::{Answer, CallEnd, ToolCall, ToolServer};

/// Where the MCP server asks what each call answers.
pub trait Backend: Send + Sync + 'static {
    /// The tools, as `tools/list` gives them.
    fn tools(&self) -> impl Future<Output = anyhow::Result<Value>> + Send;
    /// The answer to one call, journaled.
    fn call(&self, tool: &str, args: Value) -> impl Future<Output = anyhow::Result<ToolCall>> + Send;
    /// Records how call `call` ended.
    fn end(&self, call: usize, end: CallEnd) -> impl Future<Output = ()> + Send;
}

impl Backend for Arc<ToolServer> {
    async fn tools(&self) -> anyhow::Result<Value> {
        Ok(ToolServer::tools())
    }

    async fn call(&self, tool: &str, args: Value) -> anyhow::Result<ToolCall> {
        Ok(ToolServer::call(self, tool, &args))
    }

    async fn end(&self, call: usize, end: CallEnd) {
        ToolServer::end(self, call, end);
    }
}

/// A tool server on loopback HTTP (`http://127.0.0.1:PORT`).
struct Http {
    url: String,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Http {
    async fn exchange(&self, method: &str, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let request = hyper::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .body(Full::new(body.map(|body| Bytes::from(body.to_string())).unwrap_or_default()))?;
        let response = self.client.request(request).await.context("the tool server is unreachable")?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        anyhow::ensure!(status.is_success(), "the tool server answered {status}: {}", String::from_utf8_lossy(&bytes));
        Ok(serde_json::from_slice(&bytes)?)
    }
}

impl Backend for Http {
    async fn tools(&self) -> anyhow::Result<Value> {
        self.exchange("GET", "/tools", None).await
    }

    async fn call(&self, tool: &str, args: Value) -> anyhow::Result<ToolCall> {
        let decided = self.exchange("POST", "/call", Some(json!({"tool": tool, "args": args}))).await?;
        Ok(serde_json::from_value(decided)?)
    }

    async fn end(&self, call: usize, end: CallEnd) {
        // Best effort: a tool server gone means the scenario is over.
        let _ = self.exchange("POST", "/end", Some(json!({"call": call, "end": end}))).await;
    }
}

/// The MCP side: each call asked of the backend and done as it says.
struct Relay<B> {
    backend: Arc<B>,
    /// Told when a call's answer is a crash: the server stops with the call in flight.
    crashed: Arc<Notify>,
}

fn internal(error: impl std::fmt::Display) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

impl<B: Backend> ServerHandler for Relay<B> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listed = self.backend.tools().await.map_err(|error| internal(format!("{error:#}")))?;
        let tools: Vec<Tool> = serde_json::from_value(listed["tools"].clone()).map_err(internal)?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| json!({}));
        let call = self.backend.call(&request.name, args).await.map_err(|error| internal(format!("{error:#}")))?;
        let cancelled = || ErrorData::internal_error(Cow::Borrowed("cancelled"), None);
        let (wait_ms, answer) = match call.answer {
            Answer::Crash => {
                self.crashed.notify_one();
                return std::future::pending().await;
            }
            Answer::Hang => {
                context.ct.cancelled().await;
                self.backend.end(call.call, CallEnd::Cancelled).await;
                return Err(cancelled());
            }
            Answer::RpcError { message } => (0, Err(ErrorData::internal_error(message, None))),
            Answer::Result { text, is_error, .. } => {
                let content = vec![ContentBlock::text(text)];
                let result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
                (call.wait_ms, Ok(result.into()))
            }
        };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(wait_ms)) => {
                self.backend.end(call.call, CallEnd::Answered).await;
                answer
            }
            () = context.ct.cancelled() => {
                self.backend.end(call.call, CallEnd::Cancelled).await;
                Err(cancelled())
            }
        }
    }
}

/// How a served connection ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// The client closed it.
    Closed,
    /// A call's scripted answer was a crash: the server stopped with it in flight.
    Crashed,
}

/// Serves MCP on `transport` (a pipe's two ends), asking `backend`, until the client closes
/// it or a scripted crash stops it.
pub async fn serve<B, R, W>(backend: B, transport: (R, W)) -> anyhow::Result<Ended>
where
    B: Backend,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let crashed = Arc::new(Notify::new());
    let relay = Relay { backend: Arc::new(backend), crashed: crashed.clone() };
    let service = relay.serve(transport).await.context("the MCP handshake failed")?;
    let stop = service.cancellation_token();
    tokio::select! {
        waited = service.waiting() => {
            waited.context("the MCP connection failed")?;
            Ok(Ended::Closed)
        }
        () = crashed.notified() => {
            stop.cancel();
            Ok(Ended::Crashed)
        }
    }
}

/// Serves MCP on stdin and stdout, asking the tool server at `url`; a scripted crash ends the
/// process with status 1, as a crashed server would.
pub async fn serve_stdio(url: &str) -> anyhow::Result<()> {
    let http =
        Http { url: url.trim_end_matches('/').to_owned(), client: Client::builder(TokioExecutor::new()).build_http() };
    if serve(http, rmcp::transport::stdio()).await? == Ended::Crashed {
        std::process::exit(1);
    }
    Ok(())
}
