//! The gauntlet harness: the only crate that knows what a scenario is.
//!
//! # Brief overview
//!
//! `scenario file -> Driver -> Capture -> Judge -> Verdict -> report`
//!
//! - [`scenario`]: strict TOML scenario files; [`locate`] finds a value's line in one.
//! - [`lifecycle`]: the monitor and bridge families: config plus timed steps, judged as record
//!   streams, and the adapter protocol for other implementations.
//! - [`driver`]: runs a scenario against an implementation; [`driver::reference`] is the
//!   reference runtime in process on a paused clock.
//! - [`capture`]: what a run produced, and the golden file format.
//! - [`audit`]: any NDJSON Log to per-turn terminal states.
//! - [`log_file`]: `gauntlet audit`: a Log file and its child Logs, audited and judged by the
//!   Log-only rules.
//! - [`authoring`]: new scenario files, from a skeleton or from a real Log.
//! - [`judge`]: invariants, expectations and golden findings to a [`verdict::Verdict`].
//! - [`golden`]: diffs, pending files, accepting.
//! - [`run`]: the chain of the above, shared by the CLI and `cargo test`.
//! - [`report`]: tables over verdicts.
//! - [`contract`]: the requirement registry in docs/contract.md; [`coverage`]: every MUST checked.
//! - [`layers`]: the layer check over each crate's modules, as ARCHITECTURE.md lists them;
//!   [`code_map`]: ARCHITECTURE.md's code map names every source file, and only files that exist.
//! - [`profile`], [`check`], [`known_failures`]: checking another agent against the corpus;
//!   [`tool_map`] maps the corpus's abstract tools to the agent's own.
//! - [`schema`]: JSON Schemas of the TOML files, for editors.

pub mod audit;
pub mod authoring;
pub mod campaign;
pub mod capture;
pub mod check;
pub mod cli;
pub mod code_map;
pub mod contract;
pub mod coverage;
mod dialect_pairing;
pub mod driver;
pub mod golden;
pub mod isolation;
pub mod judge;
pub mod known_failures;
pub mod layers;
pub mod lifecycle;
pub mod locate;
pub mod log_file;
pub mod profile;
pub mod report;
pub mod run;
pub mod scenario;
pub mod schema;
pub mod tool_map;
pub mod verdict;
