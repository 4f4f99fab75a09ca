//! One Provider call in the runtime's own terms, before any wire format: the model, the
//! instructions and the tools (pixir.md 3.1). The replayed conversation goes with it in a
//! [`super::Transcript`], which turns both into the dialect's request.

use serde_json::Value;

/// What the Turn asks of the Provider, besides the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The model.
    pub model: String,
    /// The system instructions.
    pub instructions: String,
    /// The tool definitions: `{"type": "function", "name", "description", "parameters"}`.
    pub tools: Value,
    /// A stable prompt cache key, recorded in `provider_usage` whatever the wire.
    pub cache_key: String,
}

impl Call {
    /// The tool definitions as a list.
    pub fn tool_list(&self) -> &[Value] {
        self.tools.as_array().map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
impl Call {
    /// A call to `model` with `instructions` and one tool, `read`, for tests.
    pub(crate) fn with_read_tool(model: &str, instructions: &str) -> Call {
        Call {
            model: model.into(),
            instructions: instructions.into(),
            tools: serde_json::json!([{"type": "function", "name": "read", "description": "Read", "parameters": {"type": "object"}}]),
            cache_key: "k".into(),
        }
    }
}
