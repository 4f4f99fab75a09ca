//! The capture's ACP transcripts as the rules read them through the Evidence: a rule over one
//! transcript run on the live one and on the `session/load` one, in their v1 reading or as sent.

use serde_json::Value;

use crate::judge::evidence::Evidence;

/// A rule over one ACP transcript, judged on the live transcript and on the `session/load` one,
/// each named in what it finds.
pub(crate) fn on_each_transcript(evidence: &Evidence, judge: fn(&[Value], &str) -> Vec<String>) -> Vec<String> {
    [(&evidence.capture.acp, "the live transcript"), (&evidence.capture.acp_load, "the load transcript")]
        .into_iter()
        .flat_map(|(entries, which)| judge(entries, which))
        .collect()
}

/// [`on_each_transcript`] over the transcripts as the agent sent them, not their v1 reading:
/// for a rule that judges the messages themselves (ACP-SCHEMA).
pub(crate) fn on_each_raw_transcript(evidence: &Evidence, judge: fn(&[Value], &str) -> Vec<String>) -> Vec<String> {
    [(evidence.raw_acp, "the live transcript"), (evidence.raw_acp_load, "the load transcript")]
        .into_iter()
        .flat_map(|(entries, which)| judge(entries, which))
        .collect()
}
