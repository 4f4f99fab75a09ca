//! The reference driver: the reference runtime in process, on tokio's paused clock.
//!
//! Provider bytes travel through [`InProcess`], which hands each request to the mock and
//! streams back the very bytes the mock's HTTP server would send, so a ten-minute stall costs
//! nothing and every run stamps the same ids and times. [`Wire::Http`] runs the same scenario
//! over a real loopback socket instead, on real time, to prove the two paths agree.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gauntlet_mock_provider::in_process::{self, Chunk};
use gauntlet_mock_provider::provider::{MockProvider, MockRequest};
use gauntlet_mock_provider::server;
use gauntlet_runtime::ids::{Clock, Sequential};
use gauntlet_runtime::provider::transport::{Body, HttpRequest, HttpResponse, SendFuture, TransportError};
use gauntlet_runtime::provider::{HttpTransport, ProviderConfig, Transport};
use gauntlet_runtime::{Provider, Session, SessionConfig};

use crate::capture::{Capture, Reported, Request, TornTail};
use crate::driver::Driver;
use crate::scenario::Scenario;

/// The id of the root Session in every reference run.
pub const ROOT_SESSION_ID: &str = "root";

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
}

impl Default for Reference {
    fn default() -> Self {
        Reference { wire: Wire::InProcess }
    }
}

impl Driver for Reference {
    fn name(&self) -> &str {
        "reference"
    }

    fn drive(&self, scenario: &Scenario) -> Capture {
        let runtime = match self.wire {
            Wire::InProcess => tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build(),
            Wire::Http => tokio::runtime::Builder::new_current_thread().enable_all().build(),
        };
        match runtime {
            Ok(runtime) => runtime.block_on(drive(scenario, self.wire)),
            Err(error) => {
                Capture { faults: vec![format!("cannot start a tokio runtime: {error}")], ..Capture::default() }
            }
        }
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
    let mock = Arc::new(MockProvider::new(scenario.script()));
    let (transport, base_url, _server): (Arc<dyn Transport>, String, _) = match wire {
        Wire::InProcess => (Arc::new(InProcess(mock.clone())), "http://mock.invalid".to_owned(), None),
        Wire::Http => match server::serve(mock.clone(), SocketAddr::from(([127, 0, 0, 1], 0))).await {
            Ok(handle) => {
                let url = format!("http://{}", handle.local_addr());
                (Arc::new(HttpTransport::default()), url, Some(handle))
            }
            Err(error) => {
                capture.faults.push(format!("cannot start the mock provider: {error}"));
                return capture;
            }
        },
    };
    let provider_config = ProviderConfig {
        base_url,
        max_retries: scenario.config.max_retries,
        stream_idle_timeout: Duration::from_millis(scenario.config.stream_idle_timeout_ms),
        ..ProviderConfig::default()
    };
    let mut config = SessionConfig::new(ROOT_SESSION_ID, workspace.path());
    config.model.clone_from(&scenario.config.model);
    config.turn_timeout = Duration::from_millis(scenario.config.turn_timeout_ms);
    if let Err(error) = prepare(scenario, workspace.path(), &config) {
        capture.faults.push(error);
        return capture;
    }
    let log_path = config.log_path();
    let provider = Provider::new(transport, provider_config);
    match Session::open(config, provider, Arc::new(Sequential::default()), Clock::virtual_from_now()) {
        Err(error) => capture.faults.push(format!("cannot open the session: {error}")),
        Ok(mut session) => {
            capture.torn_tail =
                session.torn_tail().map(|torn| TornTail { offset: torn.offset, length: torn.bytes.len() });
            for turn in &scenario.turns {
                if let Some(model) = &turn.model {
                    session.set_model(model);
                }
                match session.prompt(&turn.prompt).await {
                    Ok(outcome) => capture.reported.push(Reported {
                        terminal_status: outcome.status.as_str().to_owned(),
                        error_kind: outcome.error_kind.map(|kind| kind.as_str().to_owned()),
                        next_actions: outcome.next_actions,
                        truncation: outcome.truncation,
                    }),
                    Err(error) => {
                        capture.faults.push(format!("turn could not be recorded: {error}"));
                        break;
                    }
                }
            }
        }
    }
    match std::fs::read_to_string(&log_path) {
        Ok(text) => capture.log = text.lines().map(str::to_owned).collect(),
        Err(error) => capture.faults.push(format!("cannot read the log {}: {error}", log_path.display())),
    }
    let report = mock.report();
    capture.requests = report
        .journal
        .into_iter()
        .map(|entry| Request { route: entry.route, response_index: entry.response_index, body: entry.body })
        .collect();
    capture.unconsumed = report
        .unconsumed
        .iter()
        .flat_map(|gap| (gap.index..gap.index + gap.remaining).map(|index| (gap.route.clone(), index)))
        .collect();
    capture.unmatched = report.mismatches.iter().map(|mismatch| mismatch.to_string()).collect();
    capture
}

/// Seeds the workspace files and any preloaded Log.
fn prepare(scenario: &Scenario, workspace: &Path, config: &SessionConfig) -> Result<(), String> {
    let write = |path: &Path, content: &str| {
        path.parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::write(path, content))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))
    };
    for (relative, content) in &scenario.workspace {
        write(&workspace.join(relative), content)?;
    }
    if let Some(preload) = &scenario.log {
        write(&config.log_path(), &preload.ndjson)?;
    }
    Ok(())
}

/// A [`Transport`] that hands requests straight to a [`MockProvider`]: no socket, same bytes.
struct InProcess(Arc<MockProvider>);

impl Transport for InProcess {
    fn send(&self, request: HttpRequest) -> SendFuture<'_> {
        Box::pin(async move {
            let path =
                request.url.split_once("://").and_then(|(_, rest)| rest.find('/').map(|idx| rest[idx..].to_owned()));
            let reply = self.0.respond(MockRequest {
                method: "POST".to_owned(),
                path: path.unwrap_or_else(|| "/".to_owned()),
                headers: request.headers,
                body: request.body,
            });
            let (sender, receiver) = tokio::sync::mpsc::channel(1);
            let mut chunks = in_process::play(reply.steps);
            tokio::spawn(async move {
                while let Some(chunk) = chunks.recv().await {
                    let item = match chunk {
                        Chunk::Data(bytes) => Ok(bytes),
                        Chunk::Abort => Err(TransportError("connection reset by the provider".to_owned())),
                    };
                    if sender.send(item).await.is_err() {
                        break;
                    }
                }
            });
            Ok(HttpResponse { status: reply.status, headers: reply.headers, body: Body::Channel(receiver) })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Plan, scenario_names};

    /// Log lines without what legitimately differs over a socket: timestamps and elapsed
    /// times follow real time, and a dropped connection is worded by hyper.
    fn masked(capture: &Capture) -> Vec<serde_json::Value> {
        capture
            .log
            .iter()
            .map(|line| {
                let mut event: serde_json::Value = serde_json::from_str(line).unwrap();
                event["ts"] = serde_json::Value::Null;
                if let Some(details) = event.pointer_mut("/data/details").and_then(|d| d.as_object_mut()) {
                    details.remove("elapsed_ms");
                    details.remove("transport_error");
                }
                event
            })
            .collect()
    }

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
            let scenario = crate::scenario::load(&path).unwrap();
            let in_process = Reference { wire: Wire::InProcess }.drive(&scenario);
            let http = Reference { wire: Wire::Http }.drive(&scenario);
            assert!(http.faults.is_empty(), "{name}: {:?}", http.faults);
            assert_eq!(http.requests, in_process.requests, "{name}: request bodies differ");
            assert_eq!(http.reported, in_process.reported, "{name}: reported outcomes differ");
            assert_eq!(masked(&http), masked(&in_process), "{name}: logs differ");
        }
    }
}
