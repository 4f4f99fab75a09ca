//! Drivers run a Scenario against an implementation and return a [`Capture`].
//!
//! A Driver never fails: whatever goes wrong in the implementation (a crash, a hang, a Log it
//! cannot write) is recorded in [`Capture::faults`] and judged like any other evidence. Both
//! drivers play the scenario as an ACP client ([`conversation`]) against a scripted mock
//! Provider, and assemble the Capture the same way ([`assemble`]).

pub mod acp_client;
pub mod containment;
pub mod conversation;
pub mod external;
pub mod reference;

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use gauntlet_mock_provider::MismatchReason;
use gauntlet_mock_provider::provider::MockProvider;

use crate::driver::conversation::Conversation;
use gauntlet_judge::capture::{Cancel, Capture, Request};
use gauntlet_judge::scenario::Scenario;

/// Runs scenarios against one implementation.
pub trait Driver: Sync {
    /// A short name for reports, e.g. `reference`.
    fn name(&self) -> &str;
    /// Runs one scenario to completion.
    fn drive(&self, scenario: &Scenario) -> Capture;
}

/// How long, in real time, one in-process run may take before it is given up as hung: runs
/// take milliseconds on the paused clock, so this is only ever reached by a broken runtime.
pub const IN_PROCESS_DEADLINE: Duration = Duration::from_secs(60);

/// Runs `work` on a thread of its own and returns its Capture; if it panics, or does not
/// return within `deadline` of real time, a Capture whose fault says so (with the panic's
/// message), so one broken scenario ends as `error` and the run goes on. A thread that loops
/// forever cannot be stopped from outside, only outlived: it is left behind.
pub fn guarded(deadline: Duration, work: impl FnOnce() -> Capture + Send + 'static) -> Capture {
    let (sender, receiver) = mpsc::channel();
    let spawned = std::thread::Builder::new().name("gauntlet-run".to_owned()).spawn(move || {
        let _ = sender.send(std::panic::catch_unwind(AssertUnwindSafe(work)));
    });
    let fault = |message: String| Capture { faults: vec![message], ..Capture::default() };
    if let Err(error) = spawned {
        return fault(format!("cannot start a thread for the run: {error}"));
    }
    match receiver.recv_timeout(deadline) {
        Ok(Ok(capture)) => capture,
        Ok(Err(panic)) => {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("a panic without a message");
            fault(format!("the run panicked: {message}"))
        }
        Err(RecvTimeoutError::Timeout) => fault(format!(
            "the run did not return within {} ms of real time: the runtime hangs or loops; it was left behind",
            deadline.as_millis()
        )),
        Err(RecvTimeoutError::Disconnected) => fault("the run's thread ended without a result".to_owned()),
    }
}

/// Why a scenario's workspace could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    /// A workspace file or the preloaded Log could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The scenario preloads a Log into an implementation that keeps none.
    #[error("the scenario preloads a Log, and this implementation keeps none")]
    NoLog,
}

/// Writes the scenario's workspace files, and its preloaded Log at `preload_path` if given.
pub fn prepare_workspace(
    scenario: &Scenario,
    workspace: &Path,
    preload_path: Option<&Path>,
) -> Result<(), WorkspaceError> {
    let write = |path: &Path, content: &str| {
        path.parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .and_then(|_| std::fs::write(path, content))
            .map_err(|source| WorkspaceError::Write { path: path.to_owned(), source })
    };
    for (relative, content) in &scenario.workspace {
        write(&workspace.join(relative), content)?;
    }
    match (&scenario.log, preload_path) {
        (Some(preload), Some(path)) => write(path, &preload.ndjson),
        (Some(_), None) => Err(WorkspaceError::NoLog),
        (None, _) => Ok(()),
    }
}

/// The Logs beside the root's (child Sessions keep theirs in the same folder), by Session id.
fn child_logs(root_log: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut children = std::collections::BTreeMap::new();
    let Some(folder) = root_log.parent() else { return children };
    let Ok(entries) = std::fs::read_dir(folder) else { return children };
    for path in entries.flatten().map(|entry| entry.path()) {
        if path == root_log || path.extension().is_none_or(|ext| ext != "ndjson") {
            continue;
        }
        let Some(id) = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()) else { continue };
        if let Ok(text) = std::fs::read_to_string(&path) {
            children.insert(id, text.lines().map(str::to_owned).collect());
        }
    }
    children
}

/// The Capture of a run: the conversation, the Log at `log_path` (if the implementation keeps
/// one) and what the mock saw so far. The client's cancels go on the mock's clock, beside the
/// times of its requests.
pub fn assemble(conversation: Conversation, log_path: Option<&Path>, mock: &MockProvider) -> Capture {
    let report = mock.report();
    let mut capture = Capture {
        dialect: mock.dialect(),
        cancels: conversation
            .cancels
            .iter()
            .map(|cancel| Cancel {
                turn: cancel.turn,
                sent: mock.since_start(cancel.sent),
                impatient: cancel.impatient,
                by_request: cancel.by_request,
            })
            .collect(),
        acp: conversation.live,
        acp_load: conversation.load,
        reported: conversation.reported,
        torn_tail: conversation.torn_tail,
        faults: conversation.faults,
        images_withheld: conversation.images_withheld,
        ..Capture::default()
    };
    if let Some(path) = log_path {
        match std::fs::read_to_string(path) {
            Ok(text) => capture.log = text.lines().map(str::to_owned).collect(),
            Err(error) => capture.faults.push(format!("cannot read the Log {}: {error}", path.display())),
        }
        capture.children = child_logs(path);
    }
    capture.timings = report.journal.iter().map(|entry| entry.timing).collect();
    let dialect = mock.dialect();
    capture.requests = report
        .journal
        .into_iter()
        .map(|entry| {
            // A model the body does not name (Gemini's is in the path) is recorded beside it:
            // read from the path alone, so no body is rebuilt for it.
            let (_, endpoint) = gauntlet_mock_provider::provider::split_route(&entry.path);
            let endpoint = endpoint.split('?').next().unwrap_or_default();
            let body = gauntlet_mock_provider::Body::from(serde_json::Value::Null);
            let asked = gauntlet_mock_provider::dialect::Asked { path: endpoint, body: &body };
            Request {
                route: entry.route,
                response_index: entry.response_index,
                model: dialect.model(&asked),
                body: entry.body,
                turn: entry.turn,
                unplaced: entry.unplaced,
                status: entry.status,
            }
        })
        .collect();
    // Grouped by route, root first, each route in arrival order: concurrent children
    // interleave, and the golden should not depend on how. Each timing moves with its request.
    let mut paired: Vec<_> =
        std::mem::take(&mut capture.requests).into_iter().zip(std::mem::take(&mut capture.timings)).collect();
    paired.sort_by_key(|(request, _)| (request.route != gauntlet_mock_provider::ROOT, request.route.clone()));
    (capture.requests, capture.timings) = paired.into_iter().unzip();
    capture.unconsumed = report
        .unconsumed
        .iter()
        .flat_map(|gap| (gap.index..gap.index + gap.remaining).map(|index| (gap.route.clone(), index)))
        .collect();
    capture.unmatched = report.mismatches.iter().map(ToString::to_string).collect();
    // An agent on another wire format is a setup error, not evidence about any requirement:
    // the finding names what it spoke and what it was told to speak.
    capture.faults.extend(
        report
            .mismatches
            .iter()
            .filter(|mismatch| matches!(mismatch.reason, MismatchReason::WrongDialect { .. }))
            .map(ToString::to_string),
    );
    capture.faults.dedup();
    capture.side_requests = report.side_requests;
    capture
}

/// The program `name` shipped beside the running executable: in its folder, or the folder
/// above (a test binary of this crate runs from `target/<profile>/deps/`).
pub fn shipped(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors().skip(1).take(2).map(|dir| dir.join(name)).find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panicking_run_is_a_fault_with_its_message() {
        let capture = guarded(Duration::from_secs(5), || panic!("overflow in the budget"));
        assert_eq!(capture.faults, ["the run panicked: overflow in the budget"]);
    }

    #[test]
    fn a_run_that_never_returns_is_a_fault_after_the_deadline() {
        let capture = guarded(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(3600));
            Capture::default()
        });
        assert_eq!(
            capture.faults,
            ["the run did not return within 50 ms of real time: the runtime hangs or loops; it was left behind"]
        );
    }

    #[test]
    fn a_run_that_returns_gives_its_capture() {
        let capture = guarded(Duration::from_secs(5), || Capture { stderr_tail: "ok".into(), ..Capture::default() });
        assert_eq!(capture.stderr_tail, "ok");
    }
}
