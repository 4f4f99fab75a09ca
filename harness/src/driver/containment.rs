//! Nothing an agent starts outlives its scenario: every process of a play carries a mark in
//! its environment, and once the play is over whatever still bears it is killed and named.
//!
//! The agent runs in its own process group, which the driver kills; a daemon that leaves the
//! group and its session (`setsid`) escapes that, but it inherits the environment its agent
//! was started with. So the mark, `GAUNTLET_CONTAINMENT=<token>`, finds it in `/proc` wherever
//! it went (issue 33). A process that clears its own environment is not found: the warning
//! names what was found, never more.

use std::sync::atomic::{AtomicU64, Ordering};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable that marks a play's processes.
pub const MARK: &str = "GAUNTLET_CONTAINMENT";

/// One play's mark.
#[derive(Debug)]
pub struct Containment {
    token: String,
}

impl Default for Containment {
    fn default() -> Self {
        Containment::new()
    }
}

impl Containment {
    /// A mark no other play of this process, or of another gauntlet, shares.
    pub fn new() -> Containment {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Containment { token: format!("{}-{n}", std::process::id()) }
    }

    /// The `(name, value)` each of the play's processes is started with.
    pub fn env(&self) -> (&'static str, &str) {
        (MARK, &self.token)
    }

    /// Kills every process still bearing the mark, once the play's agents were stopped, and
    /// returns each one's command line, for the report's warning.
    pub fn end(&self) -> Vec<String> {
        let left = self.marked();
        for (pid, _) in &left {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        left.into_iter().map(|(_, command)| command).collect()
    }

    /// The live processes (not zombies) whose environment bears the mark, with their command
    /// lines.
    fn marked(&self) -> Vec<(i32, String)> {
        let mark = format!("{MARK}={}", self.token);
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        let mut found: Vec<(i32, String)> = entries
            .flatten()
            .filter_map(|entry| {
                let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
                let environ = std::fs::read(entry.path().join("environ")).ok()?;
                if !environ.split(|byte| *byte == 0).any(|pair| pair == mark.as_bytes()) {
                    return None;
                }
                let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
                let state = stat.rsplit_once(')')?.1.split_whitespace().next()?.to_owned();
                (state != "Z" && state != "X").then(|| (pid, command_line(&entry.path())))
            })
            .collect();
        found.sort();
        found
    }
}

/// A process's command line, its arguments joined by spaces.
fn command_line(proc_dir: &std::path::Path) -> String {
    let raw = std::fs::read(proc_dir.join("cmdline")).unwrap_or_default();
    let words: Vec<String> = raw
        .split(|byte| *byte == 0)
        .filter(|word| !word.is_empty())
        .map(|word| String::from_utf8_lossy(word).into_owned())
        .collect();
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A process that left its agent's session and group is still found by its mark, killed,
    /// and named; one without the mark is left alone.
    #[test]
    fn a_detached_marked_process_is_killed_and_named() {
        let containment = Containment::new();
        let (name, value) = containment.env();
        let mut detached = std::process::Command::new("setsid")
            .args(["sleep", "321"])
            .env(name, value)
            .spawn()
            .unwrap_or_else(|error| panic!("{error}"));
        let mut unmarked =
            std::process::Command::new("sleep").arg("322").spawn().unwrap_or_else(|error| panic!("{error}"));
        // setsid forks when it leads a group already; wait until the sleep itself bears the mark.
        for _ in 0..100 {
            if containment.marked().iter().any(|(_, command)| command == "sleep 321") {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let killed = containment.end();
        assert_eq!(killed, ["sleep 321"]);
        let _ = detached.wait();
        assert!(containment.marked().iter().all(|(_, command)| command != "sleep 321"));
        assert!(unmarked.try_wait().ok().flatten().is_none(), "an unmarked process was killed");
        let _ = unmarked.kill();
        let _ = unmarked.wait();
    }
}
