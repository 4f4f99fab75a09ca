//! MOCK-STRICT: the reference's run used the Provider script exactly: no request went
//! unanswered by the script, and no scripted response was left unconsumed. It keeps the corpus
//! honest, so it judges the reference only; another agent's requests the script could not
//! place are reported as what they are by MOCK-UNPLACED (`unplaced_requests`), and fail only
//! the rule their behaviour breaks (a retry past its budget: WIRE-RETRY-BOUNDED).

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::unplaced;

pub const INVARIANT: Invariant = Invariant {
    id: "MOCK-STRICT",
    also: &[],
    name: "provider_script_strict",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    if evidence.scenario.is_some_and(|scenario| scenario.knobs.is_some()) {
        return Vec::new();
    }
    unplaced(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{check, check_played, scenario};
    use crate::scenario::Knobs;

    #[test]
    fn leftovers_and_extras_are_both_caught_on_the_reference_only() {
        let capture = Capture {
            unconsumed: vec![("root".into(), 2)],
            unmatched: vec!["POST /v1/responses: route `root` is exhausted".into()],
            ..Capture::default()
        };
        assert_eq!(check(INVARIANT, &capture).len(), 2);
        let mut checked = scenario("title = \"t\"\n[[turn]]\nprompt = \"a\"\nrespond = [{ text = [\"x\"] }]\n");
        assert_eq!(check_played(INVARIANT, &capture, &checked).len(), 2);
        checked.knobs = Some(Knobs::default());
        assert!(check_played(INVARIANT, &capture, &checked).is_empty());
    }
}
