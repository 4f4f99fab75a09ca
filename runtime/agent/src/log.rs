//! The NDJSON Log: append-only, one canonical Event per line (LOG-NDJSON, seed 004, pixir.md 1.4).
//!
//! A torn last line (a crash mid-write) is data, [`TornTail`], not an error: every complete
//! line loads and the Session continues. A corrupt line anywhere else is a [`LogError`]
//! naming the line, because silently skipping History would change Provider replay.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::event::Event;
use crate::ids::SessionIdError;

/// What went wrong reading or writing a Log.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The Log file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A complete line that is not a valid Event.
    #[error("{path}:{line}: corrupt log line: {source}")]
    CorruptLine {
        /// The Log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Why it is not one.
        source: LineError,
    },
    /// An ephemeral event was offered to the Log (LOG-NO-EPHEMERAL).
    #[error("{path}: refusing to log ephemeral event `{kind}`")]
    Ephemeral {
        /// The Log file.
        path: PathBuf,
        /// The event type.
        kind: &'static str,
    },
    /// A Session id that could name a file outside the sessions folder (ACP-SESSION-ID-CONFINED).
    #[error("session id {id:?}: {source}")]
    InvalidSessionId {
        /// The refused id (as given).
        id: String,
        /// Why.
        source: SessionIdError,
    },
    /// A Log path, or a folder on the way to it, that is not what it must be (a symlink).
    #[error("{path} {reason}; a Log is only read and written inside the sessions folder itself")]
    NotConfined {
        /// The offending path.
        path: PathBuf,
        /// What it is instead.
        reason: &'static str,
    },
    /// A loaded line whose seq is not the previous line's plus one, from 0: out of order,
    /// repeated or after a gap (LOG-SEQ-GAPLESS). Re-sorting would let an answer precede its
    /// question, so the Log is refused instead.
    #[error("{path}:{line}: seq {found} where {expected} was due (seq counts 0, 1, 2, ... in file order)")]
    SeqOutOfOrder {
        /// The Log file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The seq the line must carry.
        expected: u64,
        /// The seq it carries.
        found: u64,
    },
    /// An event whose seq is not `last + 1` (LOG-SEQ-GAPLESS).
    #[error("{path}: event seq {found:?} does not follow {expected}")]
    OutOfOrder {
        /// The Log file.
        path: PathBuf,
        /// The seq the Log needs next.
        expected: u64,
        /// The seq that was offered.
        found: Option<u64>,
    },
}

/// Why one complete Log line is not a canonical Event.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// Not an Event in JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// An ephemeral Event, which is never logged (LOG-NO-EPHEMERAL).
    #[error("ephemeral event type `{kind}` in the Log")]
    Ephemeral {
        /// The event type.
        kind: &'static str,
    },
    /// A canonical Event without its seq.
    #[error("canonical event without seq")]
    NoSeq,
}

/// What a path inside the sessions folder must be, if it exists at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// A real directory (the state folder, the sessions folder).
    Directory,
    /// A regular file (a Log).
    File,
}

/// Refuses `path` when it exists as anything but `entry`, a symlink above all: a Log is read,
/// cut and appended only inside the sessions folder, never through a link to somewhere else
/// (ACP-SESSION-ID-CONFINED). A missing path is fine; it will be created as `entry`.
pub fn refuse_link(path: &Path, entry: Entry) -> Result<(), LogError> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(LogError::Io { path: path.to_owned(), source }),
    };
    let reason = if metadata.file_type().is_symlink() {
        "is a symbolic link"
    } else {
        match entry {
            Entry::Directory if !metadata.is_dir() => "is not a directory",
            Entry::File if !metadata.is_file() => "is not a regular file",
            _ => return Ok(()),
        }
    };
    Err(LogError::NotConfined { path: path.to_owned(), reason })
}

/// The incomplete last line of a Log, left by a crash mid-write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Byte offset where the torn line starts; the Log is cut back to it on open.
    pub offset: u64,
    /// The torn bytes, kept as evidence.
    pub bytes: Vec<u8>,
}

/// The result of folding Log bytes: the Events in seq order and a torn tail, if any.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Folded {
    /// Canonical Events, in file order, which is seq order from 0 without a gap.
    pub events: Vec<Event>,
    /// The incomplete last line, if the Log ends in one.
    pub torn: Option<TornTail>,
}

/// Folds NDJSON bytes into Events. Blank lines are skipped; `path` only labels errors.
///
/// Each Event's seq must be the one before it plus one, from 0 (LOG-SEQ-GAPLESS); a line that
/// breaks the count is an error naming it, never re-sorted.
pub fn fold(bytes: &[u8], path: &Path) -> Result<Folded, LogError> {
    let mut folded = Folded::default();
    let mut offset = 0usize;
    for (line_idx, line) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
        let complete = line.ends_with(b"\n");
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let start = offset;
        offset += line.len();
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(body) {
            Ok(event) => {
                let expected = folded.events.len() as u64;
                let found = event.seq().unwrap_or(u64::MAX);
                if found != expected {
                    return Err(LogError::SeqOutOfOrder { path: path.to_owned(), line: line_idx + 1, expected, found });
                }
                folded.events.push(event);
            }
            Err(_) if !complete => {
                folded.torn = Some(TornTail { offset: start as u64, bytes: body.to_vec() });
            }
            Err(source) => {
                return Err(LogError::CorruptLine { path: path.to_owned(), line: line_idx + 1, source });
            }
        }
    }
    Ok(folded)
}

fn parse_line(body: &[u8]) -> Result<Event, LineError> {
    let event: Event = serde_json::from_slice(body)?;
    if event.kind().is_ephemeral() {
        return Err(LineError::Ephemeral { kind: event.kind().as_str() });
    }
    if event.seq().is_none() {
        return Err(LineError::NoSeq);
    }
    Ok(event)
}

/// `options` refusing to open through a symlink at the last path component (`O_NOFOLLOW`), so a
/// link planted in the sessions folder after [`refuse_link`] looked is still not followed.
fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// An open, append-only Log file.
#[derive(Debug)]
pub struct Log {
    path: PathBuf,
    file: File,
    next_seq: u64,
}

impl Log {
    /// Opens (or creates) a Log, folds it, and positions appends at `last seq + 1`.
    ///
    /// A torn tail is cut off the file so the next append starts on a fresh line; its bytes
    /// are returned (and kept beside the Log as `<name>.torn`) so nothing is lost silently.
    pub fn open(path: &Path) -> Result<(Log, Folded), LogError> {
        let io = |source| LogError::Io { path: path.to_owned(), source };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        // One handle reads what is there and appends after it: a Log that cannot be read is an
        // error, never taken for a new one (appends at seq 0 would follow its events).
        let mut file = no_follow(OpenOptions::new().read(true).create(true).append(true)).open(path).map_err(io)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io)?;
        let folded = fold(&bytes, path)?;
        if let Some(torn) = &folded.torn {
            let mut evidence = path.as_os_str().to_owned();
            evidence.push(".torn");
            no_follow(OpenOptions::new().create(true).write(true).truncate(true))
                .open(PathBuf::from(evidence))
                .and_then(|mut evidence| evidence.write_all(&torn.bytes))
                .map_err(io)?;
            file.set_len(torn.offset).map_err(io)?;
        } else if !bytes.is_empty() && !bytes.ends_with(b"\n") {
            // A complete last line that lost only its newline: restore it.
            (&file).write_all(b"\n").map_err(io)?;
        }
        let next_seq = folded.events.len() as u64;
        Ok((Log { path: path.to_owned(), file, next_seq }, folded))
    }

    /// The seq the next appended Event must carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The Log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one canonical Event as one line, flushed before returning.
    pub fn append(&mut self, event: &Event) -> Result<(), LogError> {
        if event.kind().is_ephemeral() {
            return Err(LogError::Ephemeral { path: self.path.clone(), kind: event.kind().as_str() });
        }
        if event.seq() != Some(self.next_seq) {
            return Err(LogError::OutOfOrder { path: self.path.clone(), expected: self.next_seq, found: event.seq() });
        }
        let mut line = event.to_json_line();
        line.push('\n');
        self.file.write_all(line.as_bytes()).map_err(|source| LogError::Io { path: self.path.clone(), source })?;
        self.next_seq += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Payload;

    fn event(seq: u64) -> Event {
        Event::stamp(Payload::user_message("hello"), "s", format!("{seq:016x}"), "t".into(), Some(seq))
    }

    #[test]
    fn append_then_fold_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ndjson");
        let (mut log, folded) = Log::open(&path).unwrap();
        assert!(folded.events.is_empty());
        log.append(&event(0)).unwrap();
        log.append(&event(1)).unwrap();
        let (log, folded) = Log::open(&path).unwrap();
        assert_eq!(folded.events, vec![event(0), event(1)]);
        assert_eq!(log.next_seq(), 2);
    }

    #[test]
    fn refuses_ephemeral_events() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(&dir.path().join("s.ndjson")).unwrap();
        let delta = Event::stamp(Payload::text_delta("x"), "s", "i".into(), "t".into(), None);
        assert!(matches!(log.append(&delta), Err(LogError::Ephemeral { kind: "text_delta", .. })));
    }

    #[test]
    fn torn_tail_is_reported_with_its_offset_and_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.ndjson");
        let first = format!("{}\n", event(0).to_json_line());
        std::fs::write(&path, format!("{first}{{\"data\":{{\"te")).unwrap();
        let (mut log, folded) = Log::open(&path).unwrap();
        assert_eq!(folded.events.len(), 1);
        let torn = folded.torn.unwrap();
        assert_eq!(torn.offset, first.len() as u64);
        assert_eq!(torn.bytes, b"{\"data\":{\"te");
        log.append(&event(1)).unwrap();
        let (_, folded) = Log::open(&path).unwrap();
        assert_eq!(folded.events.len(), 2);
        assert!(folded.torn.is_none());
        assert!(dir.path().join("s.ndjson.torn").exists());
    }

    #[test]
    fn corrupt_middle_line_names_the_line() {
        let bytes = format!("{}\nnot json\n{}\n", event(0).to_json_line(), event(1).to_json_line());
        let error = fold(bytes.as_bytes(), Path::new("x.ndjson")).unwrap_err();
        assert!(matches!(error, LogError::CorruptLine { line: 2, source: LineError::Json(_), .. }), "{error}");
        assert!(error.to_string().starts_with("x.ndjson:2: corrupt log line: expected"), "{error}");
    }

    #[test]
    fn a_loaded_seq_out_of_order_repeated_or_after_a_gap_names_its_line() {
        let line = |seq: u64| event(seq).to_json_line();
        for (seqs, bad_line, expected, found) in
            [(vec![1, 0], 1, 0, 1), (vec![0, 2, 1], 2, 1, 2), (vec![0, 1, 1], 3, 2, 1), (vec![0, 1, 3], 3, 2, 3)]
        {
            let bytes: String = seqs.iter().map(|seq| format!("{}\n", line(*seq))).collect();
            let error = fold(bytes.as_bytes(), Path::new("x.ndjson")).unwrap_err();
            assert!(
                matches!(error, LogError::SeqOutOfOrder { line, expected: e, found: f, .. }
                    if line == bad_line && e == expected && f == found),
                "{seqs:?}: {error}"
            );
            assert!(error.to_string().starts_with(&format!("x.ndjson:{bad_line}: seq {found} where {expected}")));
        }
    }

    #[test]
    fn refuses_a_seq_gap() {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(&dir.path().join("s.ndjson")).unwrap();
        assert!(matches!(log.append(&event(3)), Err(LogError::OutOfOrder { expected: 0, .. })));
    }
}
