//! One JSON-RPC 2.0 message decoded from one input line (ACP-JSONRPC-ERRORS, ACP-REQUEST-ID):
//! a request or notification to handle, a client response to ignore, or the error to answer
//! with the id it must carry.

use agent_client_protocol_schema::v1::{Error, RequestId};
use serde_json::{Value, json};

/// One decoded incoming message.
#[derive(Debug)]
pub struct Incoming {
    /// The request id; `None` for a notification.
    pub id: Option<RequestId>,
    /// The method.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Value,
}

/// Decodes one line: `Ok(None)` for a client response, `Err` with the id to answer otherwise.
pub fn decode(line: &[u8]) -> Result<Option<Incoming>, (RequestId, Error)> {
    let value: Value = serde_json::from_slice(line).map_err(|error| {
        let excerpt: String = String::from_utf8_lossy(line).trim_end().chars().take(200).collect();
        (RequestId::Null, Error::parse_error().data(json!({"reason": error.to_string(), "line": excerpt})))
    })?;
    // An id that is not a string, an integer or null cannot be echoed: the request is refused
    // with `id: null` and never executed (JSON-RPC 2.0 §4).
    let id = match value.get("id") {
        None => None,
        Some(id) => Some(serde_json::from_value::<RequestId>(id.clone()).map_err(|_| {
            let reason = "`id` must be a string, an integer or null";
            (RequestId::Null, Error::invalid_request().data(json!({"reason": reason, "id": id})))
        })?),
    };
    let invalid = |reason: &str| {
        (id.clone().unwrap_or(RequestId::Null), Error::invalid_request().data(json!({"reason": reason})))
    };
    if value.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("`jsonrpc` must be \"2.0\""));
    }
    match value.get("method") {
        Some(Value::String(method)) => {
            let params = value.get("params").cloned().unwrap_or(Value::Null);
            Ok(Some(Incoming { id, method: method.clone(), params }))
        }
        Some(_) => Err(invalid("`method` must be a string")),
        None if value.get("result").is_some() || value.get("error").is_some() => Ok(None),
        None => Err(invalid("a message needs a `method`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_line_is_a_parse_error_with_null_id() {
        let (id, error) = decode(b"{not json").err().unwrap();
        assert_eq!(id, RequestId::Null);
        assert_eq!(i32::from(error.code), -32700);
    }

    #[test]
    fn a_message_without_jsonrpc_is_an_invalid_request() {
        let (id, error) = decode(br#"{"id":3,"method":"initialize"}"#).err().unwrap();
        assert_eq!(id, RequestId::Number(3));
        assert_eq!(i32::from(error.code), -32600);
    }

    #[test]
    fn client_responses_are_not_requests() {
        assert!(decode(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap().is_none());
    }
}
