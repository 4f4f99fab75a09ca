//! ACP-NOTICE-MATCHES-OUTCOME (a SHOULD): a notice an agent shows in its own words (text during
//! a prompt that the model never said, [`unsaid_all`]) does not announce a recovery ("resuming",
//! "retry succeeded", "recovered", "reconnected") in a turn that then failed or was cancelled:
//! the client is told the fault was overcome when it was not. gauntlet's reading of seed 000's
//! presenter projection (presenters "must not collapse failure or partial states into clean
//! completion"), at a SHOULD since the words are read, not typed.

use gauntlet_agent::TerminalStatus;

use crate::judge::evidence::Evidence;
use crate::judge::transcript::shown_text;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::said::{said, unsaid_all};

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-NOTICE-MATCHES-OUTCOME",
    also: &[],
    name: "notice_matches_outcome",
    applies: Scope::Run,
    check,
};

/// Words that announce a fault overcome, lowercase.
const RECOVERED: [&str; 7] =
    ["resuming", "resumed", "retry succeeded", "retry finished", "recovered", "reconnected", "back online"];

fn check(evidence: &Evidence) -> Vec<Violation> {
    let Some(scenario) = evidence.scenario else { return Vec::new() };
    let said = said(scenario);
    let live: Vec<_> = evidence.exchanges().iter().filter(|exchange| !exchange.busy).collect();
    let driven = evidence.driven_turns(live.len());
    let first_driven = evidence.first_driven_turn();
    let mut problems = Vec::new();
    for (idx, (exchange, turn)) in live.iter().zip(&driven).enumerate() {
        let Some(status) = turn.status.filter(|status| status.is_failure() || *status == TerminalStatus::Interrupted)
        else {
            continue;
        };
        let notices = unsaid_all(&shown_text(exchange), &said);
        let Some(notice) = notices.iter().find(|notice| recovers(notice)) else { continue };
        let n = first_driven + idx + 1;
        problems.push(Violation::in_turn(
            n,
            format!(
                "turn {n} is `{status}` ({}), yet the agent showed in its own words that it recovered: {notice:?}",
                turn.source
            ),
        ));
    }
    problems
}

/// Whether a notice announces a fault overcome.
fn recovers(notice: &str) -> bool {
    let notice = notice.to_lowercase();
    RECOVERED.iter().any(|words| notice.contains(words))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::capture::{Capture, Reported};
    use crate::judge::fixture::{check_played, chunk, entry, prompt, scenario};

    /// "Retry finished, resuming." in a turn the Provider failed (retries exhausted) is
    /// caught; the same turn showing "Retrying (attempt 2 of 3)", or the model's own words, is
    /// not; so is the notice in a turn that completed.
    #[test]
    fn a_recovery_announced_in_a_failed_turn_is_caught() {
        let failed = scenario(
            "title = \"t\"\n[config]\nmax_retries = 0\n[[turn]]\nprompt = \"q\"\nexpect = \"failed\"\nerror_kind = \"provider_http_error\"\nrespond = [{ status = 500 }]\n",
        );
        let shown = |notice: &str| {
            let error = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "failed"}});
            let acp = vec![
                entry("client", prompt(1, "q")),
                entry("agent", chunk("agent_message_chunk", notice)),
                entry("agent", error),
            ];
            let reported = vec![Reported { stop_reason: None, error: Some(json!({"code": -32603})) }];
            Capture { acp, reported, ..Capture::default() }
        };
        let found = check_played(INVARIANT, &shown("Retry finished, resuming."), &failed);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("yet the agent showed in its own words that it recovered: \"Retry finished, resuming.\""),
            "{found:?}"
        );
        assert!(check_played(INVARIANT, &shown("Retrying (attempt 2 of 3)"), &failed).is_empty());
        let completed =
            scenario("title = \"t\"\n[[turn]]\nprompt = \"q\"\nrespond = [{ text = [\"Resuming the build.\"] }]\n");
        assert!(check_played(INVARIANT, &shown("Resuming the build."), &completed).is_empty());
    }
}
