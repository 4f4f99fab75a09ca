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

/// One entry of a list: its `content` and `status`.
pub(crate) type Entry = (String, String);

/// The entries of each live `plan` update, in order.
pub(crate) fn plan_updates(evidence: &Evidence) -> Vec<Vec<Entry>> {
    evidence
        .capture
        .acp
        .iter()
        .filter_map(|entry| entry.pointer("/message/params/update"))
        .filter(|update| update.get("sessionUpdate").and_then(Value::as_str) == Some("plan"))
        .map(|update| entries(update.get("entries")))
        .collect()
}

/// The `content` and `status` of each entry of a list.
pub(crate) fn entries(list: Option<&Value>) -> Vec<Entry> {
    let text = |entry: &Value, key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let list = list.and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    list.iter().map(|entry| (text(entry, "content"), text(entry, "status"))).collect()
}
