//! MOCK-STRICT: the run used the Provider script exactly: no request went unanswered by the
//! script, and no scripted response was left unconsumed.

use super::{Invariant, Scope};
use crate::judge::Evidence;

pub const INVARIANT: Invariant =
    Invariant { id: "MOCK-STRICT", also: &[], name: "provider_script_strict", scope: Scope::Run, check };

fn check(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    let unmatched = capture.unmatched.iter().map(|why| format!("unscripted request: {why}"));
    let unconsumed = capture
        .unconsumed
        .iter()
        .map(|(route, index)| format!("scripted response {index} of route `{route}` was never requested"));
    unmatched.chain(unconsumed).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::judge::invariants::fixture::check;

    #[test]
    fn leftovers_and_extras_are_both_caught() {
        let capture = Capture {
            unconsumed: vec![("root".into(), 2)],
            unmatched: vec!["POST /v1/responses: route `root` is exhausted".into()],
            ..Capture::default()
        };
        assert_eq!(check(INVARIANT, &capture).len(), 2);
    }
}
