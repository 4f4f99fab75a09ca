//! Invariants: contract rules checked on every scenario's capture, whatever it is about.
//!
//! One rule per file, named for the rule, its requirement id first in its `//!` line, tests
//! inside. This module only lists them ([`ALL`]) and runs them; docs/contract.md names them in
//! its "checked by" column. What a rule is (its [`Scope`], what it returns) is
//! [`crate::judge::turn_rule`]'s, and what several rules read is in the readings below them, so
//! no rule imports this list or another rule.
//!
//! A rule's [`Scope`] says what it reads. Rules that read a Log, alone or with the requests
//! of its Session, judge every Log of a run: the root's and each child Session's (Subagents,
//! workflow steps), so a child's Turn is held to the same evidence, id, seq and replay rules.

mod acp_schema;
mod answer_in_turn;
mod audit_only_not_replayed;
mod busy_prompt_refused;
mod cancel_closes_request;
mod cancel_request_answered;
mod carries_conversation;
mod checkpoint_bundle_complete;
mod client_capabilities_respected;
mod client_text_once;
mod close_refuses_prompt;
mod compaction_keeps_prompt;
mod compaction_no_partial;
mod compaction_recorded;
mod completed_needs_terminal_event;
mod cut_call_not_run;
mod delegation_acp_truthful;
mod delegation_reported;
mod diagnostic_not_answer;
mod error_data_complete;
mod failure_evidence_complete;
mod failure_not_end_turn;
mod gated_updates_advertised;
mod image_reaches_provider;
mod jsonrpc_errors_standard;
mod link_reaches_provider;
mod load_matches_live;
mod load_replays_clean_transcript;
mod log_canonical_only;
mod log_ids_unique;
mod log_no_resource_bytes;
mod log_seq_gapless;
mod log_seq_monotonic;
mod no_duplicate_assistant;
mod no_partial_text_replayed;
mod no_retry_after_text;
mod notice_matches_outcome;
mod orphan_calls_repaired;
mod partial_keeps_streamed_text;
mod plan_whole_list;
mod prompt_retry_not_rerun;
mod prompts_answered;
mod provider_script_strict;
mod reasoning_same_model;
mod refusal_leaves_conversation;
mod refusal_stop_reason;
mod replay_complete_once;
mod resume_keeps_context;
mod resume_no_replay;
mod retries_bounded;
mod session_listed;
mod stop_reason_matches_log;
mod subagent_completed_evidence;
mod subagent_elapsed_time;
mod subagent_event_fields;
mod subagent_replay_terminal_only;
mod subagent_terminal_evidence;
mod terminal_evidence;
mod tool_calls_paired;
mod tool_calls_projected;
mod tool_results_served;
mod truncation_stop_reason;
mod turns_terminated;
mod unplaced_requests;
mod usage_recorded;
mod version_negotiated;
mod wait_outcome_truthful;
mod workflow_ok_only_when_complete;
mod workflow_outcome_details;
mod workflow_result_agrees;
mod workflow_schedule_safe;
mod workflow_step_outcomes;
mod workflow_timeout_evidence;
mod workflow_waves;

use crate::judge::evidence::Evidence;
use crate::judge::turn_rule::{Invariant, Scope};
use crate::judge::views::log::detached_children;
use crate::verdict::Finding;

/// Every invariant, checked on every capture.
pub const ALL: &[Invariant] = &[
    log_canonical_only::INVARIANT,
    log_seq_monotonic::INVARIANT,
    log_seq_gapless::INVARIANT,
    log_ids_unique::INVARIANT,
    terminal_evidence::INVARIANT,
    turns_terminated::INVARIANT,
    failure_evidence_complete::INVARIANT,
    partial_keeps_streamed_text::INVARIANT,
    no_partial_text_replayed::INVARIANT,
    diagnostic_not_answer::INVARIANT,
    carries_conversation::INVARIANT,
    compaction_recorded::INVARIANT,
    cut_call_not_run::INVARIANT,
    compaction_keeps_prompt::INVARIANT,
    compaction_no_partial::INVARIANT,
    audit_only_not_replayed::INVARIANT,
    tool_calls_paired::INVARIANT,
    delegation_reported::INVARIANT,
    tool_results_served::INVARIANT,
    orphan_calls_repaired::INVARIANT,
    provider_script_strict::INVARIANT,
    unplaced_requests::INVARIANT,
    stop_reason_matches_log::INVARIANT,
    truncation_stop_reason::INVARIANT,
    refusal_stop_reason::INVARIANT,
    refusal_leaves_conversation::INVARIANT,
    completed_needs_terminal_event::INVARIANT,
    load_replays_clean_transcript::INVARIANT,
    prompts_answered::INVARIANT,
    prompts_answered::AFTER_RUNNING,
    busy_prompt_refused::INVARIANT,
    jsonrpc_errors_standard::INVARIANT,
    acp_schema::INVARIANT,
    client_capabilities_respected::INVARIANT,
    version_negotiated::INVARIANT,
    no_retry_after_text::INVARIANT,
    notice_matches_outcome::INVARIANT,
    client_text_once::INVARIANT,
    retries_bounded::INVARIANT,
    no_duplicate_assistant::INVARIANT,
    error_data_complete::INVARIANT,
    failure_not_end_turn::INVARIANT,
    cancel_closes_request::INVARIANT,
    cancel_request_answered::INVARIANT,
    resume_no_replay::INVARIANT,
    resume_keeps_context::INVARIANT,
    close_refuses_prompt::INVARIANT,
    session_listed::INVARIANT,
    subagent_terminal_evidence::INVARIANT,
    subagent_event_fields::INVARIANT,
    subagent_completed_evidence::INVARIANT,
    subagent_elapsed_time::INVARIANT,
    subagent_replay_terminal_only::INVARIANT,
    wait_outcome_truthful::INVARIANT,
    workflow_ok_only_when_complete::INVARIANT,
    workflow_result_agrees::INVARIANT,
    workflow_step_outcomes::INVARIANT,
    workflow_outcome_details::INVARIANT,
    workflow_timeout_evidence::INVARIANT,
    checkpoint_bundle_complete::INVARIANT,
    workflow_schedule_safe::INVARIANT,
    workflow_waves::INVARIANT,
    delegation_acp_truthful::INVARIANT,
    tool_calls_projected::INVARIANT,
    answer_in_turn::INVARIANT,
    load_matches_live::INVARIANT,
    usage_recorded::INVARIANT,
    reasoning_same_model::INVARIANT,
    plan_whole_list::INVARIANT,
    log_no_resource_bytes::INVARIANT,
    image_reaches_provider::INVARIANT,
    link_reaches_provider::INVARIANT,
    replay_complete_once::INVARIANT,
    prompt_retry_not_rerun::INVARIANT,
    gated_updates_advertised::INVARIANT,
];

/// The invariants that need nothing but a Log ([`Scope::Log`]): `gauntlet audit` runs exactly
/// these over any Log; `log_only_is_exactly_the_rules_that_read_only_logs` keeps the scopes honest.
pub fn log_only() -> impl Iterator<Item = &'static Invariant> {
    ALL.iter().filter(|invariant| invariant.applies == Scope::Log)
}

/// Runs every invariant on the run, then the Log and replay rules on each child Session's Log;
/// a child's findings name it, and are not placed (a place is the root Session's).
pub fn check_all(evidence: &Evidence) -> Vec<Finding> {
    let mut findings = check(evidence, ALL.iter(), "");
    let detached = detached_children(evidence);
    for session_id in evidence.capture.children.keys() {
        let capture = evidence.capture.child(session_id);
        let child = Evidence::of_child(&capture, detached.contains(&session_id.as_str()));
        let per_log = ALL.iter().filter(|invariant| invariant.applies != Scope::Run);
        let prefix = format!("child Session `{session_id}`: ");
        findings.extend(check(&child, per_log, &prefix).into_iter().map(|finding| finding.at(None)));
    }
    findings
}

fn check<'a>(evidence: &Evidence, invariants: impl Iterator<Item = &'a Invariant>, prefix: &str) -> Vec<Finding> {
    invariants
        .flat_map(|invariant| invariant.run(evidence))
        .map(|finding| Finding { message: format!("{prefix}{}", finding.message), ..finding })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What only a run has, beyond a Log: requests, transcripts, answers, the script, the clock.
    const RUN_EVIDENCE: [&str; 17] = [
        "capture.requests",
        "read_requests(",
        "read_new_messages(",
        "judge_messages(",
        "capture.acp",
        "capture.reported",
        "capture.timings",
        "capture.cancels",
        "capture.unmatched",
        "capture.unconsumed",
        "evidence.scenario",
        "served(",
        "request_turns(",
        "driven_turns(",
        "exchanges(",
        "on_each_transcript(",
        "on_each_raw_transcript(",
    ];

    /// A rule that names run evidence but needs only a Log all the same, and why.
    const EXCEPTIONS: [(&str, &str); 1] =
        [("terminal_evidence", "reads `reported` only to count the turns this run drove; a bare Log drove none")];

    #[test]
    fn log_only_is_exactly_the_rules_that_read_only_logs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/judge/invariants");
        for invariant in ALL {
            let text = std::fs::read_to_string(dir.join(format!("{}.rs", invariant.name))).unwrap();
            let rule = text.split("#[cfg(test)]").next().unwrap();
            let reads_run = RUN_EVIDENCE.iter().any(|needle| rule.contains(needle))
                && !EXCEPTIONS.iter().any(|(name, _)| *name == invariant.name);
            let listed = invariant.applies == Scope::Log;
            assert_eq!(
                listed, !reads_run,
                "{}: of Scope::Log = {listed}, reads run evidence = {reads_run}",
                invariant.name
            );
        }
    }
}

/// Rules judged on every Log of a run.
#[cfg(test)]
mod per_log {
    use serde_json::{Value, json};

    use super::*;
    use crate::judge::fixture::capture;

    /// A child Log, as lines, from `(type, data)` events.
    fn child_log(events: &[(&str, Value)]) -> Vec<String> {
        capture(events, &[]).log
    }

    fn messages(findings: &[Finding]) -> Vec<String> {
        findings
            .iter()
            .map(|finding| format!("{}: {}", finding.requirement.as_deref().unwrap_or("-"), finding.message))
            .collect()
    }

    #[test]
    fn child_logs_are_held_to_the_log_rules_and_named() {
        let failed = json!({"terminal_status": "failed", "error_kind": "network", "message": "m"});
        let mut run = capture(&[], &[]);
        run.children.insert(
            "sub_1".into(),
            child_log(&[
                ("user_message", json!({"text": "t"})),
                ("turn_failed", failed.clone()),
                ("turn_failed", failed),
            ]),
        );
        run.children.insert("sub_2".into(), child_log(&[("user_message", json!({"text": "t"}))]));
        let found = messages(&check_all(&Evidence::new(&run)));
        assert!(
            found.contains(
                &"TURN-TERMINAL-EVIDENCE: child Session `sub_1`: turn at seq 0 has 2 turn_failed events".into()
            ),
            "{found:#?}"
        );
        assert!(
            found.contains(
                &"TURN-TERMINAL-EVIDENCE: child Session `sub_2`: turn at seq 0 has no terminal evidence in the Log"
                    .into()
            ),
            "{found:#?}"
        );
    }

    #[test]
    fn a_detached_child_may_end_without_evidence() {
        let detached =
            json!({"event": "detached", "status": "detached", "subagent_id": "sub_1", "child_session_id": "sub_1"});
        let mut run = capture(&[("subagent_event", detached)], &[]);
        run.children.insert("sub_1".into(), child_log(&[("user_message", json!({"text": "t"}))]));
        let found = messages(&check_all(&Evidence::new(&run)));
        assert!(!found.iter().any(|message| message.contains("child Session `sub_1`")), "{found:#?}");
    }
}

/// Every ACP rule on v2 transcripts, read through the v1 reading: a turn that tells the truth in
/// v2 is no finding, and a lie is the finding it is in v1.
#[cfg(test)]
mod v2_transcripts {
    use agent_client_protocol_schema::v2;
    use serde_json::{Value, json};

    use super::ALL;
    use crate::capture::{Capture, Reported};
    use crate::judge::fixture::{capture, check, entry};
    use crate::judge::v1_reading::v2_fixture::{failed, one_turn};

    /// What every ACP rule finds, each as `ID: message`.
    fn acp_findings(capture: &Capture) -> Vec<String> {
        ALL.iter()
            .filter(|invariant| invariant.id.starts_with("ACP-"))
            .flat_map(|invariant| {
                check(*invariant, capture).into_iter().map(|found| format!("{}: {found}", invariant.id))
            })
            .collect()
    }

    /// A Log of one turn (`events` after its prompt) and a v2 transcript of it, whose prompt
    /// answer the driver recorded as v2 gives it: the acknowledgement, no stop reason.
    fn played(events: &[(&str, Value)], transcript: Vec<Value>) -> Capture {
        let mut log = vec![("user_message", json!({"text": "Name a prime."}))];
        log.extend(events.iter().cloned());
        Capture { acp: transcript, reported: vec![Reported { stop_reason: None, error: None }], ..capture(&log, &[]) }
    }

    #[test]
    fn a_clean_v2_turn_is_no_finding() {
        let completed = [("assistant_message", json!({"text": "Seven."}))];
        let clean = played(&completed, one_turn("Name a prime.", &["Sev", "en."], v2::StopReason::EndTurn));
        assert_eq!(acp_findings(&clean), Vec::<String>::new());
    }

    /// `error` with its JSON-RPC error is the honest failure; without the data gauntlet asks
    /// of a failure's error it is ACP-ERROR-DATA's finding, as in v1.
    #[test]
    fn a_v2_turn_failed_as_error_is_the_honest_failure() {
        let data = json!({"terminalStatus": "failed", "errorKind": "provider_error", "nextActions": ["retry"]});
        let error = v2::Error::new(-32603, "the model failed").data(data);
        let turn_failed = [("turn_failed", json!({"terminal_status": "failed", "error_kind": "provider_error"}))];
        let honest = played(&turn_failed, one_turn("Name a prime.", &[], failed(Some(error))));
        assert_eq!(acp_findings(&honest), Vec::<String>::new());
        let bare = played(&turn_failed, one_turn("Name a prime.", &[], failed(None)));
        assert_eq!(
            acp_findings(&bare),
            [
                "ACP-ERROR-DATA: turn 1 (failed, as the Log shows) was answered with an error whose data lacks terminalStatus, errorKind, nextActions: {\"code\":-32603,\"message\":\"Internal error: the agent reported no details of the failure\"}"
            ]
        );
    }

    /// A turn the client cancelled ends idle `cancelled`: v1's `cancelled`.
    #[test]
    fn a_cancelled_v2_turn_is_no_finding() {
        let mut transcript = one_turn("Name a prime.", &["Sev"], v2::StopReason::Cancelled);
        let at = transcript.len() - 1;
        let cancel = json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}});
        transcript.insert(at, entry("client", cancel));
        let interrupted = [
            (
                "assistant_message",
                json!({"text": "Sev", "metadata": {"partial": true, "terminal_status": "interrupted"}}),
            ),
            ("turn_failed", json!({"terminal_status": "interrupted", "error_kind": "cancelled"})),
        ];
        assert_eq!(acp_findings(&played(&interrupted, transcript)), Vec::<String>::new());
    }

    /// A v2 load is a resume with `replayFrom`: its replayed messages are what the load rules
    /// read, as a v1 load's chunks.
    #[test]
    fn a_v2_resume_replay_is_judged_as_the_load() {
        use crate::judge::v1_reading::v2_fixture::{connected, idle, request, result, text, update};
        let replay = |answer: &str| {
            let mut load = connected();
            load.truncate(2);
            let from = v2::ReplayFrom::Start(v2::ReplayFromStart::new());
            load.extend([
                request(1, "session/resume", v2::ResumeSessionRequest::new("s", "/w").replay_from(from)),
                update(v2::SessionUpdate::UserMessage(v2::UserMessage::new("u2").content(vec![text("Name a prime.")]))),
                update(v2::SessionUpdate::AgentMessage(v2::AgentMessage::new("a2").content(vec![text(answer)]))),
                update(v2::SessionUpdate::ReplayComplete(v2::ReplayComplete::new())),
                idle(v2::StopReason::EndTurn),
                result(1, v2::ResumeSessionResponse::new()),
            ]);
            load
        };
        let completed = [("assistant_message", json!({"text": "Seven."}))];
        let mut loaded = played(&completed, one_turn("Name a prime.", &["Sev", "en."], v2::StopReason::EndTurn));
        loaded.acp_load = replay("Seven.");
        assert_eq!(acp_findings(&loaded), Vec::<String>::new());
        loaded.acp_load = replay("Eight.");
        assert_eq!(
            acp_findings(&loaded),
            [
                "ACP-LOAD-MATCHES-LIVE: turn 1 (completed): load replayed assistant text \"Eight.\", not what the client was shown live, \"Seven.\""
            ]
        );
    }
}
