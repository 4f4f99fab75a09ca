//! The reference driver: the reference runtime's ACP agent in process, on tokio's paused clock.
//!
//! The client talks to `acp::serve` over an in-memory duplex (the same JSON-RPC code path as
//! the `gauntlet-agent` binary). Provider bytes travel through [`InProcess`], which hands each
//! request to the mock and streams back the very bytes its HTTP server would send, so a
//! ten-minute stall costs nothing and every run stamps the same ids and times. [`Wire::Http`]
//! runs the same scenario over a real loopback socket instead, on real time, to prove the two
//! paths agree.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use gauntlet_agent::SessionConfig;
use gauntlet_agent::acp::{self, AgentConfig};
use gauntlet_agent::ids::{Clock, Sequential};
use gauntlet_agent::provider::transport::{Body, HttpRequest, HttpResponse, SendFuture, TransportError};
use gauntlet_agent::provider::{HttpTransport, ProviderConfig, Transport};
use gauntlet_agent::tools::mcp::{McpConnector, McpServer, Pipe, Processes};
use gauntlet_mock_provider::in_process::{Chunk, Playback};
use gauntlet_mock_provider::mcp;
use gauntlet_mock_provider::provider::{MockProvider, MockRequest};
use gauntlet_mock_provider::server;
use gauntlet_mock_provider::tool_names::McpCalls;
use gauntlet_mock_provider::tool_server::ToolServer;

use crate::driver::acp_client::{Permission, Settings};
use crate::driver::conversation::{self, Connection, PRELOADED_SESSION_ID};
use crate::driver::{Driver, IN_PROCESS_DEADLINE, assemble, guarded, prepare_workspace};
use gauntlet_judge::capture::Capture;
use gauntlet_judge::scenario::Scenario;
use gauntlet_judge::tool_map::MappedCall;

/// The context window the reference agent reports in `usage_update`.
pub const CONTEXT_WINDOW: u64 = 400_000;

/// How Provider bytes travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// In process, on the paused clock (the default: deterministic and instant).
    InProcess,
    /// Real HTTP over loopback, on real time.
    Http,
}

/// Runs the reference runtime in process.
#[derive(Debug, Clone, Copy)]
pub struct Reference {
    /// How Provider bytes travel.
    pub wire: Wire,
    /// Real time a run may take before it is given up as hung (see [`guarded`]).
    pub deadline: Duration,
}

impl Default for Reference {
    fn default() -> Self {
        Reference { wire: Wire::InProcess, deadline: IN_PROCESS_DEADLINE }
    }
}

impl Driver for Reference {
    fn name(&self) -> &str {
        "reference"
    }

    /// Runs on a thread of its own with a deadline, so a runtime that panics or hangs is an
    /// `error` of this scenario, not of the whole run.
    fn drive(&self, scenario: &Scenario) -> Capture {
        let (wire, scenario) = (self.wire, scenario.clone());
        guarded(self.deadline, move || {
            let runtime = match wire {
                Wire::InProcess => {
                    tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build()
                }
                Wire::Http => tokio::runtime::Builder::new_current_thread().enable_all().build(),
            };
            match runtime {
                Ok(runtime) => runtime.block_on(drive(&scenario, wire)),
                Err(error) => {
                    Capture { faults: vec![format!("cannot start a tokio runtime: {error}")], ..Capture::default() }
                }
            }
        })
    }
}

async fn drive(scenario: &Scenario, wire: Wire) -> Capture {
    let mut capture = Capture::default();
    let workspace = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(error) => {
            capture.faults.push(format!("cannot create a workspace: {error}"));
            return capture;
        }
    };
    let dialect = scenario.config.dialect;
    let script = scenario.script();
    // A scenario that scripts what a tool answers plays it through gauntlet's MCP server,
    // served in process on the paused clock.
    let tools = scenario.serves_mcp().then(|| Arc::new(ToolServer::new(&script, workspace.path(), 1.0)));
    let mut mock = MockProvider::new(script).with_dialect(dialect);
    if tools.is_some() {
        mock = mock.with_mcp_tool_names(McpCalls::Scripted);
    }
    let mock = Arc::new(mock);
    let (transport, base_url, _server) = match provider_transport(&mock, wire).await {
        Ok(provider) => provider,
        Err(fault) => {
            capture.faults.push(fault);
            return capture;
        }
    };
    let preload_path = match SessionConfig::new(PRELOADED_SESSION_ID, workspace.path()).log_path() {
        Ok(path) => path,
        Err(error) => {
            capture.faults.push(error.to_string());
            return capture;
        }
    };
    if let Err(error) = prepare_workspace(scenario, workspace.path(), Some(&preload_path)) {
        capture.faults.push(error.to_string());
        return capture;
    }
    let config = agent_config(scenario, base_url, transport, tools.as_ref());
    let mut launch = || launch_in_process(&config);
    let patience = Duration::from_millis(scenario.config.turn_timeout_ms.saturating_add(60_000));
    let mcp_servers = match tools {
        // Connected in process: the command is never run.
        Some(_) => conversation::shown_mcp_servers(),
        None => serde_json::json!([]),
    };
    let settings = Settings { patience, permission: Permission::default(), mcp_servers };
    let conversation = conversation::converse(scenario, workspace.path(), &mut launch, &settings, true, &mock).await;
    let log_path =
        conversation.session_id.as_ref().map(|session_id| SessionConfig::new(session_id, workspace.path()).log_path());
    let fault = match &log_path {
        Some(Err(error)) => Some(error.to_string()),
        _ => None,
    };
    let mut capture = assemble(conversation, log_path.and_then(Result::ok).as_deref(), &mock);
    capture.acp_version = scenario.config.acp;
    capture.faults.extend(fault);
    if let Some(tools) = &tools {
        capture.tool_calls = tools.journal();
        capture.mapped_calls = mock.report().renamed.into_iter().filter_map(MappedCall::served).collect();
    }
    capture
}

/// How the agent reaches the mock: through [`InProcess`], or over loopback HTTP to the mock's
/// server (kept alive by the handle returned with it); and the base URL it is told.
async fn provider_transport(
    mock: &Arc<MockProvider>,
    wire: Wire,
) -> Result<(Arc<dyn Transport>, String, Option<server::ServerHandle>), String> {
    match wire {
        Wire::InProcess => Ok((Arc::new(InProcess(mock.clone())), "http://mock.invalid".to_owned(), None)),
        Wire::Http => match server::serve(mock.clone(), SocketAddr::from(([127, 0, 0, 1], 0))).await {
            Ok(handle) => {
                let url = format!("http://{}", handle.local_addr());
                Ok((Arc::new(HttpTransport::default()), url, Some(handle)))
            }
            Err(error) => Err(format!("cannot start the mock provider: {error}")),
        },
    }
}

/// The reference agent's configuration for `scenario`, its Provider at `base_url`; `tools` is
/// gauntlet's MCP server when the scenario scripts one.
fn agent_config(
    scenario: &Scenario,
    base_url: String,
    transport: Arc<dyn Transport>,
    tools: Option<&Arc<ToolServer>>,
) -> AgentConfig {
    let dialect = scenario.config.dialect;
    AgentConfig {
        provider: ProviderConfig {
            base_url,
            dialect: runtime_dialect(dialect),
            max_retries: scenario.config.max_retries,
            stream_idle_timeout: Duration::from_millis(scenario.config.stream_idle_timeout_ms),
            ..ProviderConfig::default()
        },
        transport,
        model: scenario.config.model.clone(),
        models: Vec::new(), // the scenario's model alone, as the binary its profile starts lists
        turn_timeout: Duration::from_millis(scenario.config.turn_timeout_ms),
        context_window: Some(CONTEXT_WINDOW),
        compact_at_tokens: (scenario.config.compact_at_tokens > 0).then_some(scenario.config.compact_at_tokens),
        // One id source for every agent of the run, so a reloaded Session continues its ids.
        ids: Arc::new(Sequential::default()),
        clock: Clock::virtual_from_now(),
        // The Turn corpus's requests offer the workspace tools only; scenarios that delegate
        // get the delegation tools too, and scenarios that keep a to-do list the `plan` tool.
        delegation: scenario.delegates(),
        delegate: scenario.calls("delegate"),
        max_subagents: scenario.config.max_subagents,
        plans: scenario.plans(),
        mcp: match tools {
            Some(tools) => Arc::new(InProcessMcp(tools.clone())),
            None => Arc::new(Processes),
        },
    }
}

/// Starts the reference agent on an in-memory duplex, as the client's connection to it.
fn launch_in_process(config: &AgentConfig) -> Result<Connection<InProcessStopError>, Infallible> {
    let (client, agent) = tokio::io::duplex(64 * 1024);
    let (agent_reader, agent_writer) = tokio::io::split(agent);
    let (client_reader, client_writer) = tokio::io::split(client);
    let task = tokio::spawn(acp::serve(agent_reader, agent_writer, config.clone()));
    Ok(Connection {
        reader: Box::new(client_reader),
        writer: Box::new(client_writer),
        ended: Box::pin(async move {
            match task.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(source)) => Err(InProcessStopError::Serve { source }),
                Err(source) => Err(InProcessStopError::Task { source }),
            }
        }),
    })
}

/// gauntlet's MCP server for an agent in process: its relay on an in-memory pipe, asking the
/// scenario's tool server directly, on the same (paused) clock.
#[derive(Debug)]
struct InProcessMcp(Arc<ToolServer>);

impl McpConnector for InProcessMcp {
    fn connect(&self, _server: &McpServer, _cwd: &std::path::Path) -> std::io::Result<Pipe> {
        let (agent, server) = tokio::io::duplex(64 * 1024);
        tokio::spawn(mcp::serve(self.0.clone(), tokio::io::split(server)));
        let (reader, writer) = tokio::io::split(agent);
        Ok(Pipe { reader: Box::new(reader), writer: Box::new(writer), child: None })
    }
}

/// Why the in-process agent did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum InProcessStopError {
    /// `acp::serve` returned an error.
    #[error("the agent stopped with an error: {source}")]
    Serve {
        /// Its error.
        source: acp::ConnectionError,
    },
    /// Its task panicked or was cancelled.
    #[error("the agent task failed: {source}")]
    Task {
        /// Why.
        source: tokio::task::JoinError,
    },
}

/// The runtime's name for a mock dialect: the one table between the two enums (the runtime
/// and the mock share no types, so each checks the other's wire). The match is exhaustive over
/// the mock's dialects, and a test holds that it is a bijection that keeps every key.
pub fn runtime_dialect(dialect: gauntlet_mock_provider::Dialect) -> gauntlet_agent::provider::Dialect {
    use gauntlet_agent::provider::Dialect as Runtime;
    use gauntlet_mock_provider::Dialect as Mock;
    match dialect {
        Mock::Responses => Runtime::Responses,
        Mock::ChatCompletions => Runtime::ChatCompletions,
        Mock::AnthropicMessages => Runtime::AnthropicMessages,
        Mock::Gemini => Runtime::Gemini,
    }
}

/// A [`Transport`] that hands requests straight to a [`MockProvider`]: no socket, same bytes.
struct InProcess(Arc<MockProvider>);

impl Transport for InProcess {
    fn send(&self, request: HttpRequest) -> SendFuture<'_> {
        Box::pin(async move {
            // The path without its query, as the HTTP server sees it.
            let path = request
                .url
                .split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|idx| rest[idx..].to_owned()))
                .map(|path| path.split('?').next().unwrap_or_default().to_owned());
            let reply = self.0.respond(MockRequest {
                method: "POST".to_owned(),
                path: path.unwrap_or_else(|| "/".to_owned()),
                headers: request.headers,
                body: request.body,
            });
            let (status, headers) = (reply.status, reply.headers.clone());
            let (sender, receiver) = tokio::sync::mpsc::channel(1);
            let mut playback = Playback::start(reply);
            tokio::spawn(async move {
                loop {
                    // The runtime dropping the body closes the request at once, as a socket
                    // would: dropping the playback notes it (ACP-CANCEL-CLOSES-REQUEST).
                    let chunk = tokio::select! {
                        chunk = playback.recv() => chunk,
                        () = sender.closed() => break,
                    };
                    let Some(chunk) = chunk else { break };
                    let item = match chunk {
                        Chunk::Data(bytes) => Ok(bytes),
                        Chunk::Abort => Err(TransportError("connection reset by the provider".to_owned())),
                    };
                    if sender.send(item).await.is_err() {
                        break;
                    }
                }
            });
            Ok(HttpResponse { status, headers, body: Body::Channel(receiver) })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dialect_key_maps_to_the_same_key_and_back() {
        use gauntlet_agent::provider::Dialect as Runtime;
        use gauntlet_mock_provider::Dialect as Mock;
        let mapped: Vec<Runtime> = Mock::ALL.into_iter().map(runtime_dialect).collect();
        assert_eq!(mapped, Runtime::ALL, "every runtime dialect is the image of exactly one mock dialect");
        for mock in Mock::ALL {
            let runtime = runtime_dialect(mock);
            assert_eq!(runtime.key(), mock.key());
            assert_eq!(runtime.key().parse::<Runtime>(), Ok(runtime));
            let back: Mock = serde_json::from_value(serde_json::json!(runtime.key())).unwrap();
            assert_eq!(back, mock);
        }
    }
    use crate::run::{Plan, scenario_names};

    #[test]
    fn real_http_and_in_process_carry_the_same_conversation() {
        let plan = Plan::repository();
        // Scenarios that pause or wait on retry-after would cost real seconds over HTTP.
        let quick = [
            "turn/clean-completion",
            "turn/tool-call-then-answer",
            "turn/partial-then-error",
            "turn/disconnect-after-partial",
            "turn/eof-without-completed",
            "turn/malformed-frame",
            "turn/reasoning-model-switch",
        ];
        for (name, path) in scenario_names(&plan).into_iter().filter(|(name, _)| quick.contains(&name.as_str())) {
            let scenario = gauntlet_judge::scenario::load(&path).unwrap();
            let in_process = Reference { wire: Wire::InProcess, ..Reference::default() }.drive(&scenario);
            let http = Reference { wire: Wire::Http, ..Reference::default() }.drive(&scenario);
            assert!(http.faults.is_empty(), "{name}: {:?}", http.faults);
            if let Err(difference) = http.same_conversation(&in_process) {
                panic!("{name}: {difference}\nhttp: {http:#?}\nin process: {in_process:#?}");
            }
        }
    }

    #[test]
    fn concurrent_children_are_routed_by_session_over_real_http_too() {
        let plan = Plan::repository();
        let name = "workflow/partial-failure-held";
        let scenario = gauntlet_judge::scenario::load(&plan.scenarios().join(format!("{name}.toml"))).unwrap();
        let capture = Reference { wire: Wire::Http, ..Reference::default() }.drive(&scenario);
        assert!(capture.faults.is_empty(), "{:?}", capture.faults);
        assert!(capture.unmatched.is_empty() && capture.unconsumed.is_empty(), "{capture:#?}");
        let children: Vec<&str> = capture.children.keys().map(String::as_str).collect();
        assert_eq!(children, ["wf_1-after_ready", "wf_1-broken", "wf_1-ready"]);
        // Invariants and expectations hold on real time; only the golden is left out.
        let verdict = gauntlet_judge::judge::judge(name, &scenario, &capture, Vec::new());
        assert_eq!(verdict.kind, gauntlet_judge::verdict::VerdictKind::Identical, "{:#?}", verdict.findings);
    }
}
