//! Embeds the corpus (`scenarios/` and `golden/` of the workspace) in the `gauntlet` binary, so
//! an installed `gauntlet` plays it from any folder (`corpus::embedded`, issue 33). Where the
//! folders are absent (a packaged crate), nothing is embedded.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let workspace = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut files = Vec::new();
    for folder in ["scenarios", "golden"] {
        let dir = workspace.join(folder);
        println!("cargo:rerun-if-changed={}", dir.display());
        walk(&dir, &mut files);
    }
    files.sort();
    let mut out = String::from("/// The corpus files, `(path under the corpus root, bytes)`, sorted by path.\n");
    out.push_str("pub static FILES: &[(&str, &[u8])] = &[\n");
    for file in &files {
        let Ok(relative) = file.strip_prefix(&workspace) else { continue };
        let name = relative.to_string_lossy().replace('\\', "/");
        // Pending goldens are not the corpus.
        if name.ends_with(".new") {
            continue;
        }
        let _ = writeln!(out, "    ({name:?}, include_bytes!({:?})),", file.display().to_string());
    }
    out.push_str("];\n");
    let target = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("corpus.rs");
    if let Err(error) = std::fs::write(&target, out) {
        println!("cargo:warning=cannot write {}: {error}", target.display());
    }
}

/// Every file under `dir`, recursively; symlinked folders are not entered.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            walk(&path, files);
        } else if kind.is_file() {
            files.push(path);
        }
    }
}
