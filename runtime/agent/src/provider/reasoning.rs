//! Reasoning items in the one form the Log records and replay reads, whatever dialect
//! produced them: a Responses-shaped `reasoning` item whose summary is the reasoning text and
//! whose `encrypted_content` is the dialect's opaque signature (an Anthropic thinking block's
//! `signature`, a Gemini part's `thoughtSignature`), kept verbatim so it can be sent back.

use serde_json::{Value, json};

/// The recorded item for reasoning `text` with its opaque `signature`, if any.
pub fn item(text: &str, signature: Option<&str>) -> Value {
    let mut item = json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": text}]});
    if let Some(signature) = signature.filter(|signature| !signature.is_empty()) {
        item["encrypted_content"] = json!(signature);
    }
    item
}

/// The reasoning text of a recorded item: its summary parts joined.
pub fn text(item: &Value) -> String {
    let parts = item.get("summary").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts.iter().filter_map(|part| part.get("text").and_then(Value::as_str)).collect()
}

/// The opaque signature of a recorded item.
pub fn signature(item: &Value) -> Option<&str> {
    item.get("encrypted_content").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_round_trips_text_and_signature() {
        let recorded = item("think", Some("sig"));
        assert_eq!((text(&recorded), signature(&recorded)), ("think".to_owned(), Some("sig")));
        assert_eq!(signature(&item("x", Some(""))), None);
        let responses = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}]});
        assert_eq!(text(&responses), "ab");
    }
}
