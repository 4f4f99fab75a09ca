//! MOCK-UNPLACED (MAY): the reference makes only the Provider requests its script places;
//! another agent may make others (a request after its answer, a continuation after a truncated
//! answer, a queued prompt's request, a retry past the mock's cap) and leave scripted responses
//! unasked (fewer retries than the script allows). Each is reported as what the mock saw it to
//! be, as a difference from the reference and never a failure: what such a request breaks, if
//! anything, is another rule's to say.

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::unplaced;

pub const INVARIANT: Invariant = Invariant {
    id: "MOCK-UNPLACED",
    also: &[],
    name: "unplaced_requests",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    if evidence.scenario.is_none_or(|scenario| scenario.knobs.is_none()) {
        return Vec::new();
    }
    unplaced(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check_played, scenario};
    use crate::scenario::Knobs;

    #[test]
    fn another_agents_unplaced_requests_are_reported_the_references_are_mock_strict() {
        let capture =
            Capture { unmatched: vec!["POST /v1/responses: turn 1 is exhausted".into()], ..Capture::default() };
        let mut played = scenario("title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ text = [\"x\"] }]\n");
        assert!(check_played(INVARIANT, &capture, &played).is_empty());
        played.knobs = Some(Knobs::default());
        assert_eq!(
            check_played(INVARIANT, &capture, &played),
            ["unscripted request: POST /v1/responses: turn 1 is exhausted"]
        );
    }
}
