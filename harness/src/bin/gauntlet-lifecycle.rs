//! `gauntlet-lifecycle`: the reference lifecycle monitor and bridge as an adapter-protocol
//! command (docs/adapters.md).
//!
//! Thin glue over `gauntlet::lifecycle::reference::Session`: the first input line chooses and
//! configures the machine, then every step line is answered with its records, one JSON object
//! per line, flushed at once. Errors go to stderr with exit status 2.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use gauntlet::lifecycle::reference::Session;

fn main() -> ExitCode {
    match serve(std::io::stdin().lock(), std::io::stdout().lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("gauntlet-lifecycle: {error}");
            ExitCode::from(2)
        }
    }
}

fn serve(input: impl BufRead, mut output: impl Write) -> Result<(), String> {
    let mut session: Option<Session> = None;
    for line in input.lines() {
        let line = line.map_err(|error| format!("reading stdin: {error}"))?;
        if line.trim().is_empty() {
            continue;
        }
        match &mut session {
            None => session = Some(Session::start(&line).map_err(|error| error.to_string())?),
            Some(session) => {
                for record in session.step(&line).map_err(|error| error.to_string())? {
                    writeln!(output, "{record}").map_err(|error| format!("writing stdout: {error}"))?;
                }
                output.flush().map_err(|error| format!("writing stdout: {error}"))?;
            }
        }
    }
    Ok(())
}
