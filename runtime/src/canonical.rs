//! Canonical JSON: object keys sorted at every depth, compact (LOG-DETERMINISTIC).
//!
//! serde_json's map keeps insertion order when any crate in the build enables its
//! `preserve_order` feature (the ACP schema crate does), so sorted output is never left to the
//! map type: everything written for others to read goes through here.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// The compact canonical text of any serializable value.
pub fn to_string(value: &impl Serialize) -> String {
    value_to_string(&serde_json::to_value(value).unwrap_or(Value::Null))
}

/// [`to_string`] of a JSON value, written as it stands (sorted on the way out, not copied):
/// request bodies carry whole conversations, and this is their path to the wire.
pub fn value_to_string(value: &Value) -> String {
    serde_json::to_string(&Sorted(value)).unwrap_or_default()
}

/// The pretty-printed canonical text (two-space indent), for files people review.
pub fn to_string_pretty(value: &impl Serialize) -> String {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    serde_json::to_string_pretty(&Sorted(&value)).unwrap_or_default()
}

/// A JSON value that serializes with the keys of every object in sorted order.
struct Sorted<'a>(&'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by_key(|(key, _)| *key);
                let mut out = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    out.serialize_entry(key, &Sorted(value))?;
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Sorted(item))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    #[test]
    fn keys_sort_at_every_depth() {
        let mut map = Map::new();
        map.insert("z".into(), json!([{"b": 1, "a": 2}]));
        map.insert("a".into(), json!(null));
        let value = Value::Object(map);
        assert_eq!(to_string(&value), r#"{"a":null,"z":[{"a":2,"b":1}]}"#);
        assert_eq!(value_to_string(&value), to_string(&value));
        assert_eq!(
            to_string_pretty(&value),
            "{\n  \"a\": null,\n  \"z\": [\n    {\n      \"a\": 2,\n      \"b\": 1\n    }\n  ]\n}"
        );
    }
}
