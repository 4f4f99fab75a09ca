//! TURN-USAGE-EVIDENCE: every Provider response the runtime read to its end is recorded as one
//! `provider_usage` event holding the usage that response reported, in the contract's
//! dialect-neutral names. Judged against the wire: the root route's clean responses (the
//! script ends them with their terminal event), in order, against the `provider_usage` lines
//! this run wrote; one the provider finished sending must have its record, one the client
//! closed early may. So a runtime that drops usage, records zeros or another response's
//! numbers is caught, not only one whose Log golden differs.

use gauntlet_mock_provider::increment::Chain;
use gauntlet_mock_provider::{StreamEnd, Usage};

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope, Violation};
use crate::judge::views::requests::served;
use crate::log_line::ProviderUsage;

pub const INVARIANT: Invariant = Invariant {
    id: "TURN-USAGE-EVIDENCE",
    also: &[],
    name: "usage_recorded",
    applies: Scope::Run,
    check: |evidence| Violation::unplaced(check(evidence)),
};

fn check(evidence: &Evidence) -> Vec<String> {
    if evidence.capture.log.is_empty() {
        return Vec::new(); // no Log: usage is the agent's own business
    }
    // Lines this run wrote: after the first driven turn's prompt (a preloaded Log's usage
    // belongs to requests this capture never saw).
    let since = evidence.audit.turns.get(evidence.first_driven_turn()).map_or(u64::MAX, |turn| turn.user_seq);
    let recorded: Vec<_> = evidence
        .lines
        .iter()
        .filter_map(|line| Some((line.seq.filter(|seq| *seq > since)?, line.provider_usage()?)))
        .collect();
    // Each clean response, and whether the provider saw its body read to the end (`Finished`):
    // one the client closed may still have been read whole (a client may drop the connection
    // after the terminal event), so it may have its usage, but need not.
    // The usage the mock reported depends on the request too (a cut by the output limit
    // reports the limit it allowed), so each request's whole body is read back.
    let mut chain = Chain::default();
    let clean: Vec<_> = evidence
        .capture
        .requests
        .iter()
        .enumerate()
        .filter_map(|(idx, request)| {
            let body = chain.apply(&request.route, &request.body);
            let response = served(evidence, request).filter(|response| !response.fails())?;
            let ended = evidence.capture.timings.get(idx)?.ended?.how;
            let usage = evidence.capture.dialect.reported_usage(response, Some(body));
            Some((idx + 1, usage, ended == StreamEnd::Finished))
        })
        .collect();
    let mut required_after = clean.iter().filter(|(_, _, read_whole)| *read_whole).count();
    let mut problems = Vec::new();
    let mut matched = 0;
    for &(n, usage, read_whole) in &clean {
        if read_whole {
            required_after -= 1;
        } else if recorded.len().saturating_sub(matched) <= required_after {
            continue; // every record left is owed to a response read whole
        }
        let mismatched: Option<Vec<String>> = recorded.get(matched).map(|(_, recorded)| {
            compared(&usage, recorded)
                .into_iter()
                .filter(|(_, want, got)| *got != Some(*want))
                .map(|(pointer, want, got)| {
                    let got = got.map_or("absent".into(), |got| got.to_string());
                    format!("{pointer} is {got} (reported {want})")
                })
                .collect()
        });
        match mismatched {
            Some(mismatched) if mismatched.is_empty() => matched += 1,
            _ if !read_whole => {}
            None => problems.push(format!(
                "request {n}'s response was read to its end and reported {}, but no provider_usage records it",
                shown(&usage)
            )),
            Some(mismatched) => {
                problems.push(format!(
                    "the provider_usage at seq {} records request {n}'s usage wrongly: {}",
                    recorded[matched].0,
                    mismatched.join(", ")
                ));
                matched += 1;
            }
        }
    }
    for (seq, _) in &recorded[matched.min(recorded.len())..] {
        problems.push(format!("the provider_usage at seq {seq} answers no response that was read to its end"));
    }
    problems
}

/// The dialect-neutral usage a response's numbers become (docs/contract.md "Usage").
/// Each count of `usage` as the Provider reported it and as the Log recorded it, named by where
/// the Log holds it.
fn compared(usage: &Usage, recorded: &ProviderUsage) -> [(&'static str, u64, Option<u64>); 5] {
    [
        ("/usage/input_tokens", usage.input, recorded.input_tokens),
        ("/usage/input_tokens_details/cached_tokens", usage.cached, recorded.cached_tokens),
        ("/usage/output_tokens", usage.output, recorded.output_tokens),
        ("/usage/output_tokens_details/reasoning_tokens", usage.reasoning, recorded.reasoning_tokens),
        ("/usage/total_tokens", usage.input.saturating_add(usage.output), recorded.total_tokens),
    ]
}

fn shown(usage: &Usage) -> String {
    format!("input {} (cached {}), output {} (reasoning {})", usage.input, usage.cached, usage.output, usage.reasoning)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use std::time::Duration;

    use gauntlet_mock_provider::{Ended, Timing};
    use serde_json::json;

    use super::*;
    use crate::judge::fixture::{body, capture, check_played, requests, scenario, user};

    const TWO: &str = "title = \"t\"\n[[turn]]\nprompt = \"Go\"\nrespond = [{ calls = [{ name = \"list\", args = {} }] }, { text = [\"Done.\"], usage = { input = 7, output = 3 } }]\n";

    fn usage(input: u64, output: u64) -> Value {
        json!({"usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input + output}})
    }

    fn played(events: &[(&str, Value)], ends: &[StreamEnd]) -> Vec<String> {
        let scenario = scenario(TWO);
        let mut capture = capture(events, &[]);
        capture.requests = requests(vec![body(vec![user("Go")]), body(vec![user("Go")])]);
        capture.timings = ends
            .iter()
            .map(|how| Timing { received: Duration::ZERO, ended: Some(Ended { at: Duration::ZERO, how: *how }) })
            .collect();
        capture.reported.push(crate::capture::Reported { stop_reason: Some("end_turn".into()), error: None });
        check_played(INVARIANT, &capture, &scenario)
    }

    fn log(second: Value) -> Vec<(&'static str, Value)> {
        vec![
            ("user_message", json!({"text": "Go"})),
            ("provider_usage", usage(100, 10)),
            ("tool_call", json!({"call_id": "c1", "name": "list", "args": {}})),
            ("tool_result", json!({"call_id": "c1", "ok": true, "output": ""})),
            ("provider_usage", second),
            ("assistant_message", json!({"text": "Done."})),
        ]
    }

    #[test]
    fn each_response_read_whole_has_its_own_usage() {
        let whole = [StreamEnd::Finished, StreamEnd::Finished];
        assert_eq!(played(&log(usage(7, 3)), &whole), Vec::<String>::new());
        assert_eq!(
            played(&log(usage(100, 10)), &whole),
            [
                "the provider_usage at seq 4 records request 2's usage wrongly: /usage/input_tokens is 100 (reported 7), \
              /usage/output_tokens is 10 (reported 3), /usage/total_tokens is 110 (reported 10)"
            ]
        );
        assert_eq!(
            played(&log(json!({})), &whole)[0],
            "the provider_usage at seq 4 records request 2's usage wrongly: /usage/input_tokens is absent (reported 7), \
             /usage/input_tokens_details/cached_tokens is absent (reported 0), /usage/output_tokens is absent (reported 3), \
             /usage/output_tokens_details/reasoning_tokens is absent (reported 0), /usage/total_tokens is absent (reported 10)"
        );
    }

    #[test]
    fn a_missing_record_is_caught_and_a_response_cut_short_needs_none() {
        let mut events = log(usage(7, 3));
        events.remove(4);
        let whole = [StreamEnd::Finished, StreamEnd::Finished];
        let problems = played(&events, &whole);
        assert_eq!(
            problems,
            [
                "request 2's response was read to its end and reported input 7 (cached 0), output 3 (reasoning 0), but no provider_usage records it"
            ]
        );
        // The client closed the second body before its end: no usage is owed for it, and
        // what is recorded for it must still be its own.
        assert_eq!(played(&events, &[StreamEnd::Finished, StreamEnd::ClientClosed]), Vec::<String>::new());
        assert_eq!(played(&log(usage(7, 3)), &[StreamEnd::Finished, StreamEnd::ClientClosed]), Vec::<String>::new());
        assert_eq!(
            played(&log(usage(5, 5)), &[StreamEnd::Finished, StreamEnd::ClientClosed]),
            ["the provider_usage at seq 4 answers no response that was read to its end"]
        );
    }
}
