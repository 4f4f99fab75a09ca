//! Command-line flags, resolved into a [`Plan`] before any work.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::run::Plan;

/// gauntlet: does an agent runtime tell the truth about how a turn ended?
#[derive(Debug, Parser)]
#[command(name = "gauntlet", version, about, long_about = None)]
pub struct Cli {
    /// The folder holding `scenarios/` and `golden/` (default: this repository).
    #[arg(long, global = true)]
    pub root: Option<PathBuf>,
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
    },
    /// Accept pending golden files: rename each `<file>.new` over `<file>`.
    Accept,
    /// List scenario names.
    List,
}

impl Cli {
    /// The plan for this invocation.
    pub fn plan(&self, bless: bool) -> Plan {
        let mut plan = Plan::repository();
        if let Some(root) = &self.root {
            plan.root.clone_from(root);
        }
        plan.bless = bless;
        plan
    }
}
