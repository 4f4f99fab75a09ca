//! ACP-CANCEL-CLOSES-REQUEST: after `session/cancel`, a Provider response still streaming ends
//! within [`CANCEL_CLOSE_BOUND`] (opencode closes in 250 to 350 ms: a bound scaled with the
//! profile's time scale, 250 ms, judged scheduling noise). ACP asks an agent to stop model work as soon as possible on cancel
//! (peers.md, "Cancellation"); a request left open keeps the Provider generating, and billing,
//! for a turn the user already stopped.
//!
//! The mock notes when each response body ended and who ended it, and the client when it sent
//! each cancel, on one clock: virtual for the reference runtime on the paused clock, real for an
//! external agent. A request of the cancelled turn that arrived no later than the cancel and was
//! still open then must end within the bound after it; who ended it is evidence, not a rule.

use std::time::Duration;

use gauntlet_mock_provider::Timing;

use crate::capture::{CANCEL_CLOSE_BOUND, Cancel};
use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::request_turns;

pub const INVARIANT: Invariant = Invariant {
    id: "ACP-CANCEL-CLOSES-REQUEST",
    also: &[],
    name: "cancel_closes_request",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    let capture = evidence.capture;
    let bound = CANCEL_CLOSE_BOUND;
    let turns = request_turns(evidence);
    capture
        .timings
        .iter()
        .enumerate()
        .filter_map(|(idx, timing)| {
            let turn = turns.get(idx).copied().flatten();
            // A `$/cancel_request` is one an agent MAY act on (ACP "Cancellation"): this SHOULD
            // is `session/cancel`'s.
            let cancel = capture.cancels.iter().find(|cancel| !cancel.by_request && open_at(timing, cancel, turn))?;
            let late = match timing.ended {
                None => "it was never closed while the client watched".to_owned(),
                Some(ended) if ended.at.saturating_sub(cancel.sent) > bound => format!(
                    "it ended ({}) at {}, {} later",
                    ended.how,
                    millis(ended.at),
                    millis(ended.at.saturating_sub(cancel.sent))
                ),
                Some(_) => return None,
            };
            Some(format!(
                "Provider request {} (turn {}) was still streaming when session/cancel was sent at {}, and {late}; \
                 the bound is {}",
                idx + 1,
                cancel.turn + 1,
                millis(cancel.sent),
                millis(bound)
            ))
        })
        .collect()
}

/// Whether a request of scenario turn `turn` (when known) was open when `cancel` was sent: it
/// arrived no later, its body had not ended, and it belongs to the cancelled turn.
fn open_at(timing: &Timing, cancel: &Cancel, turn: Option<usize>) -> bool {
    turn.is_none_or(|turn| turn == cancel.turn)
        && timing.received <= cancel.sent
        && timing.ended.is_none_or(|ended| ended.at > cancel.sent)
}

/// A time as milliseconds, with a decimal for real clocks.
fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use gauntlet_mock_provider::{Ended, StreamEnd};

    use super::*;
    use crate::capture::Capture;
    use crate::judge::fixture::{body, check, check_played, requests, scenario, user};

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn timing(received: u64, ended: Option<(u64, StreamEnd)>) -> Timing {
        Timing { received: ms(received), ended: ended.map(|(at, how)| Ended { at: ms(at), how }) }
    }

    /// One request received at 0 and a cancel of turn 1 at 100 ms.
    fn cancelled(ended: Option<(u64, StreamEnd)>) -> Capture {
        Capture {
            requests: requests(vec![body(vec![user("a")])]),
            timings: vec![timing(0, ended)],
            cancels: vec![Cancel { turn: 0, sent: ms(100), impatient: false, by_request: false }],
            ..Capture::default()
        }
    }

    #[test]
    fn a_request_closed_promptly_after_the_cancel_passes() {
        assert!(check(INVARIANT, &cancelled(Some((100, StreamEnd::ClientClosed)))).is_empty());
        assert!(check(INVARIANT, &cancelled(Some((1100, StreamEnd::ClientClosed)))).is_empty());
        // Finished by the Provider before the cancel: nothing was left to close.
        assert!(check(INVARIANT, &cancelled(Some((40, StreamEnd::Finished)))).is_empty());
    }

    #[test]
    fn a_request_left_open_or_closed_late_fails_with_its_times() {
        assert_eq!(
            check(INVARIANT, &cancelled(None)),
            ["Provider request 1 (turn 1) was still streaming when session/cancel was sent at 100.0 ms, and it was \
              never closed while the client watched; the bound is 1000.0 ms"]
        );
        assert_eq!(
            check(INVARIANT, &cancelled(Some((1500, StreamEnd::Finished)))),
            ["Provider request 1 (turn 1) was still streaming when session/cancel was sent at 100.0 ms, and it \
              ended (finished by the provider) at 1500.0 ms, 1400.0 ms later; the bound is 1000.0 ms"]
        );
    }

    #[test]
    fn requests_after_the_cancel_or_of_another_turn_do_not_count() {
        let text = "title = \"t\"\n[[turn]]\nprompt = \"a\"\ncancel = \"answered\"\n\
                    respond = [{ text = [\"x\"] }]\n[[turn]]\nprompt = \"b\"\nrespond = [{ text = [\"y\"] }]\n";
        // On the paused clock the next turn's request arrives at the very moment of the cancel.
        let capture = Capture {
            requests: requests(vec![body(vec![user("a")]), body(vec![user("a"), user("b")])]),
            timings: vec![timing(0, Some((0, StreamEnd::Finished))), timing(0, Some((5000, StreamEnd::Finished)))],
            cancels: vec![Cancel { turn: 0, sent: ms(0), impatient: false, by_request: false }],
            ..Capture::default()
        };
        assert!(check_played(INVARIANT, &capture, &scenario(text)).is_empty());
        let later = Capture { timings: vec![timing(0, Some((0, StreamEnd::Finished))), timing(1, None)], ..capture };
        assert!(check(INVARIANT, &later).is_empty());
    }

    #[test]
    fn the_bound_is_real_reaction_time_whatever_the_time_scale() {
        let text =
            "title = \"t\"\n[[turn]]\nprompt = \"a\"\ncancel = \"first_delta\"\nrespond = [{ text = [\"x\"] }]\n";
        let fast = scenario(text).scaled(0.01);
        let closed_at = |end: u64| cancelled(Some((end, StreamEnd::ClientClosed)));
        assert!(check_played(INVARIANT, &closed_at(450), &fast).is_empty());
        assert_eq!(check_played(INVARIANT, &closed_at(1200), &fast).len(), 1);
    }
}
