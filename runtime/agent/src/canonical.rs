//! Canonical JSON: object keys sorted at every depth, compact (LOG-DETERMINISTIC).
//!
//! serde_json's map keeps insertion order when any crate in the build enables its
//! `preserve_order` feature (the ACP schema crate does), so sorted output is never left to the
//! map type: everything written for others to read goes through here.

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// The compact canonical text of any serializable value.
pub fn to_string(value: &impl Serialize) -> String {
    value_to_string(&serde_json::to_value(value).unwrap_or(Value::Null))
}

/// [`to_string`] of a JSON value, written as it stands (sorted on the way out, not copied):
/// request bodies carry whole conversations, and this is their path to the wire.
pub fn value_to_string(value: &Value) -> String {
    serde_json::to_string(&Sorted(value)).unwrap_or_default()
}

/// Appends the canonical text of `value` to `out`.
pub fn write(out: &mut Vec<u8>, value: &Value) {
    // Writing JSON to a Vec cannot fail: every key is a string.
    let _ = serde_json::to_writer(out, &Sorted(value));
}

/// Appends the canonical text of the object `fields` with one more key, `key`, whose value
/// `write_value` writes: a request body around a conversation already in canonical text.
pub fn write_object_with(
    out: &mut Vec<u8>,
    fields: &Map<String, Value>,
    key: &str,
    write_value: impl FnOnce(&mut Vec<u8>),
) {
    let mut keys: Vec<&str> = fields.keys().map(String::as_str).filter(|name| *name != key).collect();
    keys.push(key);
    keys.sort_unstable();
    out.push(b'{');
    let mut write_value = Some(write_value);
    for (index, name) in keys.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        // A string key always writes.
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        match fields.get(name) {
            Some(value) if name != key => write(out, value),
            _ => {
                if let Some(write_value) = write_value.take() {
                    write_value(out);
                }
            }
        }
    }
    out.push(b'}');
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
    use serde_json::json;

    fn map_of(value: &Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn keys_sort_at_every_depth() {
        let mut map = Map::new();
        map.insert("z".into(), json!([{"b": 1, "a": 2}]));
        map.insert("a".into(), json!(null));
        let value = Value::Object(map);
        assert_eq!(to_string(&value), r#"{"a":null,"z":[{"a":2,"b":1}]}"#);
        assert_eq!(value_to_string(&value), to_string(&value));
        let mut spliced = Vec::new();
        write_object_with(&mut spliced, &map_of(&value), "m", |out| out.extend_from_slice(b"[1,2]"));
        assert_eq!(String::from_utf8_lossy(&spliced), r#"{"a":null,"m":[1,2],"z":[{"a":2,"b":1}]}"#);
        assert_eq!(
            to_string_pretty(&value),
            "{\n  \"a\": null,\n  \"z\": [\n    {\n      \"a\": 2,\n      \"b\": 1\n    }\n  ]\n}"
        );
    }
}
