//! Injectable ids and timestamps, so a scenario run is byte-deterministic (LOG-DETERMINISTIC).
//!
//! The reference driver uses [`Sequential`] ids and a [`Clock`] over tokio's clock, which is
//! paused in process: the same scenario stamps the same ids and times on every machine.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// Where event ids come from.
pub trait IdSource: Send + Sync {
    /// A fresh event id: 16 lowercase hex characters, as in the Pixir envelope.
    fn event_id(&self) -> String;
    /// A fresh Session id, usable as a file stem.
    fn session_id(&self) -> String;
    /// `id` is already in a Log read back: it is never handed out again (LOG-UNIQUE-ID). Only
    /// a source that could repeat it (a counter in a fresh process) needs to act.
    fn taken(&self, _id: &str) {}
}

/// The longest Session id accepted from a client: far above any this runtime generates, far
/// below any file-name limit.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Why a string is not a Session id of the shape this runtime generates.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionIdError {
    /// The id is empty.
    #[error("a session id must not be empty")]
    Empty,
    /// The id is longer than [`MAX_SESSION_ID_LEN`] bytes.
    #[error("a session id has at most {MAX_SESSION_ID_LEN} bytes; this one has {0}")]
    TooLong(usize),
    /// A character outside `[A-Za-z0-9_-]`, or a first character that is not alphanumeric.
    #[error(
        "a session id is ASCII letters, digits, `_` and `-`, starting with a letter or digit; found {found:?} at byte {at}"
    )]
    Character {
        /// The refused character.
        found: char,
        /// Its byte offset.
        at: usize,
    },
}

/// Checks that `id` has the shape of the ids this runtime hands out (`root`, `session-2`,
/// `20260721T185255-a1b2c3`, `sub_1`, `wf_1-step`): a file stem that can never name another
/// folder (`..`, `/`, `\`, NUL), checked before any path is built from it (ACP-SESSION-ID-CONFINED).
pub fn check_session_id(id: &str) -> Result<(), SessionIdError> {
    if id.is_empty() {
        return Err(SessionIdError::Empty);
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(SessionIdError::TooLong(id.len()));
    }
    for (at, found) in id.char_indices() {
        let allowed = found.is_ascii_alphanumeric() || (at > 0 && (found == '_' || found == '-'));
        if !allowed {
            return Err(SessionIdError::Character { found, at });
        }
    }
    Ok(())
}

/// Ids `0000000000000001`, `0000000000000002`, ... in stamping order; Sessions `root`, then
/// `session-2`, `session-3`, ...
#[derive(Debug, Default)]
pub struct Sequential {
    next_event: AtomicU64,
    next_session: AtomicU64,
}

impl IdSource for Sequential {
    fn event_id(&self) -> String {
        let n = self.next_event.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{n:016x}")
    }

    fn session_id(&self) -> String {
        match self.next_session.fetch_add(1, Ordering::Relaxed) + 1 {
            1 => "root".to_owned(),
            n => format!("session-{n}"),
        }
    }

    fn taken(&self, id: &str) {
        if let Ok(n) = u64::from_str_radix(id, 16) {
            self.next_event.fetch_max(n, Ordering::Relaxed);
        }
    }
}

/// Random-looking ids for real use, derived from the time and a counter (not cryptographic).
#[derive(Debug, Default)]
pub struct TimeSeeded {
    next: AtomicU64,
}

impl TimeSeeded {
    fn next(&self) -> u64 {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos() as u64;
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        // splitmix64 of time xor counter: distinct per call, cheap, no dependency.
        let mut z = nanos ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl IdSource for TimeSeeded {
    fn event_id(&self) -> String {
        format!("{:016x}", self.next())
    }

    /// `20260721T185255-a1b2c3`: the UTC time and six hex digits, as Pixir names Sessions.
    fn session_id(&self) -> String {
        let stamp = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
        let digits: String = stamp.chars().filter(char::is_ascii_digit).take(14).collect();
        format!("{}T{}-{:06x}", &digits[..8.min(digits.len())], &digits[8.min(digits.len())..], self.next() & 0xff_ffff)
    }
}

/// Wall-clock readings for event timestamps.
#[derive(Debug, Clone)]
pub enum Clock {
    /// `epoch` plus the time elapsed on tokio's clock since `start`: virtual when paused.
    Virtual {
        /// What the first reading shows.
        epoch: SystemTime,
        /// The tokio instant that corresponds to `epoch`.
        start: tokio::time::Instant,
    },
    /// The system clock.
    System,
}

impl Clock {
    /// A virtual clock starting now at 2026-01-01T00:00:00Z.
    pub fn virtual_from_now() -> Clock {
        Clock::Virtual {
            epoch: SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600),
            start: tokio::time::Instant::now(),
        }
    }

    /// The current reading.
    pub fn now(&self) -> SystemTime {
        match self {
            Clock::Virtual { epoch, start } => *epoch + start.elapsed(),
            Clock::System => SystemTime::now(),
        }
    }

    /// The current reading as RFC 3339 with microseconds, e.g. `2026-01-01T00:00:00.000000Z`.
    pub fn timestamp(&self) -> String {
        self.timestamp_after(Duration::ZERO).unwrap_or_default()
    }

    /// The reading `after` from now, as [`Clock::timestamp`] writes it; `None` when that time
    /// cannot be written (past the year 9999, from a deadline a model asked for).
    pub fn timestamp_after(&self, after: Duration) -> Option<String> {
        let at = self.now().checked_add(after)?;
        let mut text = String::new();
        write!(text, "{}", humantime::format_rfc3339_micros(at)).ok()?;
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_session_ids_pass_the_check() {
        let sequential = Sequential::default();
        let seeded = TimeSeeded::default();
        for id in
            [sequential.session_id(), sequential.session_id(), seeded.session_id(), "sub_1".into(), "wf_1-a".into()]
        {
            assert_eq!(check_session_id(&id), Ok(()), "{id}");
        }
    }

    #[test]
    fn session_ids_that_could_leave_the_sessions_folder_are_refused() {
        for id in
            ["..", "../../../outside/evil", "/etc/passwd", "a/b", "a\\b", "a\0b", ".hidden", "-x", "a.ndjson", "é"]
        {
            assert!(matches!(check_session_id(id), Err(SessionIdError::Character { .. })), "{id:?}");
        }
        assert_eq!(check_session_id(""), Err(SessionIdError::Empty));
        assert_eq!(check_session_id(&"a".repeat(129)), Err(SessionIdError::TooLong(129)));
        assert_eq!(check_session_id(&"a".repeat(128)), Ok(()));
    }

    #[test]
    fn sequential_ids_are_hex_and_ordered() {
        let ids = Sequential::default();
        assert_eq!(ids.event_id(), "0000000000000001");
        assert_eq!(ids.event_id(), "0000000000000002");
    }

    #[test]
    fn sequential_ids_continue_past_ids_taken_from_a_log() {
        let ids = Sequential::default();
        ids.taken("000000000000002a");
        ids.taken("0000000000000003");
        ids.taken("not hex");
        assert_eq!(ids.event_id(), "000000000000002b");
    }

    #[test]
    fn a_deadline_past_year_9999_is_none_not_a_panic() {
        let clock = Clock::System;
        assert!(clock.timestamp_after(Duration::from_millis(60_000)).is_some());
        assert_eq!(clock.timestamp_after(Duration::from_millis(u64::MAX)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn virtual_clock_follows_paused_time() {
        let clock = Clock::virtual_from_now();
        assert_eq!(clock.timestamp(), "2026-01-01T00:00:00.000000Z");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert_eq!(clock.timestamp(), "2026-01-01T00:00:01.500000Z");
    }
}
