//! Command-line front end: serve a script or scenario file over loopback HTTP until Ctrl-C.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use gauntlet_mock_provider::{Dialect, Script, Sessions, serve};

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
    /// Serve FILE on 127.0.0.1 until Ctrl-C, then print the journal summary to stderr.
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
    },
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let Command::Serve { file, port, dialect } = Cli::parse().command;
    let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    let is_scenario = text.parse::<toml::Table>().is_ok_and(|table| table.contains_key("turn"));
    let script = if is_scenario { Script::from_scenario_toml(&text) } else { Script::from_toml_str(&text) }
        // Flattened: the TOML message already shows line, column and the offending key.
        .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    // Each new session (a second editor thread, a restarted agent) plays the script from its start.
    let provider = Arc::new(Sessions::new(script, dialect));
    let server = serve(Arc::clone(&provider), SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    println!("listening on {}", server.base_url());
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    server.shutdown();
    eprint!("{}", provider.report());
    Ok(())
}
