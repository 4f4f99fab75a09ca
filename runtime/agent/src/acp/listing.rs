//! `session/list`: the Sessions whose Logs lie in a workspace's sessions folder, read from the
//! folder alone (ACP "Session List": "Only sessions with a matching `cwd` are returned").
//!
//! A Session is listed by its id and `cwd`, sorted by id, so the answer is the same bytes on
//! every run. Only files named `<id>.ndjson` with an id of the shape this agent hands out are
//! Sessions; the state and sessions folders are read only when neither is a symlink
//! (ACP-SESSION-ID-CONFINED), and nothing is created.

use std::collections::BTreeSet;
use std::path::Path;

use crate::ids;
use crate::log::{self, Entry};
use crate::session::STATE_DIR;

/// The ids of the Sessions whose Logs lie in `cwd`'s sessions folder, sorted; none when the
/// folder is missing, unreadable or reached through a link.
pub fn logged_sessions(cwd: &Path) -> BTreeSet<String> {
    let state = cwd.join(STATE_DIR);
    let sessions = state.join("sessions");
    if log::refuse_link(&state, Entry::Directory).is_err() || log::refuse_link(&sessions, Entry::Directory).is_err() {
        return BTreeSet::new();
    }
    let Ok(entries) = std::fs::read_dir(&sessions) else { return BTreeSet::new() };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let id = name.strip_suffix(".ndjson")?;
            ids::check_session_id(id).is_ok().then(|| id.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_logs_with_a_valid_id_are_sessions_and_links_are_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let sessions = root.path().join(".gauntlet/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        for name in ["root.ndjson", "sub_1.ndjson", "notes.txt", "-bad.ndjson"] {
            std::fs::write(sessions.join(name), "").unwrap();
        }
        std::fs::create_dir(sessions.join("dir.ndjson")).unwrap();
        let found: Vec<String> = logged_sessions(root.path()).into_iter().collect();
        assert_eq!(found, ["root", "sub_1"]);
        assert!(logged_sessions(&root.path().join("missing")).is_empty());
        #[cfg(unix)]
        {
            let linked = root.path().join("linked");
            std::fs::create_dir(&linked).unwrap();
            std::os::unix::fs::symlink(root.path().join(".gauntlet"), linked.join(".gauntlet")).unwrap();
            assert!(logged_sessions(&linked).is_empty(), "a linked state folder was read");
        }
    }
}
