//! One Provider call in the runtime's own terms, before any wire format: the model, the
//! instructions, the replayed conversation and the tools (pixir.md 3.1). Each dialect turns it
//! into its request ([`super::Dialect::request`]).

use serde_json::Value;

/// What the Turn asks of the Provider.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The model.
    pub model: String,
    /// The system instructions.
    pub instructions: String,
    /// The replayed conversation: the items of [`crate::replay::fold`] (user and assistant
    /// messages, `function_call` / `function_call_output` pairs, reasoning items).
    pub input: Vec<Value>,
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
