//! A scripted LLM provider for the conformance gauntlet: it answers coding-agent runtimes in a
//! real Provider wire format ([`Dialect`]: OpenAI Responses, Chat Completions, ...), byte for
//! byte, and with faults.
//!
//! - [`Script`] (from a script or scenario TOML) lists, per route, the [`Response`]s to serve.
//! - [`MockProvider`] decides every answer ([`MockProvider::respond`]) and records a journal,
//!   mismatches and unconsumed responses ([`MockProvider::report`]).
//! - [`Dialect::answer`] turns a response into an [`Answer`]: status, headers and [`Step`]s
//!   (bytes, pauses, aborts), one module per dialect under [`dialect`].
//! - [`Dialect::read`] reads a request body into the dialect-neutral [`Conversation`].
//! - The journal keeps each request body as an [`Increment`] to the previous one of its route,
//!   so a long conversation is not kept once per request.
//! - [`serve`] streams those steps over real loopback HTTP; [`play`] streams the same bytes
//!   over an in-process channel that runs on Tokio's (pausable) clock. Both consume a reply
//!   through a [`Playback`], which notes in the journal when and how its body ended ([`Timing`]).
//!
//! - [`SideRequest`]s (title generation, classifiers) get canned answers outside the journal.
//! - [`Speed`] scales the pauses `mock-provider serve` plays on the real clock (`--speed`).
//! - [`Recorder`] sits between an agent and a real Provider and writes what it answered as a
//!   scenario the mock replays.
//!
//! The provider knows nothing about the runtime under test and is strict: a request no script
//! answers gets a 4xx JSON body saying what was expected.

pub mod beat;
pub mod body;
pub mod conversation;
pub mod dialect;
#[cfg(feature = "server")]
pub mod in_process;
pub mod increment;
pub mod journal;
#[cfg(feature = "server")]
pub mod mcp;
#[cfg(feature = "server")]
pub mod provider;
#[cfg(feature = "server")]
pub mod record;
pub mod script;
#[cfg(feature = "server")]
pub mod server;
#[cfg(feature = "server")]
pub mod sessions;
pub mod side;
pub mod speed;
pub mod tool_names;
pub mod tool_server;

pub use body::Body;
pub use conversation::{Conversation, Message, ViewError};
pub use dialect::{Answer, Asked, Dialect, EncodeContext, Step, UnknownDialect};
#[cfg(feature = "server")]
pub use in_process::{Chunk, Playback, play};
pub use increment::{Changes, Increment};
pub use journal::{After, Ended, JournalEntry, Mismatch, MismatchReason, StreamEnd, Timing};
#[cfg(feature = "server")]
pub use provider::{EndRecorder, MockProvider, MockReply, MockReport, MockRequest, SESSION_HEADER, Unconsumed};
#[cfg(feature = "server")]
pub use record::{RecordError, Recorder, Recording, Upstream};
pub use script::{
    Call, Ending, Exhausted, Pause, RETRY_CAP, ROOT, Reasoning, Response, Script, ScriptError, ToolOutcome, Usage,
};
#[cfg(feature = "server")]
pub use server::{Responder, ServerHandle, serve};
#[cfg(feature = "server")]
pub use sessions::Sessions;
pub use side::{SideReply, SideRequest};
pub use speed::{BadSpeed, Speed};
