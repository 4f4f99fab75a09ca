//! WIRE-RETRY-BOUNDED, on the wire: a turn makes no more Provider requests than its script
//! answers. The mock refuses a request past the script with a 404, so an agent that keeps
//! re-requesting is stopped there, and this names the turn and the count.

use super::{Invariant, Scope, request_turns};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "WIRE-RETRY-BOUNDED", also: &[], name: "retries_bounded", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let turns = request_turns(evidence);
    scenario
        .turns
        .iter()
        .enumerate()
        .filter_map(|(idx, turn)| {
            let made = turns.iter().filter(|request_turn| **request_turn == Some(idx)).count();
            let scripted = turn.respond.len();
            (made > scripted).then(|| {
                format!(
                    "turn {}: {made} Provider requests, the script answers {scripted}; the rest were refused",
                    idx + 1
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::{body, check_played, requests, scenario, user};

    #[test]
    fn requests_past_the_script_are_counted() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ text = [\"x\"], then = \"eof\" }]\n";
        let capture = Capture {
            requests: requests(vec![body(vec![user("a")]), body(vec![user("a")]), body(vec![user("a")])]),
            ..Capture::default()
        };
        assert_eq!(
            check_played(INVARIANT, &capture, &scenario(text)),
            ["turn 1: 3 Provider requests, the script answers 1; the rest were refused"]
        );
        let one = Capture { requests: requests(vec![body(vec![user("a")])]), ..Capture::default() };
        assert!(check_played(INVARIANT, &one, &scenario(text)).is_empty());
    }
}
