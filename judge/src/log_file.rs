//! A Log file as `gauntlet audit` reads it: any NDJSON Log in the contract's format (LOG-ENVELOPE),
//! a torn tail kept as data (LOG-TORN-TAIL), and the child Logs found beside it.
//!
//! [`read`] does the IO; [`LogReport::of`] audits what was read with the same auditor and the
//! same Log-only invariants ([`crate::judge::invariants::log_only`]) a scenario run uses, so a
//! Log from a real session is judged by exactly the rules a golden is.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::audit::{Audit, Diagnostic, diagnostics::diagnostics};
use crate::capture::{Capture, TornTail};
use crate::judge;
use crate::judge::evidence::Evidence;
use crate::log_line::Line;
use crate::verdict::Finding;

/// Why a file is not a Log at all (exit 2), as opposed to a Log with findings.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{path}: not UTF-8 text (byte {offset})")]
    NotText {
        /// The file.
        path: PathBuf,
        /// The first byte that is not UTF-8.
        offset: usize,
    },
    /// No line of the file is a JSON object: it is not an NDJSON Log.
    #[error("{path}: no line is a JSON object; not an NDJSON Log")]
    NotALog {
        /// The file.
        path: PathBuf,
    },
}

/// A Log file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct LogFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its complete lines, without newlines; line `n` (1-based) is `lines[n - 1]`.
    pub lines: Vec<String>,
    /// An incomplete last line that is not an Event: a crash mid-write, data and not a finding.
    pub torn_tail: Option<TornTail>,
    /// The Logs of the child Sessions it names, found beside it, by child Session id.
    pub children: BTreeMap<String, LogFile>,
}

/// Reads a Log and, recursively, the child Logs beside it: for each `child_session_id` its
/// events name, `children/<id>.ndjson` (the golden layout) or `<id>.ndjson` (a runtime's
/// `sessions/` folder) in the Log's folder, when present.
pub fn read(path: &Path) -> Result<LogFile, ReadError> {
    read_at(path, &mut BTreeSet::new())
}

fn read_at(path: &Path, seen: &mut BTreeSet<PathBuf>) -> Result<LogFile, ReadError> {
    seen.insert(path.canonicalize().unwrap_or_else(|_| path.to_owned()));
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
    let text = String::from_utf8(bytes)
        .map_err(|error| ReadError::NotText { path: path.to_owned(), offset: error.utf8_error().valid_up_to() })?;
    let (lines, torn_tail) = split(&text);
    let parsed: Vec<Value> = lines.iter().filter_map(|line| serde_json::from_str::<Value>(line).ok()).collect();
    if !lines.is_empty() && !parsed.iter().any(Value::is_object) {
        return Err(ReadError::NotALog { path: path.to_owned() });
    }
    let mut children = BTreeMap::new();
    let dir = path.parent().unwrap_or(Path::new("."));
    for id in child_session_ids(&parsed) {
        let found = [dir.join("children").join(format!("{id}.ndjson")), dir.join(format!("{id}.ndjson"))]
            .into_iter()
            .find(|candidate| {
                candidate.is_file() && !seen.contains(&candidate.canonicalize().unwrap_or_else(|_| candidate.clone()))
            });
        if let Some(child) = found {
            children.insert(id, read_at(&child, seen)?);
        }
    }
    Ok(LogFile { path: path.to_owned(), lines, torn_tail, children })
}

/// Complete lines, and the last one as a torn tail when it has no newline and is not JSON.
fn split(text: &str) -> (Vec<String>, Option<TornTail>) {
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let last = lines.pop().unwrap_or_default();
    let mut torn_tail = None;
    if !last.is_empty() {
        if serde_json::from_str::<Value>(&last).is_ok() {
            lines.push(last);
        } else {
            torn_tail = Some(TornTail { offset: (text.len() - last.len()) as u64, length: last.len() });
        }
    }
    (lines, torn_tail)
}

/// Every `data.child_session_id` the Log names, in first-seen order.
fn child_session_ids(events: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in events.iter().filter_map(|event| event.pointer("/data/child_session_id").and_then(Value::as_str)) {
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_owned());
        }
    }
    ids
}

/// A diagnostic and the line of the Log it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineDiagnostic {
    /// The 1-based line of the event it points at.
    pub line: Option<usize>,
    /// The diagnostic.
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

/// A finding of a Log-only invariant, with the Log line it points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineFinding {
    /// The 1-based line of the Log the finding names, when it names one.
    pub line: Option<usize>,
    /// The invariant's file name, e.g. `failure_evidence_complete`.
    pub rule: String,
    /// The finding.
    #[serde(flatten)]
    pub finding: Finding,
}

/// One Log audited: what each Turn came to and every Log-only finding. **Boundary:** the JSON
/// of `gauntlet audit --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogReport {
    /// The file.
    pub path: PathBuf,
    /// Terminal states derived from the Log alone (the same object as a golden's
    /// `outcome.json` `audit`).
    pub audit: Audit,
    /// The torn last line, if any.
    pub torn_tail: Option<TornTail>,
    /// Every finding of the Log-only invariants.
    pub findings: Vec<LineFinding>,
    /// The warnings seed 000's SessionDiagnostics gives over the Session (not findings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<LineDiagnostic>,
    /// The child Logs, audited the same way.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<LogReport>,
}

impl LogReport {
    /// Audits a Log and its children.
    pub fn of(file: &LogFile) -> LogReport {
        let capture = Capture {
            log: file.lines.clone(),
            children: file.children.iter().map(|(id, child)| (id.clone(), child.lines.clone())).collect(),
            ..Capture::default()
        };
        let evidence = Evidence::new(&capture);
        let findings = judge::log_findings(&evidence)
            .into_iter()
            .map(|(rule, finding)| LineFinding {
                line: pointed_line(&finding.message, &evidence.lines, &file.lines),
                rule: rule.to_owned(),
                finding,
            })
            .collect();
        let diagnostics = diagnostics(&evidence.audit, &evidence.lines)
            .into_iter()
            .map(|diagnostic| LineDiagnostic {
                line: diagnostic.seq.and_then(|seq| line_of_seq(seq, &evidence.lines, &file.lines)),
                diagnostic,
            })
            .collect();
        LogReport {
            path: file.path.clone(),
            audit: evidence.audit.clone(),
            torn_tail: file.torn_tail.clone(),
            findings,
            diagnostics,
            children: file.children.values().map(LogReport::of).collect(),
        }
    }

    /// True when neither this Log nor any child has a finding but differences from the
    /// reference (MAY rows, such as a gap in `seq`).
    pub fn is_clean(&self) -> bool {
        self.findings.iter().all(|found| found.finding.is_difference()) && self.children.iter().all(LogReport::is_clean)
    }

    /// The report as text: per Turn its terminal state and evidence, then every finding.
    pub fn text(&self) -> String {
        let mut out = format!("{}\n", self.path.display());
        for (idx, turn) in self.audit.turns.iter().enumerate() {
            let state = match (turn.terminal_status, &turn.error_kind) {
                (Some(status), Some(kind)) => format!("{status} ({kind})"),
                (Some(status), None) => status.to_string(),
                (None, _) => "no terminal evidence".to_owned(),
            };
            let seqs: Vec<String> = turn.evidence_seqs.iter().map(u64::to_string).collect();
            let evidence = if seqs.is_empty() { String::new() } else { format!(", evidence seq {}", seqs.join(", ")) };
            out.push_str(&format!("  turn {} (user_message seq {}): {state}{evidence}\n", idx + 1, turn.user_seq));
        }
        for subagent in &self.audit.subagents {
            let state = subagent.terminal_state.map_or_else(
                || subagent.status.map_or("-".to_owned(), |status| status.to_string()),
                |terminal| vocabulary(&terminal),
            );
            out.push_str(&format!("  subagent {}: {state}\n", subagent.subagent_id));
        }
        for workflow in &self.audit.workflows {
            let state = workflow.terminal_state.map_or("-".to_owned(), |terminal| vocabulary(&terminal));
            out.push_str(&format!("  workflow {}: {state}\n", workflow.workflow_id));
        }
        if let Some(torn) = &self.torn_tail {
            out.push_str(&format!(
                "  torn tail at byte {} ({} bytes), not part of the Log\n",
                torn.offset, torn.length
            ));
        }
        for found in &self.diagnostics {
            let line = found.line.map_or_else(|| "-".to_owned(), |line| line.to_string());
            let kind = found.diagnostic.kind.as_str();
            out.push_str(&format!(
                "  {}:{line}: diagnostic: {kind}: {}\n",
                self.path.display(),
                found.diagnostic.message
            ));
        }
        if self.findings.is_empty() {
            out.push_str("  no findings\n");
        }
        for finding in &self.findings {
            let line = finding.line.map_or_else(|| "-".to_owned(), |line| line.to_string());
            let id = finding.finding.requirement.as_deref().unwrap_or("-");
            out.push_str(&format!(
                "  {}:{line}: {id} ({}): {}\n",
                self.path.display(),
                finding.rule,
                finding.finding.message
            ));
        }
        for child in &self.children {
            out.push_str(&child.text().lines().map(|line| format!("  {line}\n")).collect::<String>());
        }
        out
    }
}

/// A vocabulary enum's contract string (its serde name).
fn vocabulary(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        _ => "-".to_owned(),
    }
}

/// The Log line a finding names: the Log-only invariants point with `log line N` or `seq N`
/// (the first one named is the one it is about).
fn pointed_line(message: &str, parsed: &[Line], raw: &[String]) -> Option<usize> {
    if let Some(line) = number_after(message, "log line ") {
        return usize::try_from(line).ok();
    }
    line_of_seq(number_after(message, "seq ")?, parsed, raw)
}

/// The 1-based line of the file that holds the event with `seq`.
fn line_of_seq(seq: u64, parsed: &[Line], raw: &[String]) -> Option<usize> {
    let parsed_idx = parsed.iter().position(|line| line.seq == Some(seq))?;
    // `parsed` skips unreadable lines: find the raw line that parsed to it.
    let mut readable = raw.iter().enumerate().filter(|(_, text)| Line::parse(text).is_ok());
    readable.nth(parsed_idx).map(|(idx, _)| idx + 1)
}

/// The number right after the first `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> Option<u64> {
    let start = text.find(prefix)? + prefix.len();
    let digits: String = text[start..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    const USER: &str = r#"{"data":{"text":"q"},"id":"a","seq":0,"session_id":"s","ts":"t","type":"user_message"}"#;
    const ANSWER: &str =
        r#"{"data":{"text":"a"},"id":"b","seq":1,"session_id":"s","ts":"t","type":"assistant_message"}"#;

    #[test]
    fn a_torn_tail_is_data_and_not_a_finding() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "s.ndjson", &format!("{USER}\n{ANSWER}\n{{\"data\":{{\"te"));
        let report = LogReport::of(&read(&path).unwrap());
        assert!(report.is_clean(), "{}", report.text());
        assert_eq!(report.torn_tail, Some(TornTail { offset: (USER.len() + ANSWER.len() + 2) as u64, length: 12 }));
        assert_eq!(report.audit.turns[0].evidence_seqs, [1]);
    }

    #[test]
    fn a_finding_points_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "s.ndjson", &format!("{USER}\n{USER}\n"));
        let report = LogReport::of(&read(&path).unwrap());
        let rules: Vec<_> = report.findings.iter().map(|f| (f.rule.as_str(), f.line)).collect();
        assert_eq!(
            rules,
            [
                ("log_seq_monotonic", Some(2)),
                ("log_seq_gapless", Some(2)),
                ("log_ids_unique", Some(2)),
                ("turns_terminated", Some(1))
            ]
        );
    }

    #[test]
    fn what_is_not_a_log_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "notes.txt", "hello\nworld\n");
        assert!(matches!(read(&path), Err(ReadError::NotALog { .. })));
        assert!(matches!(read(&dir.path().join("missing")), Err(ReadError::Io { .. })));
    }

    #[test]
    fn child_logs_beside_it_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let event = r#"{"data":{"child_session_id":"sub_1","event":"queued","status":"queued","subagent_id":"sub_1"},"id":"b","seq":1,"session_id":"s","ts":"t","type":"subagent_event"}"#;
        let path = write(dir.path(), "log.ndjson", &format!("{USER}\n{event}\n"));
        write(dir.path(), "children/sub_1.ndjson", &format!("{USER}\n"));
        let file = read(&path).unwrap();
        assert_eq!(file.children.keys().collect::<Vec<_>>(), ["sub_1"]);
        assert_eq!(LogReport::of(&file).children.len(), 1);
    }
}
