//! Command-line front end: serve a script or scenario file over loopback HTTP until Ctrl-C, or
//! record a real Provider's answers into a scenario file.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use gauntlet_mock_provider::record::timing::MIN_GAP_MS;
use gauntlet_mock_provider::{Dialect, Recorder, Script, Sessions, Speed, Upstream, serve};

/// A scripted LLM provider speaking a real Provider wire format, with faults.
///
/// Requests go to the dialect's endpoint (route "root"; for responses POST /v1/responses,
/// for chat_completions POST /v1/chat/completions) or to the same under /routes/NAME; each
/// route serves its scripted responses in order. A request no script answers, or one to
/// another dialect's endpoint, gets a 4xx JSON body explaining what was expected.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve FILE on 127.0.0.1 until Ctrl-C or SIGTERM, then print the journal summary to stderr.
    Serve {
        /// A scenario TOML (`[[turn]]` tables whose `respond` arrays feed route "root") or a
        /// script TOML (`[[routes.NAME]]` tables, one per response).
        file: PathBuf,
        /// Port to listen on; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The wire format: responses, chat_completions, anthropic_messages, gemini.
        #[arg(long, default_value_t = Dialect::Responses)]
        dialect: Dialect,
        /// How fast the script's pauses pass: a factor (2 = twice as fast, 0.5 = half as
        /// fast, 1 = real time) or `max` (no waits; 0 means the same). `retry-after` headers
        /// are sent as written.
        #[arg(long, default_value_t = Speed::default(), value_name = "F", allow_negative_numbers = true)]
        speed: Speed,
        /// Write what each session received and answered to FILE, one JSON object a line
        /// (`{"session": ..., "report": {"journal": [...], "mismatches": [...], ...}}`), as the
        /// session ends: when its connection closes (a client that names no session), or on exit.
        #[arg(long, value_name = "FILE")]
        journal: Option<PathBuf>,
    },
    /// Forward every request on 127.0.0.1 to a real Provider, stream each answer back
    /// unchanged, and on Ctrl-C write a scenario whose responses replay what it answered.
    Record {
        /// The Provider's base URL, plain HTTP (`http://host[:port][/base]`); a request's path
        /// and query are appended.
        #[arg(long)]
        upstream: String,
        /// The wire format the agent speaks: responses, chat_completions, anthropic_messages, gemini.
        #[arg(long)]
        dialect: Dialect,
        /// Where to write the scenario TOML.
        #[arg(long)]
        out: PathBuf,
        /// Port to listen on; 0 picks a free one.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// The shortest wait kept as a `pause`, in milliseconds: a chunk that came sooner after
        /// the one before (or, for the first, after the request) replays without a wait.
        #[arg(long, default_value_t = MIN_GAP_MS, value_name = "MS")]
        min_gap_ms: u64,
    },
    /// gauntlet's MCP server on stdin and stdout, as an agent starts it from `mcpServers`:
    /// each tool call is relayed to a scenario's tool server, which says what to answer.
    Mcp {
        /// The tool server's base URL (`http://127.0.0.1:PORT`).
        #[arg(long)]
        url: String,
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve { file, port, dialect, speed, journal } => {
            run_serve(file, port, dialect, speed, journal.as_deref()).await
        }
        Command::Record { upstream, dialect, out, port, min_gap_ms } => {
            run_record(&upstream, dialect, out, port, Duration::from_millis(min_gap_ms)).await
        }
        Command::Mcp { url } => gauntlet_mock_provider::mcp::serve_stdio(&url).await,
    }
}

async fn run_record(
    upstream: &str,
    dialect: Dialect,
    out: PathBuf,
    port: u16,
    min_gap: Duration,
) -> anyhow::Result<()> {
    let upstream = Upstream::parse(upstream)?;
    let recorder =
        Recorder::start(upstream, dialect, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?.with_min_gap(min_gap);
    println!("listening on {}", recorder.base_url());
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    let recording = recorder.finish();
    std::fs::write(&out, &recording.toml).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("recorded {} request(s) into {}", recording.requests, out.display());
    Ok(())
}

async fn run_serve(
    file: PathBuf,
    port: u16,
    dialect: Dialect,
    speed: Speed,
    journal: Option<&Path>,
) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let is_scenario = text.parse::<toml::Table>().is_ok_and(|table| table.contains_key("turn"));
    let script = if is_scenario { Script::from_scenario_toml(&text) } else { Script::from_toml_str(&text) }
        // Flattened: the TOML message already shows line, column and the offending key.
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    // Each new session (a second editor thread, a restarted agent) plays the script from its start.
    let mut sessions = Sessions::new(script, dialect).with_speed(speed);
    if let Some(path) = journal {
        let file = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        sessions = sessions.with_journal(std::io::BufWriter::new(file));
    }
    let provider = Arc::new(sessions);
    let server = serve(Arc::clone(&provider), SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    println!("listening on {}", server.base_url());
    // A CI service is stopped with SIGTERM, a terminal with Ctrl-C: both end it the same way.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        stopped = tokio::signal::ctrl_c() => stopped.context("waiting for Ctrl-C")?,
        _ = terminate.recv() => {}
    }
    server.shutdown();
    eprint!("{}", provider.report());
    provider.end_all();
    Ok(())
}
