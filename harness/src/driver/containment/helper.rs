//! `gauntlet-contain`, the helper every contained process starts through, so that gauntlet can
//! end all the program starts at once.
//!
//! - `pid-namespace -- PROGRAM ARGS...` (`user-namespace` without root: inside a user
//!   namespace that maps the caller's own ids): the program runs in a new PID namespace, and a
//!   mount namespace whose `/proc` shows it, beside its init, this helper's `reap` mode, started
//!   first. Killing the init kills every process of the namespace, and none can leave it. A process that made a PID namespace for
//!   its children can start no thread, so the helper stays the program's parent: it keeps the
//!   pid gauntlet started and its process group, passes on nothing but the program's end (its
//!   exit code, or the signal that killed it), and leaves the signals sent to the group to the
//!   program, which gets them too.
//! - `cgroup DIR -- PROGRAM ARGS...`: joins the cgroup `DIR`, then becomes the program (`exec`).
//! - `probe [DIR]`: prints which of these the kernel allows (joining `DIR` for `cgroup`).
//!
//! It is a program of its own, not code run between fork and exec: the workspace forbids
//! `unsafe`, and this needs none.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use nix::errno::Errno;
use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal, raise};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{dup2_stderr, dup2_stdin, dup2_stdout};

/// The mode, and the probe's answer, for a plain PID namespace.
pub const PID_NAMESPACE: &str = "pid-namespace";
/// The mode, and the probe's answer, for a PID namespace inside a user namespace.
pub const USER_NAMESPACE: &str = "user-namespace";
/// The mode, and the probe's answer, for a cgroup.
pub const CGROUP: &str = "cgroup";
/// The mode that says which of the others the kernel allows.
pub const PROBE: &str = "probe";
/// The namespace init's mode.
const REAP: &str = "reap";
/// The mode of the child a probe starts, to see that a new namespace takes one.
const PROBE_CHILD: &str = "probe-child";

/// Why the helper could not contain its program.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    /// Not a mode it knows, or no program after `--`.
    #[error("usage: gauntlet-contain (pid-namespace | user-namespace | cgroup DIR) -- PROGRAM [ARGS...] | probe [DIR]")]
    Usage,
    /// The kernel refused the namespace.
    #[error("cannot create a PID namespace and a mount namespace: {0}")]
    Unshare(Errno),
    /// A file of `/proc` or of the cgroup could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The namespace's init could not be started.
    #[error("cannot start the namespace's init: {0}")]
    Init(std::io::Error),
    /// The program's end could not be waited for.
    #[error("cannot wait for the program: {0}")]
    Wait(std::io::Error),
    /// The program could not be started.
    #[error("cannot start {program}: {source}")]
    Exec {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Runs the helper with its arguments (without its own name): the program's exit code, or 127
/// when it could not run the program.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let words: Vec<&str> = args.iter().map(|arg| arg.to_str().unwrap_or_default()).collect();
    let outcome = match words.as_slice() {
        [REAP] => reap(),
        [PROBE_CHILD] => return ExitCode::SUCCESS,
        [PROBE, rest @ ..] => {
            println!("{}", probe(rest.first().map(Path::new)));
            return ExitCode::SUCCESS;
        }
        [PID_NAMESPACE, "--", ..] => enter(false).and_then(|()| parent_of(&args[2..])),
        [USER_NAMESPACE, "--", ..] => enter(true).and_then(|()| parent_of(&args[2..])),
        [CGROUP, dir, "--", ..] => join(Path::new(dir)).and_then(|()| exec_into(&args[3..])),
        _ => Err(HelperError::Usage),
    };
    outcome.unwrap_or_else(|error| {
        eprintln!("gauntlet-contain: {error}");
        ExitCode::from(127)
    })
}

/// Which containment the kernel allows: the namespace mode, or `none`, then whether this
/// process could join `cgroup` (`cgroup`, or `none`).
fn probe(cgroup: Option<&Path>) -> String {
    let spawns = || Command::new("/proc/self/exe").arg(PROBE_CHILD).status().is_ok_and(|status| status.success());
    let namespace = if unshare_pid(false).is_ok() && spawns() {
        PID_NAMESPACE
    } else if unshare_pid(true).is_ok() && spawns() {
        USER_NAMESPACE
    } else {
        "none"
    };
    let joined = if cgroup.is_some_and(|dir| join(dir).is_ok()) { CGROUP } else { "none" };
    format!("{namespace} {joined}")
}

/// Makes every child of this process start in a new PID namespace, and starts its init, which
/// mounts the namespace's own `/proc` before the program starts.
fn enter(user: bool) -> Result<(), HelperError> {
    unshare_pid(user)?;
    // A mount namespace of the program's own, whose mounts never reach the host's.
    let private = MsFlags::MS_REC | MsFlags::MS_PRIVATE;
    mount(None::<&str>, "/", None::<&str>, private, None::<&str>).map_err(HelperError::Unshare)?;
    // The first child is the namespace's init: in a group of its own, so the signals sent to
    // the program's group spare it, and holding none of the program's pipes.
    let mut init = Command::new("/proc/self/exe")
        .arg0("gauntlet-contain")
        .arg(REAP)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .current_dir("/")
        .process_group(0)
        .spawn()
        .map_err(HelperError::Init)?;
    // It says when `/proc` shows the namespace (or that it could not mount it: the program
    // still runs contained, seeing the host's).
    let mut ready = String::new();
    if let Some(out) = init.stdout.take() {
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(out), &mut ready);
    }
    Ok(())
}

/// Makes every child of this process start in a new PID namespace, and this process enter a
/// new mount namespace; without root, in a new user namespace too (`user`), which maps the
/// caller's own ids.
fn unshare_pid(user: bool) -> Result<(), HelperError> {
    let namespaces = CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWNS;
    if !user {
        return unshare(namespaces).map_err(HelperError::Unshare);
    }
    let ids = std::fs::metadata("/proc/self").map(|meta| (meta.uid(), meta.gid()));
    let (uid, gid) = ids.map_err(|source| HelperError::Write { path: "/proc/self".to_owned(), source })?;
    unshare(CloneFlags::CLONE_NEWUSER | namespaces).map_err(HelperError::Unshare)?;
    write("/proc/self/setgroups", "deny")?;
    write("/proc/self/uid_map", &format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", &format!("{gid} {gid} 1"))
}

/// Moves this process into the cgroup `dir`.
fn join(dir: &Path) -> Result<(), HelperError> {
    write(&dir.join("cgroup.procs").to_string_lossy(), &std::process::id().to_string())
}

fn write(path: &str, text: &str) -> Result<(), HelperError> {
    std::fs::write(path, text).map_err(|source| HelperError::Write { path: path.to_owned(), source })
}

/// Becomes `program args...`.
fn exec_into(command: &[OsString]) -> Result<ExitCode, HelperError> {
    let (program, args) = command.split_first().ok_or(HelperError::Usage)?;
    let source = Command::new(program).args(args).exec();
    Err(HelperError::Exec { program: program.to_string_lossy().into_owned(), source })
}

/// Runs `program args...` as its child, with its pipes, and ends as it ends.
fn parent_of(command: &[OsString]) -> Result<ExitCode, HelperError> {
    let (program, args) = command.split_first().ok_or(HelperError::Usage)?;
    // Blocked here, these reach the program alone (a child starts with none blocked); what
    // they do to it, this helper reports.
    let mut stops = SigSet::empty();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP, Signal::SIGQUIT] {
        stops.add(signal);
    }
    let _ = stops.thread_block();
    let mut child = Command::new(program)
        .args(args)
        .spawn()
        .map_err(|source| HelperError::Exec { program: program.to_string_lossy().into_owned(), source })?;
    // The program's pipes are its own: their ends close when it ends, not when this does.
    if let Ok(null) = std::fs::File::options().read(true).write(true).open("/dev/null") {
        let _ = (dup2_stdin(&null), dup2_stdout(&null), dup2_stderr(&null));
    }
    let status = child.wait().map_err(HelperError::Wait)?;
    if let Some(signal) = status.signal().and_then(|number| Signal::try_from(number).ok()) {
        let _ = stops.thread_unblock();
        let _ = raise(signal);
    }
    let code = status.code().or(status.signal().map(|number| 128 + number)).unwrap_or(1);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// The namespace's init: mounts the namespace's `/proc` (so a process's pid names its own
/// `/proc` entry), says so on its stdout, then reaps every process that ends in it, until it is
/// killed (and the namespace with it). As a namespace's init it ignores every signal its
/// members send.
fn reap() -> Result<ExitCode, HelperError> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let mounted = mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>);
    println!("{}", if mounted.is_ok() { "ready" } else { "no /proc of its own" });
    if let Ok(null) = std::fs::File::options().write(true).open("/dev/null") {
        let _ = dup2_stdout(&null);
    }
    let mut children = SigSet::empty();
    children.add(Signal::SIGCHLD);
    // Blocked, a child's end waits for `wait` below, never lost between two calls.
    let _ = children.thread_block();
    loop {
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = children.wait();
    }
}
