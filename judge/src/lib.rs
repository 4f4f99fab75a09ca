//! The gauntlet judge: what a scenario is, what a run captured, and whether it tells the truth.
//!
//! # Brief overview
//!
//! `scenario file -> (a driver, elsewhere) -> Capture -> judge -> Verdict`
//!
//! - [`scenario`]: strict TOML scenario files; [`locate`] finds a value's line in one.
//! - [`lifecycle`]: the monitor and bridge families: config plus timed steps, judged as record
//!   streams.
//! - [`capture`]: what a run produced, and the golden file format.
//! - [`audit`]: any NDJSON Log to per-turn terminal states.
//! - [`log_file`]: a Log file and its child Logs, audited and judged by the Log-only rules.
//! - [`log_line`]: a Log line and typed views of the payloads the judge reads.
//! - [`judge`]: invariants, expectations and golden findings to a [`verdict::Verdict`]; every
//!   invariant, of either family, is a [`rule::Invariant`].
//! - [`contract`]: the requirement registry in docs/contract.md.
//! - [`tool_map`] maps the corpus's abstract tools to an agent's own.
//! - [`published_schema`]: the ACP JSON schema as published, vendored, and a message read
//!   against it.
//!
//! **Architecture invariant:** no IO but reading files, no async runtime, no HTTP, no process
//! control: a third party judges its own captures with this crate alone. Drivers, checks,
//! campaigns, goldens and reports are the `gauntlet` crate's.

pub mod audit;
pub mod capture;
pub mod contract;
pub mod event_kind;
pub mod judge;
pub mod lifecycle;
pub mod locate;
pub mod log_file;
pub mod log_line;
pub mod published_schema;
pub mod rule;
pub mod scenario;
pub mod tool_map;
pub mod verdict;
