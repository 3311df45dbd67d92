//! Structured output for scripts (`-p --output-schema FILE`): the final answer is a JSON value
//! that validates against the user's schema.
//!
//! The schema becomes the input schema of one tool, `structured_output`, so the registry
//! compiles its validator once when the tool is registered and the lifecycle's validation stage
//! tells the model exactly what does not match. A call that passes records the value, and the
//! agent ends the turn with it (see [`crate::agent::Agent::expect_structured_output`]).

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    CallInfo, Loading, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

/// The tool's name.
pub const NAME: &str = "structured_output";

/// Where the accepted answer waits for the agent.
#[derive(Debug, Clone, Default)]
pub struct Slot(Arc<Mutex<Option<Value>>>);

impl Slot {
    /// Takes the accepted answer, if one came.
    pub fn take(&self) -> Option<Value> {
        self.0.lock().ok().and_then(|mut v| v.take())
    }

    fn put(&self, value: Value) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(value);
        }
    }
}

/// A schema that does not describe an object, as the `value` field of one. Its `$schema`
/// (the draft) and its definitions move up to the wrapper's root, so that references such as
/// `#/$defs/Item` resolve as they did.
fn wrap(mut schema: Value) -> Value {
    let mut wrapper = json!({
        "type": "object",
        "required": ["value"],
        "additionalProperties": false,
    });
    if let (Some(inner), Some(outer)) = (schema.as_object_mut(), wrapper.as_object_mut()) {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(moved) = inner.remove(key) {
                outer.insert(key.to_owned(), moved);
            }
        }
    }
    wrapper["properties"] = json!({ "value": schema });
    wrapper
}

/// The `structured_output` tool for one schema.
pub struct StructuredOutput {
    spec: ToolSpec,
    /// Whether the schema is not an object's and so was wrapped as `{"value": ...}`.
    wrapped: bool,
    slot: Slot,
}

impl StructuredOutput {
    /// The tool for `schema` (any JSON Schema; one that does not describe an object is asked
    /// for as the `value` field of one, since tool inputs are objects).
    pub fn new(schema: Value) -> Self {
        let wrapped = schema.get("type").and_then(Value::as_str) != Some("object");
        let input_schema = if wrapped { wrap(schema) } else { schema };
        let spec = ToolSpec::new(
            NAME,
            "Return your final answer as structured data. Call this exactly once, when the task \
             is done, with an input that matches the schema; if the input does not match, you are \
             told what is wrong, so fix it and call again. Your answer is this call's input, not \
             your text.",
            input_schema,
        )
        .with_loading(Loading::AlwaysLoad);
        Self {
            spec,
            wrapped,
            slot: Slot::default(),
        }
    }

    /// Where the accepted answer goes.
    pub fn slot(&self) -> Slot {
        self.slot.clone()
    }
}

/// The reminder sent when the model ends its turn without calling the tool.
pub(crate) fn reminder() -> String {
    format!(
        "You ended your turn without giving the final answer. Call the `{NAME}` tool now with \
         your answer as its input, matching its schema."
    )
}

#[async_trait]
impl Tool for StructuredOutput {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    fn info(&self, _input: &Value) -> CallInfo {
        CallInfo::reads().with_concurrency_safe(true)
    }

    async fn check_permissions(&self, _input: &Value, _ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let value = if self.wrapped {
            input.get("value").cloned().unwrap_or(Value::Null)
        } else {
            input
        };
        self.slot.put(value);
        Ok(ToolOutput::text(
            "Your answer was recorded and matches the schema. End your turn now.",
        ))
    }
}

/// Reads a schema file for `--output-schema`, with errors that say what to fix.
pub fn load_schema(path: &std::path::Path) -> anyhow::Result<Value> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the output schema {}", path.display()))?;
    let schema: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not JSON; --output-schema takes a JSON Schema file",
            path.display()
        )
    })?;
    jsonschema::meta::validate(&schema)
        .map_err(|err| anyhow::anyhow!("{} is not a valid JSON Schema: {err}", path.display()))?;
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_core::AnyTool;

    #[test]
    fn a_wrapped_schema_keeps_its_definitions_and_references() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "items": {"$ref": "#/definitions/Item"},
            "definitions": {"Item": {"type": "integer"}},
        });
        let tool = AnyTool::new(StructuredOutput::new(schema));
        let input_schema = &tool.spec().input_schema;
        assert_eq!(
            input_schema["$schema"],
            "http://json-schema.org/draft-07/schema#"
        );
        let validator = jsonschema::validator_for(input_schema).unwrap();
        assert!(validator.is_valid(&json!({"value": [1, 2]})));
        assert!(!validator.is_valid(&json!({"value": ["one"]})));
        assert!(!validator.is_valid(&json!({"value": 1})));
    }
}
