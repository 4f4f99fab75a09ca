//! gauntlet's MCP server: what an agent starts from the `mcpServers` of `session/new` (ACP
//! asks every agent to support stdio MCP servers). It speaks MCP on stdio through the official
//! Rust SDK and relays each call to the scenario's [`ToolServer`](crate::tool_server) over
//! loopback HTTP, then does what it is told: answer, answer with an error, exit mid-call, or
//! never answer. It reports how each call ended (answered, or cancelled by the client), so the
//! journal holds what the tool really returned.

use std::borrow::Cow;
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

use crate::tool_server::{Answer, CallEnd, ToolCall};

/// The relay to the tool server at `url` (`http://127.0.0.1:PORT`).
#[derive(Clone)]
struct Relay {
    url: Arc<str>,
    client: Client<HttpConnector, Full<Bytes>>,
}

impl Relay {
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

    async fn end(&self, call: usize, end: CallEnd) {
        // Best effort: a tool server gone means the scenario is over.
        let _ = self.exchange("POST", "/end", Some(json!({"call": call, "end": end}))).await;
    }
}

fn internal(error: anyhow::Error) -> ErrorData {
    ErrorData::internal_error(format!("{error:#}"), None)
}

impl ServerHandler for Relay {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listed = self.exchange("GET", "/tools", None).await.map_err(internal)?;
        let tools: Vec<Tool> = serde_json::from_value(listed["tools"].clone())
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map(Value::Object).unwrap_or_else(|| json!({}));
        let asked = json!({"tool": request.name, "args": args});
        let decided = self.exchange("POST", "/call", Some(asked)).await.map_err(internal)?;
        let call: ToolCall = serde_json::from_value(decided).map_err(|error| internal(error.into()))?;
        let cancelled = || ErrorData::internal_error(Cow::Borrowed("cancelled"), None);
        let (after_ms, answer) = match call.answer {
            // The tool side dies with the call in flight: the client sees its pipe close.
            Answer::Crash => std::process::exit(1),
            Answer::Hang => {
                context.ct.cancelled().await;
                self.end(call.call, CallEnd::Cancelled).await;
                return Err(cancelled());
            }
            Answer::RpcError { message } => (0, Err(ErrorData::internal_error(message, None))),
            Answer::Result { text, is_error, after_ms } => {
                let content = vec![ContentBlock::text(text)];
                let result = if is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
                (after_ms, Ok(result.into()))
            }
        };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(after_ms)) => {
                self.end(call.call, CallEnd::Answered).await;
                answer
            }
            () = context.ct.cancelled() => {
                self.end(call.call, CallEnd::Cancelled).await;
                Err(cancelled())
            }
        }
    }
}

/// Serves MCP on stdin and stdout, relaying to the tool server at `url`, until the client
/// closes the connection.
pub async fn serve_stdio(url: &str) -> anyhow::Result<()> {
    let relay =
        Relay { url: Arc::from(url.trim_end_matches('/')), client: Client::builder(TokioExecutor::new()).build_http() };
    let service = relay.serve(rmcp::transport::stdio()).await.context("the MCP handshake failed")?;
    service.waiting().await.context("the MCP connection failed")?;
    Ok(())
}
