//! The gauntlet reference agent runtime: the seeds' agent contracts, implemented small and served over ACP.
//!
//! # Brief overview
//!
//! - [`event`]: the Event envelope, [`EventType`], [`TerminalStatus`], [`ErrorKind`].
//! - [`log`]: the append-only NDJSON [`Log`]; a torn tail is data ([`TornTail`]).
//! - [`replay`]: History to Responses `input` items; audit-only evidence never replays.
//! - [`provider`]: the Provider client in four wire formats: request bodies from the replay fold,
//!   streamed answers decoded to dialect-neutral evidence, retries, the [`Transport`] seam.
//! - [`session`] and [`turn`]: one Turn at a time, exactly one terminal outcome ([`TurnOutcome`],
//!   with [`CancelHandle`] in [`control`]).
//! - [`compaction`]: when the Session compacts History at its context budget, and the record.
//! - [`recovery`]: on resume, a Turn a crash left open is closed `interrupted` first.
//! - [`tools`]: the tool seam ([`Toolbox`]) and `read`, `write`, `list` over the workspace folder.
//! - [`subagents`]: child Sessions the model spawns, waits on and closes; their lifecycle.
//! - [`workflows`]: `run_workflow`: steps as Subagents in waves, checkpoints, honest partial results.
//! - [`delegation`]: Subagents and Workflows as one tool set, registered into a delegating Session.
//! - [`ids`]: injectable ids and a clock, so a run is deterministic.
//! - [`canonical`]: canonical JSON (sorted keys), for everything others read.
//!
//! - [`acp`]: the runtime as an ACP agent; [`acp::stop_reason`] tells how a Turn ended.
//!
//! The runtime knows nothing about scenarios, the harness or the mock provider. The lifecycle
//! monitor and the app-server bridge, the seeds' other two contracts, are crates of their own
//! (`gauntlet-monitor`, `gauntlet-bridge`).

#[cfg(feature = "runtime")]
pub mod acp;
pub mod canonical;
#[cfg(feature = "runtime")]
pub mod compaction;
#[cfg(feature = "runtime")]
pub mod control;
#[cfg(feature = "runtime")]
pub mod delegation;
pub mod event;
#[cfg(feature = "runtime")]
pub mod ids;
#[cfg(feature = "runtime")]
pub mod log;
#[cfg(feature = "runtime")]
pub mod provider;
#[cfg(feature = "runtime")]
pub mod recovery;
#[cfg(feature = "runtime")]
pub mod replay;
pub mod resource;
#[cfg(feature = "runtime")]
pub mod session;
#[cfg(feature = "runtime")]
pub mod subagents;
#[cfg(feature = "runtime")]
pub mod tools;
#[cfg(feature = "runtime")]
pub mod turn;
pub mod workflows;

#[cfg(feature = "runtime")]
pub use control::{CancelHandle, CancelSignal, TurnOutcome};
pub use event::{ErrorKind, Event, EventType, Payload, TerminalStatus};
#[cfg(feature = "runtime")]
pub use log::{Log, LogError, TornTail};
#[cfg(feature = "runtime")]
pub use provider::{Provider, ProviderConfig, Transport};
#[cfg(feature = "runtime")]
pub use session::{Session, SessionConfig};
#[cfg(feature = "runtime")]
pub use tools::Toolbox;
