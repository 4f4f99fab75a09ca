//! Command-line flags, resolved into a [`Plan`] before any work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::progress::Format;
use crate::run::{Plan, RootError};
use gauntlet_judge::lifecycle::Family;

/// gauntlet: does an agent runtime tell the truth about how a turn ended?
#[derive(Debug, Parser)]
#[command(name = "gauntlet", version, about, long_about = None)]
pub struct Cli {
    /// The folder holding `scenarios/` and `golden/` (default: the nearest folder at or above
    /// the current one that holds `scenarios/.gauntlet-corpus`, else the corpus gauntlet carries).
    #[arg(long, global = true, env = "GAUNTLET_ROOT")]
    pub root: Option<PathBuf>,
    /// Play only shard K of N of the corpus (`--shard 2/4`), a deterministic split by name
    /// order, for a CI job matrix; `gauntlet merge` puts the shards' `report.json` together.
    #[arg(long, global = true, value_name = "K/N")]
    pub shard: Option<crate::run::Shard>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against the reference runtime and print a summary table.
    ///
    /// Exit status: 0 when every scenario is identical to its golden, 1 when any is not,
    /// 2 when gauntlet itself failed.
    Run {
        /// Only scenarios whose name contains one of these (e.g. `turn/partial`).
        filters: Vec<String>,
        /// Write pending `<file>.new` goldens for every mismatch, for review and `accept`.
        #[arg(long)]
        bless: bool,
        /// `text`: a line per scenario as it finishes, then the summary; `json`: one JSON object
        /// per verdict, then a summary object.
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        /// A campaign of generated scenarios instead of the corpus (docs/campaigns.md).
        #[command(flatten)]
        campaign: CampaignArgs,
        /// Where to write a campaign's reports (default: `target/gauntlet/reference` of the
        /// corpus).
        #[arg(long, value_name = "DIR", requires = "generate")]
        report_dir: Option<PathBuf>,
    },
    /// Check another implementation against the corpus, as described by its profile
    /// (docs/implementations.md).
    ///
    /// Each applicable scenario runs against the agent in a scratch home and workspace, with
    /// the mock Provider on loopback. Reports go to `--report-dir`: `report.json` (verdicts
    /// with evidence), `junit.xml` and `report.md`. The run passes when it fails exactly where
    /// the expectations file says. Exit status: 0 pass, 1 fail, 2 gauntlet itself failed or no
    /// scenario matched the filters.
    ///
    /// With `--adapter CMD --family F` instead of `--impl`, the lifecycle scenarios of family
    /// `F` go through the adapter protocol to the shell command `CMD` (docs/adapters.md).
    Check(CheckArgs),
    /// Accept pending golden files: rename each `<file>.new` over `<file>`.
    Accept,
    /// gauntlet's MCP server on stdin and stdout, as an agent starts it from the `mcpServers`
    /// a check gives it: each tool call is relayed to the scenario's tool server at `--url`,
    /// which says what to answer (docs/implementations.md "Tools").
    #[command(hide = true)]
    Mcp {
        /// The tool server's base URL (`http://127.0.0.1:PORT`).
        #[arg(long)]
        url: String,
    },
    /// Audit NDJSON Logs in the contract's format, from any runtime: per Turn the terminal
    /// state the Log alone supports, then every finding of the rules that need only a Log,
    /// with the line it points at (docs/scenario-format.md, "Auditing a Log").
    ///
    /// Child Logs beside a Log (`children/<id>.ndjson` or `<id>.ndjson`) are audited too.
    /// Exit status: 0 clean, 1 findings, 2 a file is not a readable Log.
    Audit {
        /// The Log files.
        #[arg(required = true, value_name = "LOG")]
        logs: Vec<PathBuf>,
        /// Print one JSON object per Log instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List scenario names.
    List,
    /// Draft a profile for an agent: start it (`-- CMD ARGS...`), ask it `initialize`, and
    /// write what it declares as a commented profile, with placeholders for the rest
    /// (docs/implementations.md). Then `check --impl FILE --probe`.
    Init {
        /// Where to write the draft (it must not exist).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The agent's command and arguments, after `--`.
        #[arg(last = true, required = true)]
        agent: Vec<String>,
    },
    /// Merge the `report.json` of the shards of one check (`check --shard K/N`, one per CI
    /// job) into the reports one unsharded run would have written: the same verdicts, the
    /// same comparison with the expectations, the same requirement matrix.
    ///
    /// Exit status: 0 when the merged run fails only where expected, 1 otherwise, 2 when the
    /// reports are not every shard of one run, each once (one missing or given twice, of
    /// another split, corpus, profile, expectations or version).
    Merge {
        /// The shards' `report.json` files.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Where to write the merged reports.
        #[arg(long, value_name = "DIR")]
        report_dir: PathBuf,
    },
    /// Write the corpus this binary carries (scenarios and goldens) into DIR, to edit it or to
    /// add scenarios of your own; then run inside DIR or give it with --root.
    Export {
        /// Where to write `scenarios/` and `golden/`; it must not hold a corpus already.
        dir: PathBuf,
    },
    /// Write one Markdown page of every checked implementation against every requirement, from
    /// the `report.json` of each one's `gauntlet check` (docs/compatibility.md); scenarios of the
    /// corpus a report never played are listed as not checked yet.
    Compatibility {
        /// The `report.json` files, one per implementation, in the order of the columns.
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<PathBuf>,
        /// Write the page here instead of printing it.
        #[arg(long, value_name = "FILE")]
        write: Option<PathBuf>,
    },
    /// Write a new scenario file, `scenarios/FAMILY/NAME.toml`: a skeleton with every required
    /// key and a comment per key, or, with `--from-log`, a scenario that reproduces a Log
    /// (docs/reproduce-a-bug.md). An existing file is never overwritten.
    New {
        /// `FAMILY/NAME`, e.g. `regression/14-partial-replayed`.
        #[arg(value_name = "FAMILY/NAME")]
        name: String,
        /// The Log to reproduce: prompts, scripted responses and failures, workspace files
        /// and expectations come from it.
        #[arg(long, value_name = "LOG")]
        from_log: Option<PathBuf>,
    },
}

/// The flags of a campaign (`run` and `check`): generated scenarios instead of the corpus,
/// judged by invariants and expectations, each failing requirement shrunk to a scenario file.
#[derive(Debug, Clone, Args)]
pub struct CampaignArgs {
    /// Play this many generated scenarios instead of the corpus.
    #[arg(long, value_name = "N")]
    pub generate: Option<usize>,
    /// The generator's seed: the same seed gives the same scenarios in the same order.
    #[arg(long, value_name = "S", default_value_t = 0, requires = "generate")]
    pub seed: u64,
    /// Real seconds all shrinking may take; a failure found after they are spent is kept as
    /// generated.
    #[arg(long, value_name = "SECS", default_value_t = 300, requires = "generate")]
    pub shrink_secs: u64,
    /// Write each reproduction into this folder (default: `scenarios/regression` of the
    /// corpus); `-` writes none.
    #[arg(long, value_name = "DIR", requires = "generate")]
    pub reproductions: Option<PathBuf>,
}

/// The flags of `gauntlet check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The implementation profile (TOML), e.g. `harness/implementations/codex-acp.toml`.
    #[arg(long = "impl", value_name = "PROFILE", required_unless_present = "adapter", conflicts_with = "adapter")]
    pub implementation: Option<PathBuf>,
    /// A shell command implementing the adapter protocol for `--family`.
    #[arg(long, value_name = "CMD", requires = "family")]
    pub adapter: Option<String>,
    /// The lifecycle family the adapter implements.
    #[arg(long, value_parser = family, requires = "adapter")]
    pub family: Option<Family>,
    /// Milliseconds an adapter may take for one scenario.
    #[arg(long, value_name = "MS", default_value_t = 10_000, requires = "adapter")]
    pub deadline_ms: u64,
    /// Only scenarios whose name contains one of these; a filter that is the path of a
    /// scenario file outside the corpus (a campaign's reproduction) plays that file.
    pub filters: Vec<String>,
    /// The expectations file (default: `<profile stem>.expected.toml` beside the profile; none
    /// for an adapter).
    #[arg(long)]
    pub expectations: Option<PathBuf>,
    /// Rewrite the expectations file from this run (keeping written reasons), for review.
    #[arg(long)]
    pub update_expectations: bool,
    /// Play the clean completion only and say what the agent called: whether it reached the
    /// mock, on which wire and with which model, and what to change in its profile.
    #[arg(long, conflicts_with_all = ["update_expectations", "adapter"])]
    pub probe: bool,
    /// Where to write the reports (default: `target/gauntlet/<implementation>`, or
    /// `target/gauntlet/adapter-<family>`).
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// Also write the Markdown report here (e.g. `docs/reports/codex-acp.md`).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Run agents on the host network even when the profile asks for loopback only.
    #[arg(long)]
    pub no_isolation: bool,
    /// Scenarios run at once, each with its own mock, scratch folders and process group
    /// (default: the number of cores); verdicts and report order do not depend on it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
    /// `text`: a line per scenario as it finishes, then the reports' summary; `json`: one
    /// JSON object per verdict, then a summary object (the reports are written either way).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// A campaign of generated scenarios instead of the corpus (docs/campaigns.md).
    #[command(flatten)]
    pub campaign: CampaignArgs,
}

impl Cli {
    /// The plan for this invocation: the corpus from `--root` / `GAUNTLET_ROOT`, else the
    /// nearest one at or above the current folder.
    pub fn plan(&self, bless: bool) -> Result<Plan, RootError> {
        let mut plan = match &self.root {
            Some(root) => Plan::at(root)?,
            None => Plan::find(&std::env::current_dir().map_err(RootError::CurrentDir)?)?,
        };
        plan.bless = bless;
        plan.shard = self.shard;
        Ok(plan)
    }
}

/// `--family`: a lifecycle family by its name (`monitor`, `bridge`).
fn family(name: &str) -> Result<Family, String> {
    Family::ALL.into_iter().find(|family| family.as_str() == name).ok_or_else(|| {
        let names: Vec<&str> = Family::ALL.iter().map(|family| family.as_str()).collect();
        format!("expected one of: {}", names.join(", "))
    })
}
