//! Golden files: read, compare with unified diffs, write pending files, accept them.
//!
//! A mismatch never overwrites a golden. With blessing on, the new content is written beside
//! the golden as `<file>.new` (a pending file) and the trial still fails; `gauntlet accept`
//! renames pending files over their goldens. CI fails on any pending file.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use gauntlet_agent::canonical;
use gauntlet_mock_provider::increment::{Chain, Increment};
use serde_json::Value;
use similar::TextDiff;

use gauntlet_judge::verdict::{Finding, Layer};

pub use gauntlet_judge::capture::CHILDREN_DIR;

/// The suffix of a pending golden file.
pub const PENDING_SUFFIX: &str = ".new";

/// The command that accepts pending goldens, named in every mismatch.
pub const ACCEPT_COMMAND: &str = "cargo run -p gauntlet -- accept";

/// Compares `files` with the goldens in `root/dir`; with `bless`, writes pending files for
/// mismatches. Messages name files relative to `root`, e.g. `golden/turn/x/log.ndjson`.
pub fn compare(root: &Path, dir: &Path, files: &[(String, String)], bless: bool) -> Vec<Finding> {
    compare_masked(root, dir, files, &BTreeMap::new(), bless)
}

/// [`compare`], after masking in both sides the JSON pointers listed for each file name (the
/// fields that legitimately differ for another implementation, from its profile).
pub fn compare_masked(
    root: &Path,
    dir: &Path,
    files: &[(String, String)],
    masks: &BTreeMap<String, Vec<String>>,
    bless: bool,
) -> Vec<Finding> {
    compare_noting_masks(root, dir, files, masks, bless, &mut BTreeSet::new())
}

/// [`compare_masked`], noting in `matched` each `(file, pointer)` mask that matched something
/// in the golden or the actual file, so a run can name the masks that never did.
pub fn compare_noting_masks(
    root: &Path,
    dir: &Path,
    files: &[(String, String)],
    masks: &BTreeMap<String, Vec<String>>,
    bless: bool,
    matched: &mut BTreeSet<(String, String)>,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (name, actual) in files {
        let path = root.join(dir).join(name);
        let expected = std::fs::read_to_string(&path).ok();
        // A child Log is masked like the root's.
        let masked_as = if name.starts_with(CHILDREN_DIR) { "log.ndjson" } else { name.as_str() };
        // A requests golden is masked as if each line held its whole body.
        let mask_file = if masked_as.starts_with("requests") { mask_requests } else { mask_counting };
        let (expected, actual) = match masks.get(masked_as) {
            Some(pointers) => {
                let mut hits = vec![0; pointers.len()];
                let expected = expected.map(|text| mask_file(&text, pointers, &mut hits));
                let actual = mask_file(actual, pointers, &mut hits);
                let hit = pointers.iter().zip(&hits).filter(|(_, hits)| **hits > 0);
                matched.extend(hit.map(|(pointer, _)| (masked_as.to_owned(), pointer.clone())));
                (expected, actual)
            }
            None => (expected, actual.clone()),
        };
        let actual = &actual;
        if expected.as_deref() == Some(actual.as_str()) {
            continue;
        }
        let label = dir.join(name).display().to_string();
        let mut message = match &expected {
            Some(expected) => format!(
                "{label} differs:\n{}",
                TextDiff::from_lines(expected, actual).unified_diff().context_radius(2).header(&label, "actual")
            ),
            None => format!("{label} is missing"),
        };
        if bless {
            let pending = pending_path(&path);
            match write_pending(root, &pending, actual) {
                Ok(()) => message
                    .push_str(&format!("\nwrote {label}{PENDING_SUFFIX}: review it, then run `{ACCEPT_COMMAND}`")),
                Err(error) => message.push_str(&format!("\ncould not write {}: {error}", pending.display())),
            }
        } else {
            message.push_str(&format!(
                "\nto review the new output, rerun with GAUNTLET_BLESS=1 (or `gauntlet run --bless`), then `{ACCEPT_COMMAND}`"
            ));
        }
        findings.push(Finding::new(Layer::Golden, None, message));
    }
    findings
}

/// The value masked fields are compared as.
pub const MASKED: &str = "$MASKED";

/// Replaces, in every JSON line of `text` (or in `text` as one JSON document if it is not
/// line-delimited), the values at `pointers` with [`MASKED`]; `*` in a pointer matches any
/// key or index. Lines that are not JSON stay as they are.
pub fn mask(text: &str, pointers: &[String]) -> String {
    mask_counting(text, pointers, &mut vec![0; pointers.len()])
}

/// [`mask`], adding to `hits[i]` how many values pointer `i` masked.
fn mask_counting(text: &str, pointers: &[String], hits: &mut [usize]) -> String {
    let mut mask_value = |mut value: Value| {
        for (pointer, hits) in pointers.iter().zip(hits.iter_mut()) {
            let segments: Vec<&str> = pointer.split('/').skip(1).collect();
            *hits += mask_at(&mut value, &segments);
        }
        value
    };
    if let Ok(document) = serde_json::from_str::<Value>(text)
        && text.trim_end().contains('\n')
    {
        return format!("{}\n", canonical::to_string_pretty(&mask_value(document)));
    }
    text.lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(value) => format!("{}\n", canonical::to_string(&mask_value(value))),
            Err(_) => format!("{line}\n"),
        })
        .collect()
}

/// [`mask_counting`] for a requests golden, whose lines hold bodies as increments: each line is
/// masked as the whole request `{route, response_index, model?, body}` it stands for, and the
/// masked bodies are made increments again, so a field that differs on every request (and is
/// masked) does not show as a change.
fn mask_requests(text: &str, pointers: &[String], hits: &mut [usize]) -> String {
    let (mut whole, mut masked) = (Chain::default(), Chain::default());
    let segments: Vec<Vec<&str>> = pointers.iter().map(|pointer| pointer.split('/').skip(1).collect()).collect();
    text.lines()
        .map(|line| {
            let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(line) else {
                return format!("{line}\n");
            };
            let Some(increment) = Increment::take_from(&mut fields) else { return format!("{line}\n") };
            let route = fields.get("route").and_then(Value::as_str).unwrap_or_default().to_owned();
            fields.insert("body".to_owned(), whole.apply(&route, &increment).clone());
            let mut request = Value::Object(fields);
            for (segments, hits) in segments.iter().zip(hits.iter_mut()) {
                *hits += mask_at(&mut request, segments);
            }
            let Value::Object(mut fields) = request else { return format!("{line}\n") };
            let body = fields.remove("body").unwrap_or_default();
            let increment = masked.push(&route, gauntlet_mock_provider::Body::from(body));
            if let Ok(Value::Object(increment)) = serde_json::to_value(&increment) {
                fields.extend(increment);
            }
            format!("{}\n", canonical::to_string(&Value::Object(fields)))
        })
        .collect()
}

/// Masks what `segments` point at; returns how many values it masked.
fn mask_at(value: &mut Value, segments: &[&str]) -> usize {
    let Some((first, rest)) = segments.split_first() else {
        *value = Value::String(MASKED.to_owned());
        return 1;
    };
    let first = first.replace("~1", "/").replace("~0", "~");
    match value {
        Value::Object(map) if first == "*" => map.values_mut().map(|child| mask_at(child, rest)).sum(),
        Value::Array(items) if first == "*" => items.iter_mut().map(|child| mask_at(child, rest)).sum(),
        Value::Object(map) => map.get_mut(&first).map_or(0, |child| mask_at(child, rest)),
        Value::Array(items) => {
            first.parse::<usize>().ok().and_then(|idx| items.get_mut(idx)).map_or(0, |child| mask_at(child, rest))
        }
        _ => 0,
    }
}

/// Writes a pending file, only inside `root` (the corpus that was read): its folder, once
/// created, must resolve under `root`, and the file itself is never opened through a symlink.
fn write_pending(root: &Path, pending: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    let folder = pending.parent().unwrap_or(root);
    std::fs::create_dir_all(folder)?;
    let (folder, root) = (folder.canonicalize()?, root.canonicalize()?);
    if !folder.starts_with(&root) {
        return Err(std::io::Error::other(format!(
            "{} leads outside the corpus {} (a symlink?); refusing to write there",
            folder.display(),
            root.display()
        )));
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(nix::libc::O_NOFOLLOW);
    }
    options.open(pending)?.write_all(text.as_bytes())
}

fn pending_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(PENDING_SUFFIX);
    PathBuf::from(name)
}

/// Every pending golden file under `root`, sorted.
pub fn pending(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    walk(root, &mut |path| {
        if path.to_string_lossy().ends_with(PENDING_SUFFIX) {
            found.push(path.to_owned());
        }
    });
    found.sort();
    found
}

/// Renames every pending file under `root` over its golden; returns the goldens written.
pub fn accept(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut accepted = Vec::new();
    for pending in pending(root) {
        let text = pending.to_string_lossy();
        let golden = PathBuf::from(&text[..text.len() - PENDING_SUFFIX.len()]);
        std::fs::rename(&pending, &golden)?;
        accepted.push(golden);
    }
    Ok(accepted)
}

/// Calls `visit` for every file under `dir`, recursively; unreadable folders are skipped, and
/// a symlinked folder is not entered, so nothing outside the corpus is listed, blessed or
/// accepted.
pub fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_symlink() && path.is_dir() {
            continue;
        }
        if kind.is_dir() {
            walk(&path, visit);
        } else {
            visit(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_masks_that_matched_are_noted() {
        let dir = tempfile::tempdir().unwrap();
        let files = [("acp.jsonl".to_owned(), "{\"a\":1}\n".to_owned())];
        let masks = BTreeMap::from([("acp.jsonl".to_owned(), vec!["/a".to_owned(), "/nowhere".to_owned()])]);
        let mut matched = BTreeSet::new();
        compare_noting_masks(dir.path(), Path::new("g"), &files, &masks, false, &mut matched);
        assert_eq!(matched, BTreeSet::from([("acp.jsonl".to_owned(), "/a".to_owned())]));
    }

    #[test]
    fn requests_are_masked_as_whole_bodies_and_chained_again() {
        // Every request names a fresh cache key: masked, only the conversation's growth shows.
        let text = concat!(
            "{\"body\":{\"input\":[1],\"key\":\"a\"},\"response_index\":0,\"route\":\"root\"}\n",
            "{\"appended\":{\"input\":[2]},\"changed\":{\"key\":\"b\"},\"response_index\":1,\"route\":\"root\"}\n",
        );
        let mut hits = vec![0];
        let masked = mask_requests(text, &["/body/key".to_owned()], &mut hits);
        assert_eq!(
            masked,
            concat!(
                "{\"body\":{\"input\":[1],\"key\":\"$MASKED\"},\"response_index\":0,\"route\":\"root\"}\n",
                "{\"appended\":{\"input\":[2]},\"response_index\":1,\"route\":\"root\"}\n",
            )
        );
        assert_eq!(hits, [2]);
    }

    #[test]
    fn masks_apply_to_every_line_with_wildcards() {
        let text = "{\"a\":1,\"items\":[{\"id\":\"x\",\"t\":\"keep\"},{\"id\":\"y\"}]}\nnot json\n";
        let masked = mask(text, &["/a".to_owned(), "/items/*/id".to_owned(), "/missing/x".to_owned()]);
        assert_eq!(
            masked,
            "{\"a\":\"$MASKED\",\"items\":[{\"id\":\"$MASKED\",\"t\":\"keep\"},{\"id\":\"$MASKED\"}]}\nnot json\n"
        );
        let pretty = "{\n  \"ts\": 1,\n  \"x\": 2\n}\n";
        assert_eq!(mask(pretty, &["/ts".to_owned()]), "{\n  \"ts\": \"$MASKED\",\n  \"x\": 2\n}\n");
    }

    #[cfg(unix)]
    #[test]
    fn blessing_never_writes_outside_the_corpus_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let (corpus, outside) = (dir.path().join("corpus"), dir.path().join("outside"));
        std::fs::create_dir_all(corpus.join("golden")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        // A golden folder that is a link out of the corpus, and a pending file that is a link.
        std::os::unix::fs::symlink(&outside, corpus.join("golden/linked")).unwrap();
        std::fs::create_dir_all(corpus.join("golden/real")).unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), corpus.join("golden/real/log.ndjson.new")).unwrap();
        let files = [("log.ndjson".to_owned(), "new\n".to_owned())];
        for folder in ["golden/linked", "golden/real"] {
            let findings = compare(&corpus, Path::new(folder), &files, true);
            assert!(findings[0].message.contains("could not write"), "{}", findings[0].message);
        }
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "a file was written outside the corpus");
        // Accepting does not enter the linked folder either.
        std::fs::remove_file(corpus.join("golden/real/log.ndjson.new")).unwrap();
        std::fs::write(outside.join("x.new"), "x").unwrap();
        assert!(accept(&corpus.join("golden")).unwrap().is_empty());
        assert!(outside.join("x.new").exists());
    }

    #[test]
    fn a_one_byte_change_shows_as_a_diff_and_blessing_writes_pending() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("log.ndjson"), "a\nb\n").unwrap();
        let files = [("log.ndjson".to_owned(), "a\nc\n".to_owned())];
        let findings = compare(dir.path(), Path::new(""), &files, false);
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("-b\n+c\n"), "{}", findings[0].message);
        assert!(pending(dir.path()).is_empty());
        compare(dir.path(), Path::new(""), &files, true);
        assert_eq!(pending(dir.path()).len(), 1);
        accept(dir.path()).unwrap();
        assert!(compare(dir.path(), Path::new(""), &files, false).is_empty());
        assert!(pending(dir.path()).is_empty());
    }
}
