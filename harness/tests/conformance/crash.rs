//! TURN-RESTART-RECOVERY end to end: `gauntlet-agent` is killed with SIGKILL at many points of
//! a streaming turn with a tool call (before, between and after its Log appends), then a fresh
//! process loads the Session and is prompted again.
//!
//! After each kill: every event the agent acknowledged on the wire is in the Log; after the
//! reload the Log's seq has no gap, no turn is left open, and the next request is valid (each
//! `function_call` has its output, no failure text is replayed, the new prompt comes last).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use gauntlet_judge::audit;
use gauntlet_mock_provider::{Call, MockProvider, Pause, Response, Script, ServerHandle};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const PATIENCE: Duration = Duration::from_secs(20);

/// An agent process and its pipes.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Agent {
    fn spawn(binary: &Path, provider: &ServerHandle) -> Result<Agent, String> {
        let mut child = Command::new(binary)
            .arg(format!("--provider-url={}", provider.base_url()))
            .arg("--deterministic-ids")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no pipes".into());
        };
        Ok(Agent { child, stdin, stdout: BufReader::new(stdout).lines(), next_id: 0 })
    }

    async fn send(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).to_string();
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.map_err(|error| error.to_string())?;
        Ok(self.next_id)
    }

    async fn next(&mut self) -> Result<Value, String> {
        match tokio::time::timeout(PATIENCE, self.stdout.next_line()).await {
            Ok(Ok(Some(line))) => serde_json::from_str(&line).map_err(|error| format!("{error}: {line}")),
            Ok(Ok(None)) => Err("the agent closed its output".into()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("no message from the agent in time".into()),
        }
    }

    /// Sends a request and reads until its answer; returns the answer and what came before.
    async fn request(&mut self, method: &str, params: Value) -> Result<(Value, Vec<Value>), String> {
        let id = self.send(method, params).await?;
        let mut before = Vec::new();
        loop {
            let message = self.next().await?;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok((message, before));
            }
            before.push(message);
        }
    }

    async fn kill(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// The killed turn: a `write` tool call, then text streamed in six frames with pauses between.
fn killed_turn_script() -> Script {
    let write = Call {
        name: "write".into(),
        args: json!({"path": "notes.txt", "content": "kept"}),
        call_id: Some("call_w".into()),
        raw_args: None,
        ..Call::default()
    };
    let tool = Response { calls: vec![write], ..Response::default() };
    let text = Response {
        text: ["The ", "notes ", "are ", "written", "."].map(str::to_owned).to_vec(),
        pause: vec![Pause { after: 3, ms: 5 }],
        ..Response::default()
    };
    Script::root(vec![tool, text])
}

/// What a run up to the kill saw: how many messages, and the call ids the agent acknowledged.
struct Seen {
    messages: usize,
    calls: Vec<String>,
    results: Vec<String>,
}

/// Starts a Session, prompts, and kills the agent after `kill_after` messages plus `delay`.
/// `None` kills nothing and reads the whole turn (to count its messages).
async fn run_until_kill(
    binary: &Path,
    workspace: &Path,
    kill_after: Option<usize>,
    delay: Duration,
) -> Result<Seen, String> {
    let provider = Arc::new(MockProvider::new(killed_turn_script()));
    let server = gauntlet_mock_provider::serve(provider, "127.0.0.1:0".parse().map_err(|_| "addr")?)
        .await
        .map_err(|error| error.to_string())?;
    let mut agent = Agent::spawn(binary, &server)?;
    agent.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await?;
    let (answer, _) = agent.request("session/new", json!({"cwd": workspace, "mcpServers": []})).await?;
    if answer.pointer("/result/sessionId") != Some(&json!("root")) {
        return Err(format!("session/new: {answer}"));
    }
    let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "Write the notes"}]});
    let prompt_id = agent.send("session/prompt", prompt).await?;
    let mut seen = Seen { messages: 0, calls: Vec::new(), results: Vec::new() };
    loop {
        if Some(seen.messages) == kill_after {
            break;
        }
        let message = agent.next().await?;
        seen.messages += 1;
        if let Some(update) = message.pointer("/params/update") {
            let call_id = update.get("toolCallId").and_then(Value::as_str).unwrap_or_default().to_owned();
            match (update["sessionUpdate"].as_str(), update["status"].as_str()) {
                (Some("tool_call"), _) => seen.calls.push(call_id),
                (Some("tool_call_update"), Some("completed" | "failed")) => seen.results.push(call_id),
                _ => {}
            }
        }
        if message.get("id") == Some(&json!(prompt_id)) {
            if kill_after.is_some() {
                return Err(format!("the turn ended before message {kill_after:?}"));
            }
            break;
        }
    }
    tokio::time::sleep(delay).await;
    agent.kill().await;
    drop(server);
    Ok(seen)
}

/// Reloads the Session in a fresh process, prompts again, and checks the Log and the request;
/// `true` when the reload had a turn to close.
async fn reload_and_prompt(binary: &Path, workspace: &Path, seen: &Seen) -> Result<bool, String> {
    let log_path = workspace.join(".gauntlet/sessions/root.ndjson");
    let killed_log = std::fs::read_to_string(&log_path).map_err(|error| error.to_string())?;
    for (what, ids, kind) in [("tool_call", &seen.calls, "tool_call"), ("tool_result", &seen.results, "tool_result")] {
        for id in ids {
            let needle = format!("\"call_id\":\"{id}\"");
            if !killed_log.lines().any(|line| line.contains(&needle) && line.contains(&format!("\"type\":\"{kind}\"")))
            {
                return Err(format!("the agent acknowledged {what} {id}, but the Log lost it:\n{killed_log}"));
            }
        }
    }
    let provider = Arc::new(MockProvider::new(Script::root(vec![Response {
        text: vec!["Recovered.".into()],
        ..Response::default()
    }])));
    let server = gauntlet_mock_provider::serve(Arc::clone(&provider), "127.0.0.1:0".parse().map_err(|_| "addr")?)
        .await
        .map_err(|error| error.to_string())?;
    let mut agent = Agent::spawn(binary, &server)?;
    agent.request("initialize", json!({"protocolVersion": 1, "clientCapabilities": {}})).await?;
    let load = json!({"sessionId": "root", "cwd": workspace, "mcpServers": []});
    let (answer, _) = agent.request("session/load", load).await?;
    if answer.get("error").is_some() {
        return Err(format!("session/load: {answer}"));
    }
    let prompt = json!({"sessionId": "root", "prompt": [{"type": "text", "text": "Again"}]});
    let (answer, _) = agent.request("session/prompt", prompt).await?;
    if answer.pointer("/result/stopReason") != Some(&json!("end_turn")) {
        return Err(format!("the next prompt: {answer}"));
    }
    agent.kill().await;
    let log = std::fs::read_to_string(&log_path).map_err(|error| error.to_string())?;
    let lines: Vec<String> = log.lines().map(str::to_owned).collect();
    let killed_lines = killed_log.lines().count();
    if lines[..killed_lines.min(lines.len())].join("\n") != killed_log.trim_end() {
        return Err(format!("the reload rewrote what was written before the kill:\n{killed_log}\n---\n{log}"));
    }
    for (expected, line) in lines.iter().enumerate() {
        let seq = serde_json::from_str::<Value>(line).ok().and_then(|value| value["seq"].as_u64());
        if seq != Some(expected as u64) {
            return Err(format!("Log line {} has seq {seq:?}, not {expected}:\n{log}", expected + 1));
        }
    }
    let audit = audit::audit(&lines);
    if !audit.unterminated.is_empty() || audit.turns.iter().any(|turn| turn.terminal_status.is_none()) {
        return Err(format!("turns left open after the reload: {:?}\n{log}", audit.unterminated));
    }
    let report = provider.report();
    let Some(request) = report.journal.first() else { return Err("the next prompt sent no request".into()) };
    let body = request.body.whole().ok_or("the first request of a route is journaled whole")?;
    check_request_input(&body["input"]).map_err(|problem| format!("{problem}\n{log}"))?;
    Ok(log.contains("\"error_kind\":\"restarted\""))
}

/// The next request is valid: every `function_call` has its output, nothing of the killed
/// turn's failure is replayed as the model's words, and the new prompt comes last. (Two user
/// messages in a row are what replaying a turn that failed without text looks like.)
fn check_request_input(input: &Value) -> Result<(), String> {
    let items = input.as_array().ok_or("no input array")?;
    let last = items.last().and_then(|item| item.pointer("/content/0/text"));
    if last != Some(&json!("Again")) {
        return Err(format!("the new prompt is not the last input item: {input}"));
    }
    for item in items {
        if item["role"] == "assistant" && item.to_string().contains("restart") {
            return Err(format!("failure text replayed as the model's words: {item}"));
        }
        if item["type"] == "function_call" {
            let call_id = &item["call_id"];
            if !items.iter().any(|other| other["type"] == "function_call_output" && &other["call_id"] == call_id) {
                return Err(format!("function_call {call_id} has no output in the next request"));
            }
        }
    }
    Ok(())
}

/// The trial: one uninterrupted run counts the turn's messages, then a kill after each count,
/// at once and a little later.
pub fn kill_nine(binary: &Path) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let whole = tempfile::tempdir().map_err(|error| error.to_string())?;
        let turn = run_until_kill(binary, whole.path(), None, Duration::ZERO).await?;
        if turn.calls.is_empty() || turn.results.is_empty() {
            return Err(format!("the uninterrupted turn showed no tool call ({} messages)", turn.messages));
        }
        let mut failures = Vec::new();
        let mut points = 0;
        let mut closed = 0;
        for kill_after in 0..turn.messages {
            for delay in [Duration::ZERO, Duration::from_millis(2)] {
                let workspace = tempfile::tempdir().map_err(|error| error.to_string())?;
                points += 1;
                let outcome = match run_until_kill(binary, workspace.path(), Some(kill_after), delay).await {
                    Ok(seen) => reload_and_prompt(binary, workspace.path(), &seen).await,
                    Err(error) => Err(error),
                };
                match outcome {
                    Ok(had_open_turn) => closed += usize::from(had_open_turn),
                    Err(problem) => failures.push(format!("killed after {kill_after} messages + {delay:?}: {problem}")),
                }
            }
        }
        if points < 10 || closed < 5 {
            return Err(format!("{points} kill points, {closed} with a turn to close: too few to test recovery"));
        }
        if failures.is_empty() { Ok(()) } else { Err(failures.join("\n\n")) }
    })
}
