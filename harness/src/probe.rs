//! Drafting a profile for an agent gauntlet has never seen (`gauntlet init`): start it, ask it
//! `initialize` as a client would, and write what it declares as a commented profile, with
//! placeholders and each dialect's usual conventions for what only its user knows (issue 33).

use std::process::Stdio;
use std::time::Duration;

use crate::driver::conversation::initialize_params;
use gauntlet_judge::scenario::{AcpVersion, ClientConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// Why the agent's `initialize` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The command did not start.
    #[error("cannot start `{program}`: {source}")]
    Start {
        /// The command.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Its stdin or stdout was not there.
    #[error("cannot talk to the agent over stdin and stdout")]
    Pipes,
    /// No answer came in time.
    #[error("the agent did not answer `initialize` within {} ms", .0.as_millis())]
    Silent(Duration),
    /// Its output ended first.
    #[error("the agent's output ended before it answered `initialize`")]
    Ended,
    /// It answered with an error.
    #[error("the agent refused `initialize`: {0}")]
    Refused(Value),
    /// A runtime for the exchange could not be built.
    #[error("cannot start an async runtime: {0}")]
    Runtime(std::io::Error),
}

/// The `initialize` request gauntlet's driver sends in `version`, so the draft says what a
/// check will meet.
fn initialize_request(version: AcpVersion) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params(version, ClientConfig::default())})
}

/// Starts `program` with `args` in a scratch folder, sends `initialize` in `version`, and
/// returns the result it answers with; the agent is killed afterwards.
pub fn initialize(
    program: &str,
    args: &[String],
    patience: Duration,
    version: AcpVersion,
) -> Result<Value, ProbeError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ProbeError::Runtime)?;
    runtime.block_on(async {
        let scratch = tempfile::tempdir().map_err(ProbeError::Runtime)?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(scratch.path())
            .env("HOME", scratch.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| ProbeError::Start { program: program.to_owned(), source })?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ProbeError::Pipes);
        };
        let line = format!("{}\n", initialize_request(version));
        stdin.write_all(line.as_bytes()).await.map_err(|_| ProbeError::Ended)?;
        let mut lines = BufReader::new(stdout).lines();
        let answer = async {
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
                if message.get("id") == Some(&json!(1)) && message.get("method").is_none() {
                    return match message.get("result") {
                        Some(result) => Ok(result.clone()),
                        None => Err(ProbeError::Refused(message.get("error").cloned().unwrap_or(Value::Null))),
                    };
                }
            }
            Err(ProbeError::Ended)
        };
        let result = tokio::time::timeout(patience, answer).await.map_err(|_| ProbeError::Silent(patience))?;
        let _ = child.kill().await;
        result
    })
}

/// A commented profile for the agent `program args`, from its `initialize` `result` in v1 and
/// whether it answered a v2 `initialize` in v2: what it declared filled in, the rest marked
/// `FILL` with each dialect's usual conventions.
pub fn draft(program: &str, args: &[String], result: &Value, speaks_v2: bool) -> String {
    let info = result.get("agentInfo");
    let name = info.and_then(|info| info.get("name")).and_then(Value::as_str).unwrap_or("my-agent");
    let version = info.and_then(|info| info.get("version")).and_then(Value::as_str).unwrap_or("unknown");
    let declares = |pointer: &str| result.pointer(pointer).and_then(Value::as_bool) == Some(true);
    let mut capabilities = vec!["cancel"];
    if declares("/agentCapabilities/loadSession") {
        capabilities.push("load");
    }
    // ACP declares each stable session method as an object under `sessionCapabilities`
    // (`{}` when supported; absent or `null` when not). `$/cancel_request` is declared nowhere.
    for (method, capability) in [("resume", "resume"), ("close", "close"), ("list", "list")] {
        let pointer = format!("/agentCapabilities/sessionCapabilities/{method}");
        if result.pointer(&pointer).is_some_and(Value::is_object) {
            capabilities.push(capability);
        }
    }
    let quoted = |items: &[&str]| items.iter().map(|item| format!("{item:?}")).collect::<Vec<_>>().join(", ");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let version_line = info.map_or_else(String::new, |_| format!("# It answered `initialize` as {name} {version}.\n"));
    let auth = result
        .get("authMethods")
        .and_then(Value::as_array)
        .filter(|methods| !methods.is_empty())
        .map(|methods| {
            let ids: Vec<&str> = methods.iter().filter_map(|method| method.get("id").and_then(Value::as_str)).collect();
            format!("# It offers authentication ({}): the mock takes any key, so pass one in [env].\n", ids.join(", "))
        })
        .unwrap_or_default();
    let images = if declares("/agentCapabilities/promptCapabilities/image") {
        "# It declares prompt images: the image scenarios are played.\n"
    } else {
        "# It declares no prompt images: the image scenarios are skipped.\n"
    };
    let v2 = if speaks_v2 {
        "# It answered a v2 `initialize` in version 2: a copy of this profile with `acp_version = 2`\n# checks it in ACP v2 too.\n"
    } else {
        ""
    };
    format!(
        r#"# A profile draft written by `gauntlet init` from what the agent declared (docs/implementations.md).
{version_line}{auth}{images}{v2}# Fill in every line marked FILL, then `gauntlet check --impl <this file> --probe` says which
# wire and model the agent called, and `gauntlet check --impl <this file>` checks it.
name = {name:?}
command = {program:?}
# FILL: how the agent takes the mock Provider's address ({{provider_url}}) and the model
# ({{model}}); gauntlet also fills {{max_retries}}, {{stream_idle_timeout_ms}}, {{turn_timeout_ms}},
# {{home}}, {{workspace}} and {{tmp}}.
args = [{args}]
# FILL: the wire it speaks: responses, chat_completions, anthropic_messages or gemini.
dialect = "responses"
# From `initialize`; add what else it does (tools through [tools], permissions, subagents).
capabilities = [{capabilities}]
time_scale = 0.01
network = "loopback"

[env]
# FILL: the usual variables, by wire (keep the ones the agent reads):
# OPENAI_BASE_URL = "{{provider_url}}/v1"       # responses, chat_completions
# OPENAI_API_KEY = "gauntlet-mock-key"
# ANTHROPIC_BASE_URL = "{{provider_url}}"       # anthropic_messages
# ANTHROPIC_API_KEY = "gauntlet-mock-key"
# GOOGLE_GEMINI_BASE_URL = "{{provider_url}}"   # gemini
# GEMINI_API_KEY = "gauntlet-mock-key"
"#,
        args = quoted(&args),
        capabilities = quoted(&capabilities),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_says_what_the_agent_declared_and_marks_the_rest() {
        let result = json!({"protocolVersion": 1, "agentInfo": {"name": "toy", "version": "0.3"},
            "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": false},
                "sessionCapabilities": {"close": {}, "list": null}}});
        let draft = draft("bin/toy", &["--acp".to_owned()], &result, false);
        assert!(draft.contains("name = \"toy\""), "{draft}");
        assert!(draft.contains("capabilities = [\"cancel\", \"load\", \"close\"]"), "{draft}");
        assert!(draft.contains("args = [\"--acp\"]"), "{draft}");
        assert!(draft.contains("image scenarios are skipped"), "{draft}");
        assert!(draft.contains("FILL"), "{draft}");
        assert!(!draft.contains("acp_version"), "{draft}");
        assert!(super::draft("bin/toy", &[], &result, true).contains("`acp_version = 2`"));
    }
}
