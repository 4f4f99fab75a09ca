//! `gauntlet`: parses the flags and calls one function per command, each in its own module,
//! then maps the outcome to an exit code (0 all identical or clean, 1 something is not,
//! 2 gauntlet itself failed, 130 or 143 stopped by SIGINT or SIGTERM).

mod audit;
mod campaign;
mod check;
mod compatibility;
mod corpus;
mod init;
mod merge;
mod new;
mod run;

use std::process::ExitCode;

use clap::Parser;
use gauntlet::cli::{Cli, Command};
use gauntlet::interrupt;

/// A long conversation's capture is many small JSON values built and dropped per request; with
/// glibc's allocator, freeing them costs more as the heap grows (chunk consolidation), so the
/// cost per turn grew with the conversation. mimalloc keeps it flat (docs/dialects.md, "What a
/// long conversation costs").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Run { filters, bless, format, campaign, report_dir } => match campaign.generate {
            Some(count) => campaign::on_reference(&cli, campaign, count, *format, report_dir.as_deref()),
            None => run::run(&cli, filters, *bless, *format),
        },
        Command::Check(args) => match args.campaign.generate {
            Some(count) => campaign::on_agent(&cli, args, count),
            None => check::check(&cli, args),
        },
        Command::Accept => corpus::accept(&cli),
        Command::Mcp { url } => mcp(url),
        Command::Audit { logs, json } => Ok(audit::audit(logs, *json)),
        Command::New { name, from_log } => new::new(&cli, name, from_log.as_deref()),
        Command::List => corpus::list(&cli),
        Command::Export { dir } => corpus::export(dir),
        Command::Init { out, agent } => init::init(out, agent),
        Command::Merge { reports, report_dir } => merge::merge(reports, report_dir),
        Command::Compatibility { reports, write } => compatibility::compatibility(&cli, reports, write.as_deref()),
    };
    let code = outcome.unwrap_or_else(|error| {
        eprintln!("gauntlet: {error:#}");
        ExitCode::from(2)
    });
    // Stopped by a signal, the command wrote what finished; it exits as the signal would.
    interrupt::requested().map_or(code, |stop| ExitCode::from(stop.exit_code()))
}

/// `gauntlet mcp`: serves MCP on stdio until the agent closes it.
fn mcp(url: &str) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(gauntlet_mock_provider::mcp::serve_stdio(url))?;
    Ok(ExitCode::SUCCESS)
}
