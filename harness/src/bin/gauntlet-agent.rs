//! `gauntlet-agent`: the reference runtime as an ACP agent on stdin/stdout.
//!
//! Thin glue: flags to an `AgentConfig`, then `acp::serve`. Stdout carries only JSON-RPC;
//! diagnostics go to stderr.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use gauntlet_agent::acp::{self, AgentConfig};
use gauntlet_agent::ids::{Clock, IdSource, Sequential, TimeSeeded};
use gauntlet_agent::provider::{Dialect, HttpTransport, ProviderConfig};

/// The gauntlet reference runtime as an Agent Client Protocol agent (protocol version 1),
/// speaking JSON-RPC 2.0, one message per line, on stdin and stdout.
///
/// Point an ACP client (an editor) at this command. Its Provider speaks the `--dialect` wire
/// format (the OpenAI Responses API by default), such as `mock-provider serve SCENARIO --port
/// 4000 --dialect chat_completions`. Each session's Log is written
/// under the session's `cwd`, in `.gauntlet/sessions/<session id>.ndjson`.
#[derive(Debug, Parser)]
#[command(name = "gauntlet-agent", version, about, long_about)]
struct Flags {
    /// Base URL of the Provider; requests go to `{url}` + the dialect's path (`/v1/responses`).
    #[arg(long, env = "GAUNTLET_PROVIDER_URL", default_value = "http://127.0.0.1:4000")]
    provider_url: String,
    /// The Provider wire format: responses, chat_completions, anthropic_messages, gemini.
    #[arg(long, env = "GAUNTLET_DIALECT", default_value_t = Dialect::Responses)]
    dialect: Dialect,
    /// Model of new sessions.
    #[arg(long, env = "GAUNTLET_MODEL", default_value = "gpt-5.5")]
    model: String,
    /// Other models a client may choose, comma-separated: listed beside `--model` in each
    /// session's `configOptions`, so a client discovers them (any model name is taken).
    #[arg(long, env = "GAUNTLET_MODELS", value_delimiter = ',')]
    models: Vec<String>,
    /// Retries of HTTP 429 / 5xx before any text reached the client.
    #[arg(long, env = "GAUNTLET_MAX_RETRIES", default_value_t = 2)]
    max_retries: u32,
    /// Milliseconds without a chunk before a stream fails with `stream_idle_timeout`.
    #[arg(long, env = "GAUNTLET_STREAM_IDLE_TIMEOUT_MS", default_value_t = 180_000)]
    stream_idle_timeout_ms: u64,
    /// Milliseconds a whole turn may take before it fails with `turn_timeout`.
    #[arg(long, env = "GAUNTLET_TURN_TIMEOUT_MS", default_value_t = 600_000)]
    turn_timeout_ms: u64,
    /// The model's context window in tokens, reported in `usage_update` (0: report none).
    #[arg(long, env = "GAUNTLET_CONTEXT_WINDOW", default_value_t = 400_000)]
    context_window: u64,
    /// Compact a Session's History before a Provider call when the last call reported at least
    /// this many input tokens (0: never).
    #[arg(long, env = "GAUNTLET_COMPACT_AT_TOKENS", default_value_t = 360_000)]
    compact_at_tokens: u64,
    /// Sequential ids (sessions `root`, `session-2`, ...; events `0000000000000001`, ...) and
    /// timestamps from 2026-01-01T00:00:00Z, so conformance runs compare byte for byte.
    #[arg(long, env = "GAUNTLET_DETERMINISTIC_IDS")]
    deterministic_ids: bool,
    /// Offer the delegation tools (`spawn_agent`, `wait_agent`, `close_agent`,
    /// `run_workflow`): child sessions get their own Logs beside the parent's.
    #[arg(long, env = "GAUNTLET_DELEGATION")]
    delegation: bool,
    /// With `--delegation`, offer `delegate` too: a subagent run and waited for in one call,
    /// as an agent's own synchronous delegation tool.
    #[arg(long, env = "GAUNTLET_DELEGATE")]
    delegate: bool,
    /// At most this many subagents of a session run at once; more wait queued.
    #[arg(long, env = "GAUNTLET_MAX_SUBAGENTS", default_value_t = 6)]
    max_subagents: usize,
    /// Offer the `plan` tool: the model's to-do list, shown to the client as ACP `plan`
    /// updates (each the whole list) and never written to the Log.
    #[arg(long, env = "GAUNTLET_PLANS")]
    plans: bool,
}

fn main() -> ExitCode {
    let flags = Flags::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("gauntlet-agent: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    runtime.block_on(async {
        let ids: Arc<dyn IdSource> =
            if flags.deterministic_ids { Arc::new(Sequential::default()) } else { Arc::new(TimeSeeded::default()) };
        let clock = if flags.deterministic_ids { Clock::virtual_from_now() } else { Clock::System };
        let config = AgentConfig {
            provider: ProviderConfig {
                base_url: flags.provider_url,
                dialect: flags.dialect,
                max_retries: flags.max_retries,
                stream_idle_timeout: Duration::from_millis(flags.stream_idle_timeout_ms),
                ..ProviderConfig::default()
            },
            transport: Arc::new(HttpTransport::default()),
            model: flags.model,
            models: flags.models,
            turn_timeout: Duration::from_millis(flags.turn_timeout_ms),
            context_window: (flags.context_window > 0).then_some(flags.context_window),
            compact_at_tokens: (flags.compact_at_tokens > 0).then_some(flags.compact_at_tokens),
            ids,
            clock,
            delegation: flags.delegation,
            delegate: flags.delegate,
            max_subagents: flags.max_subagents,
            plans: flags.plans,
            mcp: Arc::new(gauntlet_agent::tools::mcp::Processes),
        };
        match acp::serve(tokio::io::stdin(), tokio::io::stdout(), config).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("gauntlet-agent: {error}");
                ExitCode::from(1)
            }
        }
    })
}
