//! Another implementation as a command: the adapter protocol over stdin and stdout
//! (docs/adapters.md).
//!
//! The command runs under `sh -c` in its own process group. It gets the scenario's lines on
//! stdin, which then closes; it must write its records to stdout and exit. Whatever goes wrong
//! (it cannot start, writes garbage, floods, hangs past the deadline, exits non-zero) is a
//! fault of that scenario with the evidence, and the run goes on; nothing it started survives
//! (driver/containment.rs), and what it left running is named.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdout, Command};

use crate::driver::containment::Containment;
use crate::driver::external::{Group, Tail, stderr_evidence, stop};
use gauntlet_judge::lifecycle::LifecycleScenario;
use gauntlet_judge::lifecycle::capture::LifecycleCapture;

/// More output than this from one scenario is flooding.
const OUTPUT_LIMIT: usize = 8 * 1024 * 1024;

/// An implementation reached through the adapter protocol.
#[derive(Debug, Clone)]
pub struct Adapter {
    /// A shell command line, e.g. `python3 monitor_adapter.py`.
    pub command: String,
    /// How long one scenario may take, from start to the end of output.
    pub deadline: Duration,
    /// How long it may take to exit after its output ended, and after SIGTERM.
    pub grace: Duration,
}

impl Adapter {
    /// An adapter with a 10 s deadline per scenario.
    pub fn new(command: &str) -> Adapter {
        Adapter { command: command.to_owned(), deadline: Duration::from_secs(10), grace: Duration::from_millis(500) }
    }

    /// Runs one scenario through the command.
    pub fn run(&self, scenario: &LifecycleScenario) -> LifecycleCapture {
        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime.block_on(self.drive(scenario)),
            Err(error) => LifecycleCapture {
                faults: vec![format!("cannot start a tokio runtime: {error}")],
                ..Default::default()
            },
        }
    }

    /// The command line under `sh -c`, contained, in its own process group, its stdin, stdout
    /// and stderr piped.
    fn contained_command(&self, containment: &Containment) -> Command {
        let mut command = Command::from(containment.command(Path::new("sh")));
        command
            .arg("-c")
            .arg(&self.command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        command
    }

    async fn drive(&self, scenario: &LifecycleScenario) -> LifecycleCapture {
        let containment = Containment::new();
        let mut child = match self.contained_command(&containment).spawn() {
            Ok(child) => child,
            Err(error) => {
                let fault = format!("cannot start `{}`: {error}", self.command);
                return LifecycleCapture { faults: vec![fault], ..Default::default() };
            }
        };
        let group = Group::of(&child);
        let stderr = Tail::default();
        let (Some(mut stdin), Some(stdout), Some(err)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return LifecycleCapture {
                faults: vec!["the adapter's pipes were not set up".to_owned()],
                ..Default::default()
            };
        };
        stderr.keep(err);
        let input: String = scenario.input_lines().iter().map(|line| format!("{line}\n")).collect();
        // Written from its own task, so an adapter that answers before reading everything (or
        // never reads) cannot deadlock the run; a broken pipe is the adapter's business.
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
        });
        let mut lines = Vec::new();
        let mut faults = Vec::new();
        let read = tokio::select! {
            read = tokio::time::timeout(self.deadline, read_output(stdout, &mut lines)) => read,
            stop = crate::interrupt::stopped() => Ok(Err(format!("gauntlet was stopped by {stop}"))),
        };
        match read {
            Ok(Ok(())) => {}
            Ok(Err(fault)) => faults.push(fault),
            Err(_) => faults.push(format!(
                "no end of output within the deadline of {} ms (an adapter must exit when its input closes); \
                 it was stopped after {} lines",
                self.deadline.as_millis(),
                lines.len()
            )),
        }
        writer.abort();
        if let Err(fault) = stop(child, group, self.grace, "adapter").await {
            faults.push(fault.to_string());
        }
        let mut capture = LifecycleCapture::from_lines(scenario, &lines);
        capture.faults.extend(faults);
        capture.leftovers = containment.end();
        capture.stderr_tail = stderr.collect().await;
        if !capture.faults.is_empty() {
            capture.faults.extend(stderr_evidence("adapter", &capture.stderr_tail));
        }
        capture
    }
}

/// Reads the adapter's output into `lines` until it ends; `Err` when it floods or is not
/// readable text.
async fn read_output(stdout: ChildStdout, lines: &mut Vec<String>) -> Result<(), String> {
    // At most one byte past the limit is ever read, so a single endless line is flooding too,
    // in bounded memory.
    let mut reader = BufReader::new(stdout.take(OUTPUT_LIMIT as u64 + 1)).lines();
    let mut n_bytes = 0;
    loop {
        match reader.next_line().await {
            Ok(Some(line)) => {
                n_bytes += line.len() + 1;
                if n_bytes > OUTPUT_LIMIT {
                    return Err(format!("more than {OUTPUT_LIMIT} bytes of output (flooding)"));
                }
                lines.push(line);
            }
            Ok(None) => return Ok(()),
            Err(error) => return Err(format!("unreadable output after line {}: {error}", lines.len())),
        }
    }
}
