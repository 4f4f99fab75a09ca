//! gauntlet's MCP server as an agent runs it: the `mock-provider mcp` process on real stdio
//! pipes, spoken to in raw JSON-RPC, relaying to a tool server whose journal then says what
//! each call returned and how it ended.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use gauntlet_mock_provider::tool_server::{Answer, CallEnd, ToolServer};
use gauntlet_mock_provider::{Script, serve};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Server {
    async fn start(url: &str) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mock-provider"))
            .args(["mcp", "--url", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start the MCP server: {error}"));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else { panic!("no pipes") };
        let mut server = Server { child, stdin, lines: BufReader::new(stdout).lines() };
        let params = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}});
        let answer = server.request(1, "initialize", params).await;
        assert!(answer["result"]["capabilities"]["tools"].is_object(), "{answer}");
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
        server
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.stdin.write_all(line.as_bytes()).await.unwrap_or_else(|error| panic!("{error}"));
    }

    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
        self.answer(id).await
    }

    /// The answer to request `id`, skipping anything else the server sends.
    async fn answer(&mut self, id: u64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line()).await;
            let Ok(Ok(Some(line))) = line else { panic!("no answer to request {id}") };
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"));
            if message["id"] == id {
                return message;
            }
        }
    }
}

fn script(text: &str) -> Script {
    Script::from_toml_str(text).unwrap_or_else(|error| panic!("{error}"))
}

async fn tool_server(script: &Script, workspace: &Path) -> (Arc<ToolServer>, gauntlet_mock_provider::ServerHandle) {
    let tools = Arc::new(ToolServer::new(script, workspace, 1.0));
    let handle = serve(tools.clone(), "127.0.0.1:0".parse().unwrap_or_else(|error| panic!("{error}")))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    (tools, handle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_fail_and_hang_as_scripted_and_the_journal_says_how_each_ended() {
    let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    std::fs::write(workspace.path().join("notes.md"), "alpha").unwrap_or_else(|error| panic!("{error}"));
    let script = script(
        r#"
        [[routes.root]]
        calls = [
          { name = "write", args = { path = "out.md", content = "x" }, outcome = { error = "disk on fire" } },
          { name = "wait", args = { ms = 1 }, outcome = "hang" },
          { name = "list", args = {}, outcome = { rpc_error = "server confused" } },
        ]
        "#,
    );
    let (tools, handle) = tool_server(&script, workspace.path()).await;
    let mut server = Server::start(&handle.base_url()).await;

    let listed = server.request(2, "tools/list", json!({})).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().into_iter().flatten().filter_map(|tool| tool["name"].as_str()).collect();
    assert_eq!(names, ["list", "read", "write", "wait"]);

    let read = server.request(3, "tools/call", json!({"name": "read", "arguments": {"path": "notes.md"}})).await;
    assert_eq!(read["result"]["content"][0]["text"], "alpha", "{read}");
    assert_ne!(read["result"]["isError"], true);

    let write = server
        .request(4, "tools/call", json!({"name": "write", "arguments": {"path": "out.md", "content": "x"}}))
        .await;
    assert_eq!(
        (&write["result"]["isError"], &write["result"]["content"][0]["text"]),
        (&json!(true), &json!("disk on fire"))
    );
    assert!(!workspace.path().join("out.md").exists(), "a scripted outcome does not run the tool");

    let list = server.request(5, "tools/call", json!({"name": "list", "arguments": {}})).await;
    assert_eq!(list["error"]["message"], "server confused", "{list}");

    // The hung call answers nothing until the client cancels it; a ping shows the server alive.
    server.send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "wait", "arguments": {"ms": 1}}})).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 6}})).await;
    server.request(7, "ping", json!({})).await;
    for _ in 0..50 {
        if tools.journal().last().is_some_and(|call| call.end.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let journal = tools.journal();
    let ends: Vec<(&str, bool, Option<CallEnd>)> =
        journal.iter().map(|call| (call.tool.as_str(), call.scripted, call.end)).collect();
    assert_eq!(
        ends,
        [
            ("read", false, Some(CallEnd::Answered)),
            ("write", true, Some(CallEnd::Answered)),
            ("list", true, Some(CallEnd::Answered)),
            ("wait", true, Some(CallEnd::Cancelled)),
        ]
    );
    assert!(journal[0].succeeded() && !journal[1].succeeded() && !journal[2].succeeded() && !journal[3].succeeded());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_ends_the_server_with_the_call_unanswered() {
    let workspace = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let script = script(
        r#"
        [[routes.root]]
        calls = [{ name = "read", args = { path = "a" }, outcome = "crash" }]
        "#,
    );
    let (tools, handle) = tool_server(&script, workspace.path()).await;
    let mut server = Server::start(&handle.base_url()).await;
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "a"}}})).await;
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait()).await;
    assert!(matches!(status, Ok(Ok(status)) if !status.success()), "{status:?}");
    let journal = tools.journal();
    assert_eq!((journal.len(), &journal[0].answer, journal[0].end), (1, &Answer::Crash, None));
}
