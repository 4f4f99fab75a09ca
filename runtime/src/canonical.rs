//! Canonical JSON: object keys sorted at every depth, compact (LOG-DETERMINISTIC).
//!
//! serde_json's map keeps insertion order when any crate in the build enables its
//! `preserve_order` feature (the ACP schema crate does), so sorted output is never left to the
//! map type: everything written for others to read goes through here.

use serde::Serialize;
use serde_json::{Map, Value};

/// Sorts the keys of every object in `value`, recursively.
pub fn sort_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.cmp(b));
            *map = entries
                .into_iter()
                .map(|(key, mut value)| {
                    sort_keys(&mut value);
                    (key, value)
                })
                .collect::<Map<String, Value>>();
        }
        Value::Array(items) => items.iter_mut().for_each(sort_keys),
        _ => {}
    }
}

/// The compact canonical text of any serializable value.
pub fn to_string(value: &impl Serialize) -> String {
    to_value(value).to_string()
}

/// The pretty-printed canonical text (two-space indent), for files people review.
pub fn to_string_pretty(value: &impl Serialize) -> String {
    serde_json::to_string_pretty(&to_value(value)).unwrap_or_default()
}

fn to_value(value: &impl Serialize) -> Value {
    let mut value = serde_json::to_value(value).unwrap_or(Value::Null);
    sort_keys(&mut value);
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sort_at_every_depth() {
        let mut map = Map::new();
        map.insert("z".into(), json!([{"b": 1, "a": 2}]));
        map.insert("a".into(), json!(null));
        assert_eq!(to_string(&Value::Object(map)), r#"{"a":null,"z":[{"a":2,"b":1}]}"#);
    }
}
