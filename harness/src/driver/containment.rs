//! Nothing an agent starts outlives its scenario, whatever it does to its session, group or
//! environment (issue 40).
//!
//! Every process gauntlet starts for a scenario (the agent, its version probe, an adapter)
//! starts through `gauntlet-contain` ([`helper`]), which puts all it starts where gauntlet can
//! end it at once, the best way this machine allows ([`Method`]):
//!
//! - a PID namespace of its own (root, or unprivileged user namespaces), with its own `/proc`:
//!   the program and everything it starts live in a namespace whose init is a reaper of
//!   gauntlet's; killing that init kills every process in it, and no process leaves a PID
//!   namespace;
//! - else a cgroup v2 of the scenario's own, ended whole through `cgroup.kill`;
//! - else the mark every process of a scenario carries in its environment,
//!   `GAUNTLET_CONTAINMENT=<token>`, swept from `/proc` until no marked process remains (a
//!   process that clears its environment escapes only this one).
//!
//! Whichever it is, each process still running when the scenario ends is named (its command
//! line) before it is killed, for the report's warning.

pub mod helper;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// The environment variable that marks a play's processes.
pub const MARK: &str = "GAUNTLET_CONTAINMENT";

/// The helper every contained process starts through, shipped beside gauntlet.
pub const HELPER: &str = "gauntlet-contain";

/// How long ending a containment waits for what it killed to be gone.
const END_WAIT: Duration = Duration::from_secs(5);

/// How the processes of a scenario are held, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// A PID namespace per started process, whose init gauntlet kills: nothing escapes it.
    PidNamespace,
    /// A cgroup v2 per scenario, killed whole: only a process that moves itself out escapes.
    Cgroup,
    /// The environment mark, swept until none is left: a process that clears its environment
    /// escapes it.
    MarkedSweep,
}

impl Method {
    /// What a report says of it.
    pub fn describe(self) -> &'static str {
        match self {
            Method::PidNamespace => "each agent's processes in a PID namespace of their own",
            Method::Cgroup => "each scenario's processes in a cgroup of their own",
            Method::MarkedSweep => "each scenario's processes found by the mark in their environment",
        }
    }

    /// What escapes it.
    pub fn weakness(self) -> &'static str {
        match self {
            Method::PidNamespace => "nothing escapes",
            Method::Cgroup => "a process that moves itself to another cgroup escapes",
            Method::MarkedSweep => "a process that clears its environment escapes",
        }
    }

    /// The containment this machine allows, found once per process.
    pub fn here() -> Method {
        // A cgroup first: it holds every process without changing what the agent sees, where a
        // PID namespace with its own /proc kept codex-acp from stopping when its input closed
        // (measured: every scenario ended with it killed).
        match host() {
            Host { cgroup: Some(_), .. } => Method::Cgroup,
            Host { namespace: Some(_), .. } => Method::PidNamespace,
            _ => Method::MarkedSweep,
        }
    }
}

/// What this machine allows: the helper, the namespace mode it can enter (none without the
/// helper), and the folder a scenario's cgroup can be made in.
#[derive(Debug, Default)]
struct Host {
    helper: Option<PathBuf>,
    namespace: Option<&'static str>,
    cgroup: Option<PathBuf>,
}

fn host() -> &'static Host {
    static HOST: OnceLock<Host> = OnceLock::new();
    HOST.get_or_init(|| crate::driver::shipped(HELPER).map_or_else(Host::default, |helper| detect(&helper)))
}

/// Asks the helper what the kernel allows: a PID namespace, plain or in a user namespace, and
/// joining a cgroup of gauntlet's (a probe cgroup made and removed for the question).
fn detect(helper: &Path) -> Host {
    let probe = cgroup_parent().map(|parent| parent.join(format!("gauntlet-probe-{}", std::process::id())));
    let probe = probe.filter(|dir| std::fs::create_dir(dir).is_ok());
    let output = Command::new(helper).arg(helper::PROBE).args(&probe).output();
    let answer = output.map(|output| String::from_utf8_lossy(&output.stdout).into_owned()).unwrap_or_default();
    let words: Vec<&str> = answer.split_whitespace().collect();
    let cgroup = match (&probe, words.get(1)) {
        (Some(dir), Some(&helper::CGROUP)) if dir.join("cgroup.kill").is_file() => dir.parent().map(Path::to_owned),
        _ => None,
    };
    if let Some(dir) = &probe {
        let _ = std::fs::remove_dir(dir);
    }
    let namespace =
        [helper::PID_NAMESPACE, helper::USER_NAMESPACE].into_iter().find(|mode| words.first() == Some(mode));
    Host { helper: Some(helper.to_owned()), namespace, cgroup }
}

/// gauntlet's own cgroup v2 folder, when the unified hierarchy is mounted.
fn cgroup_parent() -> Option<PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|line| line.strip_prefix("0::"))?.trim_start_matches('/').to_owned();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // `id parent major:minor root mount-point options ... - fstype source options`
    let mount = mounts.lines().find_map(|line| {
        let (fields, rest) = line.split_once(" - ")?;
        (rest.split_whitespace().next() == Some("cgroup2")).then(|| fields.split_whitespace().nth(4))?
    })?;
    Some(Path::new(mount).join(path))
}

/// One play's containment.
#[derive(Debug)]
pub struct Containment {
    token: String,
    /// How it holds its processes.
    method: Method,
    /// Its cgroup, when it holds them in one.
    cgroup: Option<PathBuf>,
}

impl Default for Containment {
    fn default() -> Self {
        Containment::new()
    }
}

impl Containment {
    /// A containment no other play of this process, or of another gauntlet, shares, the
    /// strongest this machine allows.
    pub fn new() -> Containment {
        Containment::with(Method::here())
    }

    /// A containment that only marks and sweeps, whatever the machine allows.
    pub fn marked() -> Containment {
        Containment::with(Method::MarkedSweep)
    }

    /// A containment by `method`, or by the mark alone when its cgroup cannot be made.
    fn with(method: Method) -> Containment {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let token = format!("{}-{n}", std::process::id());
        let cgroup = match (&host().cgroup, method) {
            (Some(parent), Method::Cgroup) => {
                Some(parent.join(format!("gauntlet-{token}"))).filter(|dir| std::fs::create_dir(dir).is_ok())
            }
            _ => None,
        };
        let method = if method == Method::Cgroup && cgroup.is_none() { Method::MarkedSweep } else { method };
        Containment { token, method, cgroup }
    }

    /// How it holds its processes.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The `(name, value)` each of the play's processes is started with.
    pub fn env(&self) -> (&'static str, &str) {
        (MARK, &self.token)
    }

    /// A command that runs `program` inside this containment, marked; the caller adds its
    /// arguments and the rest.
    pub fn command(&self, program: &Path) -> Command {
        let host = host();
        let mut command = match (&host.helper, host.namespace, self.method, &self.cgroup) {
            (Some(helper), Some(mode), Method::PidNamespace, _) => {
                let mut command = Command::new(helper);
                command.args([mode, "--"]);
                command
            }
            (Some(helper), _, Method::Cgroup, Some(dir)) => {
                let mut command = Command::new(helper);
                command.arg(helper::CGROUP).arg(dir).arg("--");
                command
            }
            _ => Command::new(program),
        };
        if self.method != Method::MarkedSweep {
            command.arg(program);
        }
        command.env(MARK, &self.token);
        command
    }

    /// Ends every process still held, once the play's agents were stopped, and returns each
    /// one's command line, for the report's warning.
    pub fn end(&self) -> Vec<String> {
        match self.method {
            Method::PidNamespace => self.end_namespaces(),
            Method::Cgroup => self.cgroup.as_deref().map(end_cgroup).unwrap_or_default(),
            Method::MarkedSweep => self.sweep(),
        }
    }

    /// Names every process of the play's namespaces but their inits, then kills the inits,
    /// which takes the rest with them, and waits until they are gone.
    fn end_namespaces(&self) -> Vec<String> {
        let mark = self.mark();
        let inits: Vec<Process> =
            processes().filter(|process| process.is_namespace_init() && process.bears(&mark)).collect();
        let namespaces: Vec<String> = inits.iter().filter_map(Process::pid_namespace).collect();
        let left = processes()
            .filter(|process| !inits.iter().any(|init| init.pid == process.pid))
            .filter(|process| process.pid_namespace().is_some_and(|ns| namespaces.contains(&ns)))
            .filter(Process::is_live);
        let named: Vec<String> = left.map(|process| process.command()).collect();
        for init in &inits {
            let _ = kill(Pid::from_raw(init.pid), Signal::SIGKILL);
        }
        until_gone(|| inits.iter().any(Process::is_live));
        named
    }

    /// Kills every process bearing the mark, again until none is left (a daemon that keeps
    /// forking), a bounded number of times.
    fn sweep(&self) -> Vec<String> {
        let mark = self.mark();
        let mut killed: Vec<(i32, String)> = Vec::new();
        let deadline = Instant::now() + END_WAIT;
        loop {
            let left: Vec<Process> = processes().filter(|process| process.bears(&mark) && process.is_live()).collect();
            if left.is_empty() || Instant::now() > deadline {
                break;
            }
            for process in left {
                // Named before it is killed: a dying process's command line reads empty.
                if !killed.iter().any(|(pid, _)| *pid == process.pid) {
                    killed.push((process.pid, process.command()));
                }
                let _ = kill(Pid::from_raw(process.pid), Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        killed.sort();
        killed.into_iter().map(|(_, command)| command).collect()
    }

    fn mark(&self) -> String {
        format!("{MARK}={}", self.token)
    }
}

impl Drop for Containment {
    /// A play abandoned (a panic, gauntlet stopped) ends its processes all the same.
    fn drop(&mut self) {
        self.end();
        if let Some(dir) = &self.cgroup {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// Names the processes of cgroup `dir`, kills them all at once, and waits until it is empty.
fn end_cgroup(dir: &Path) -> Vec<String> {
    let members = || -> Vec<Process> {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        procs.lines().filter_map(|line| line.trim().parse().ok()).map(Process::of).filter(Process::is_live).collect()
    };
    let named: Vec<String> = members().iter().map(Process::command).collect();
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    until_gone(|| !members().is_empty());
    named
}

/// Waits, a bounded time, until `alive` is false.
fn until_gone(alive: impl Fn() -> bool) {
    let deadline = Instant::now() + END_WAIT;
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One process, as `/proc` shows it.
#[derive(Debug, Clone)]
pub(crate) struct Process {
    pub(crate) pid: i32,
    dir: PathBuf,
}

/// Every process `/proc` shows.
pub(crate) fn processes() -> impl Iterator<Item = Process> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .map(Process::of)
}

impl Process {
    fn of(pid: i32) -> Process {
        Process { pid, dir: Path::new("/proc").join(pid.to_string()) }
    }

    /// `state ppid pgrp ...`, the fields after the command name (which may hold spaces and
    /// parentheses).
    fn stat(&self) -> Option<Vec<String>> {
        let stat = std::fs::read_to_string(self.dir.join("stat")).ok()?;
        Some(stat.rsplit_once(')')?.1.split_whitespace().map(str::to_owned).collect())
    }

    /// Alive and not a zombie.
    pub(crate) fn is_live(&self) -> bool {
        self.stat().is_some_and(|fields| fields.first().is_some_and(|state| state != "Z" && state != "X"))
    }

    /// Its process group.
    pub(crate) fn group(&self) -> Option<i32> {
        self.stat()?.get(2)?.parse().ok()
    }

    /// Whether its environment holds `pair` (`NAME=value`).
    fn bears(&self, pair: &str) -> bool {
        let environ = std::fs::read(self.dir.join("environ")).unwrap_or_default();
        environ.split(|byte| *byte == 0).any(|entry| entry == pair.as_bytes())
    }

    /// Its PID namespace, as the kernel names it (`pid:[4026532]`).
    fn pid_namespace(&self) -> Option<String> {
        let link = std::fs::read_link(self.dir.join("ns/pid")).ok()?;
        Some(link.to_string_lossy().into_owned())
    }

    /// Whether it is the init (pid 1) of a PID namespace below this one.
    fn is_namespace_init(&self) -> bool {
        let status = std::fs::read_to_string(self.dir.join("status")).unwrap_or_default();
        let nspid = status.lines().find_map(|line| line.strip_prefix("NSpid:")).unwrap_or_default();
        let ids: Vec<&str> = nspid.split_whitespace().collect();
        ids.len() > 1 && ids.last() == Some(&"1")
    }

    /// Its command line, the arguments joined by spaces; for a process whose command line is
    /// already gone (one exiting as it is named), its name in brackets, as `ps` shows it.
    fn command(&self) -> String {
        let raw = std::fs::read(self.dir.join("cmdline")).unwrap_or_default();
        let words: Vec<String> = raw
            .split(|byte| *byte == 0)
            .filter(|word| !word.is_empty())
            .map(|word| String::from_utf8_lossy(word).into_owned())
            .collect();
        if words.is_empty() {
            let name = std::fs::read_to_string(self.dir.join("comm")).unwrap_or_default();
            return format!("[{}]", name.trim());
        }
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live processes whose command line is `sleep <seconds>`.
    fn sleepers(seconds: u32) -> usize {
        let command = format!("sleep {seconds}");
        processes().filter(|process| process.is_live() && process.command() == command).count()
    }

    /// A process that has exited but is not yet reaped keeps its name and loses its command
    /// line: it is named by the name, not as an empty command.
    #[test]
    fn a_process_without_a_command_line_is_named_by_its_name() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let cmdline = format!("/proc/{pid}/cmdline");
        until(|| std::fs::read(&cmdline).is_ok_and(|raw| raw.is_empty()));
        assert_eq!(Process::of(pid).command(), "[true]");
        child.wait().unwrap();
    }

    /// Waits, a bounded time, until `ready`.
    fn until(ready: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ready() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A daemon that leaves its session and group, clears its environment and forks again ends
    /// with its containment, named, in a PID namespace and in a cgroup alike, whichever this
    /// machine allows.
    #[test]
    fn a_daemon_that_clears_its_environment_ends_with_its_containment() {
        for (method, first) in [(Method::PidNamespace, 9101), (Method::Cgroup, 9103)] {
            let available = match method {
                Method::PidNamespace => host().namespace.is_some(),
                _ => host().cgroup.is_some(),
            };
            if !available {
                eprintln!("{method:?} is not available here: not tried");
                continue;
            }
            let containment = Containment::with(method);
            assert_eq!(containment.method(), method);
            let (a, b) = (first, first + 1);
            let daemon =
                format!("setsid env -i /bin/sh -c '(sleep {a} &); exec sleep {b}' </dev/null >/dev/null 2>&1 &");
            let status = containment.command(Path::new("/bin/sh")).args(["-c", &daemon]).status();
            assert!(status.is_ok_and(|status| status.success()), "{method:?}");
            until(|| sleepers(a) + sleepers(b) == 2);
            let mut named = containment.end();
            named.sort();
            assert_eq!(named, [format!("sleep {a}"), format!("sleep {b}")], "{method:?}");
            assert_eq!(sleepers(a) + sleepers(b), 0, "{method:?}: the daemon outlived its containment");
        }
    }

    /// In a PID namespace, `/proc` is the namespace's: a process's own pid names its entry
    /// (an agent that reads `/proc/<its pid>` reads itself, not the host's process of that pid).
    #[test]
    fn a_process_in_a_pid_namespace_finds_itself_in_proc() {
        let containment = Containment::with(Method::PidNamespace);
        if containment.method() != Method::PidNamespace || host().namespace.is_none() {
            eprintln!("no PID namespace here: not tried");
            return;
        }
        let output = containment.command(Path::new("/bin/sh")).args(["-c", "cat /proc/$$/comm"]).output();
        let comm = output.map(|output| String::from_utf8_lossy(&output.stdout).into_owned()).unwrap_or_default();
        assert_eq!(comm.trim(), "sh");
        assert!(containment.end().is_empty());
    }

    /// The sweep goes on until no marked process is left: a marked daemon that keeps forking
    /// is gone when it returns.
    #[test]
    fn the_sweep_ends_a_daemon_that_keeps_forking() {
        let containment = Containment::marked();
        let daemon = "setsid /bin/sh -c 'while :; do sleep 9105 & sleep 0.001; done' </dev/null >/dev/null 2>&1 &";
        let status = containment.command(Path::new("/bin/sh")).args(["-c", daemon]).status();
        assert!(status.is_ok_and(|status| status.success()));
        until(|| sleepers(9105) > 2);
        let named = containment.end();
        // What it killed is named; which fork was caught mid-exec (a shell, or its sleep) is
        // the scheduler's, so only that something was.
        assert!(!named.is_empty());
        let mark = containment.mark();
        assert!(processes().all(|process| !(process.bears(&mark) && process.is_live())));
    }

    /// A process that left its agent's session and group is still found by its mark, killed,
    /// and named; one without the mark is left alone.
    #[test]
    fn a_detached_marked_process_is_killed_and_named() {
        let containment = Containment::marked();
        let (name, value) = containment.env();
        let mut detached = std::process::Command::new("setsid")
            .args(["sleep", "321"])
            .env(name, value)
            .spawn()
            .unwrap_or_else(|error| panic!("{error}"));
        // Bounded, so that it is gone soon whatever becomes of this test.
        let mut unmarked =
            std::process::Command::new("sleep").arg("20").spawn().unwrap_or_else(|error| panic!("{error}"));
        let mark = containment.mark();
        // setsid forks when it leads a group already; wait until the sleep itself bears the mark.
        for _ in 0..500 {
            if processes().any(|process| process.bears(&mark) && process.command() == "sleep 321") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let killed = containment.end();
        let spared = unmarked.try_wait().ok().flatten().is_none();
        let _ = unmarked.kill();
        let _ = (unmarked.wait(), detached.wait());
        assert_eq!(killed, ["sleep 321"]);
        assert!(processes().all(|process| !(process.bears(&mark) && process.is_live())));
        assert!(spared, "an unmarked process was killed");
    }
}
