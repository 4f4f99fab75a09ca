//! The gauntlet harness: drivers, checks, campaigns, goldens and reports, over the judge.
//!
//! # Brief overview
//!
//! `scenario file -> Driver -> Capture -> Judge -> Verdict -> report`
//!
//! What a scenario and a capture are, and the judge itself, are [`gauntlet_judge`]'s; this crate
//! plays scenarios and writes what the judge said.
//!
//! - [`driver`]: runs a scenario against an implementation; [`driver::reference`] is the
//!   reference runtime in process on a paused clock.
//! - [`lifecycle`]: plays the monitor and bridge families, on the reference or through the
//!   adapter protocol.
//! - [`authoring`]: new scenario files, from a skeleton or from a real Log.
//! - [`golden`]: diffs, pending files, accepting.
//! - [`run`]: the chain of driver, judge and golden, shared by the CLI and `cargo test`.
//! - [`report`]: tables over verdicts.
//! - [`profile`], [`check`], [`known_failures`]: checking another agent against the corpus.
//! - [`campaign`]: seeded generated scenarios, confirmed and shrunk.
//! - [`origin`]: what a report is a part of, so only the shards of one run merge.
//! - [`schema`]: JSON Schemas of the TOML files, for editors.
//! - [`interrupt`]: SIGINT and SIGTERM stop every agent, and what finished is written.

pub mod authoring;
pub mod campaign;
pub mod check;
pub mod cli;
pub mod driver;
pub mod golden;
pub mod interrupt;
pub mod isolation;
pub mod known_failures;
pub mod lifecycle;
pub mod origin;
pub mod pool;
pub mod probe;
pub mod profile;
pub mod report;
pub mod run;
pub mod schema;
