//! `gauntlet audit`: any NDJSON Log in the contract's format, from any runtime.

use std::path::PathBuf;
use std::process::ExitCode;

use gauntlet_judge::log_file::{self, LogReport};

/// Audits each Log, as text or one JSON object per Log; exit 0 clean, 1 findings, 2 a file
/// that is not a readable Log (the others are still audited).
pub fn audit(logs: &[PathBuf], json: bool) -> ExitCode {
    let (mut clean, mut unreadable) = (true, false);
    for path in logs {
        let file = match log_file::read(path) {
            Ok(file) => file,
            Err(error) => {
                eprintln!("gauntlet: {error}");
                unreadable = true;
                continue;
            }
        };
        let report = LogReport::of(&file);
        clean &= report.is_clean();
        if json {
            println!("{}", gauntlet_agent::canonical::to_string(&report));
        } else {
            print!("{}", report.text());
        }
    }
    match (unreadable, clean) {
        (true, _) => ExitCode::from(2),
        (false, true) => ExitCode::SUCCESS,
        (false, false) => ExitCode::from(1),
    }
}
