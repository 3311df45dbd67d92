//! The [`Tool`] trait, its fail-closed defaults, and typed tools.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::ToolContext;
use crate::spec::ToolSpec;

/// One block of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The MIME type, such as `image/png`.
        media_type: String,
        /// The image bytes, base64-encoded (standard alphabet, padded).
        data: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// The number of characters this block counts for in the result budget (images count as 0:
    /// their size is the provider's concern, not the text budget's).
    pub fn char_len(&self) -> usize {
        match self {
            Self::Text { text } => text.chars().count(),
            Self::Image { .. } => 0,
        }
    }
}

/// What a tool returns when its call completes.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The blocks the model reads.
    pub content: Vec<Content>,
    /// Structured output, when the tool declares an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the tool reports a failure the model should see as an error (a command that ran
    /// but failed, an MCP tool that answered `isError`).
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured: None,
            is_error: false,
        }
    }

    /// A text output marked as an error.
    pub fn error_text(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// Adds structured output.
    #[must_use]
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }

    /// All text blocks joined with newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let Content::Text { text } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// A failure a tool reports. Every variant becomes an `is_error` tool result the model reads;
/// none aborts the turn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The input is well-formed JSON of the right shape but unusable; the message says how to fix it.
    #[error("{0}")]
    InvalidInput(String),
    /// The tool ran and failed; the message says what happened and what to try instead.
    #[error("{0}")]
    Failed(String),
    /// The call was cancelled before it finished.
    #[error("the call was cancelled")]
    Cancelled,
}

impl ToolError {
    /// An invalid-input error.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        Self::Failed(message.into())
    }
}

/// A tool's own verdict on a call, before the user's rules and the permission mode are applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "behavior", rename_all = "snake_case")]
pub enum PermissionCheck {
    /// The call is safe to run without asking (for example a read inside the working directory).
    Allow,
    /// The call needs approval unless a rule or the permission mode allows it.
    Ask {
        /// Why approval is needed, shown to the user and, on denial, to the model.
        reason: String,
    },
    /// The call must not run, whatever the rules say.
    Deny {
        /// Why, shown to the model with what to do instead.
        reason: String,
    },
}

impl PermissionCheck {
    /// The fail-closed default: ask.
    pub fn ask_default(tool: &str) -> Self {
        Self::Ask {
            reason: format!("{tool} needs the user's approval"),
        }
    }
}

/// A tool: a spec plus behaviour. Every behaviour takes the parsed input, because the same tool
/// can differ by input (`shell` with `ls` is read-only, with `rm` it is not).
///
/// The defaults are fail-closed: a tool is not read-only, is destructive unless read-only, is not
/// safe to run concurrently, and asks for permission. A wrong default costs a needless
/// confirmation, never an unchecked write.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tool's spec.
    fn spec(&self) -> &ToolSpec;

    /// Whether the tool is available at all (a disabled tool is not sent to the model).
    fn is_enabled(&self) -> bool {
        true
    }

    /// Whether this call only reads.
    fn is_read_only(&self, _input: &Value) -> bool {
        false
    }

    /// Whether this call may do something irreversible (deleting, overwriting, sending).
    fn is_destructive(&self, input: &Value) -> bool {
        !self.is_read_only(input)
    }

    /// Whether this call may run at the same time as other concurrency-safe calls.
    fn is_concurrency_safe(&self, _input: &Value) -> bool {
        false
    }

    /// Cheap in-memory checks after schema validation, before any permission prompt or disk I/O.
    async fn validate_input(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }

    /// The tool's own permission verdict for this call.
    async fn check_permissions(&self, _input: &Value, _ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::ask_default(&self.spec().name)
    }

    /// Guidance for the system prompt, if the tool has any.
    fn prompt(&self) -> Option<String> {
        None
    }

    /// A short line for progress display, such as "Reading src/main.rs".
    fn activity(&self, _input: &Value) -> Option<String> {
        None
    }

    /// The file this call touches, for permission rules such as `read_file(src/**)`.
    fn path(&self, _input: &Value) -> Option<PathBuf> {
        None
    }

    /// The text that permission rule contents match for this call: by default the path; a shell
    /// tool returns its command, so that `shell(git status:*)` can match it.
    fn permission_subject(&self, input: &Value) -> Option<String> {
        self.path(input).map(|p| p.to_string_lossy().into_owned())
    }

    /// Runs the call. Report progress with [`ToolContext::progress`]; observe
    /// [`ToolContext::cancellation`]. The executor also stops waiting when the call is cancelled
    /// and drops the future, so a tool must leave nothing behind when dropped.
    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// A tool written in Rust with a typed input. The schema and the parsing both come from
/// [`TypedTool::Input`], so they can never disagree. Register it wrapped in [`Typed`].
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input type; its JSON Schema is derived with schemars.
    type Input: DeserializeOwned + JsonSchema + Send + Sync;

    /// The spec, given the schema derived from [`TypedTool::Input`].
    fn spec(&self, input_schema: Value) -> ToolSpec;

    /// See [`Tool::is_enabled`].
    fn is_enabled(&self) -> bool {
        true
    }

    /// See [`Tool::is_read_only`].
    fn is_read_only(&self, _input: &Self::Input) -> bool {
        false
    }

    /// See [`Tool::is_destructive`].
    fn is_destructive(&self, input: &Self::Input) -> bool {
        !self.is_read_only(input)
    }

    /// See [`Tool::is_concurrency_safe`].
    fn is_concurrency_safe(&self, _input: &Self::Input) -> bool {
        false
    }

    /// See [`Tool::validate_input`].
    async fn validate_input(
        &self,
        _input: &Self::Input,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        Ok(())
    }

    /// See [`Tool::check_permissions`]; the default asks.
    async fn check_permissions(&self, _input: &Self::Input, ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::ask_default(ctx.tool_name())
    }

    /// See [`Tool::prompt`].
    fn prompt(&self) -> Option<String> {
        None
    }

    /// See [`Tool::activity`].
    fn activity(&self, _input: &Self::Input) -> Option<String> {
        None
    }

    /// See [`Tool::path`].
    fn path(&self, _input: &Self::Input) -> Option<PathBuf> {
        None
    }

    /// See [`Tool::permission_subject`].
    fn permission_subject(&self, input: &Self::Input) -> Option<String> {
        self.path(input).map(|p| p.to_string_lossy().into_owned())
    }

    /// See [`Tool::call`].
    async fn call(&self, input: Self::Input, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Adapts a [`TypedTool`] to [`Tool`]: derives the schema once and parses inputs.
pub struct Typed<T: TypedTool> {
    inner: Arc<T>,
    spec: ToolSpec,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps a typed tool, deriving its input schema.
    pub fn new(tool: T) -> Self {
        let schema = schema_for::<T::Input>();
        let spec = tool.spec(schema);
        Self {
            inner: Arc::new(tool),
            spec,
        }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn parse(&self, input: &Value) -> Result<T::Input, ToolError> {
        T::Input::deserialize(input).map_err(|err| {
            ToolError::InvalidInput(format!(
                "the input does not fit {}'s parameters: {err}; send an object that matches the tool's input schema",
                self.spec.name
            ))
        })
    }
}

/// The JSON Schema of `T` as sent to a model: inline (no `$ref`), without `$schema` and `title`.
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(object) = value.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        if !object.contains_key("properties") && object.get("type") == Some(&Value::from("object"))
        {
            object.insert(
                "properties".to_owned(),
                Value::Object(serde_json::Map::new()),
            );
        }
    }
    value
}

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }

    fn is_read_only(&self, input: &Value) -> bool {
        self.parse(input).is_ok_and(|i| self.inner.is_read_only(&i))
    }

    fn is_destructive(&self, input: &Value) -> bool {
        self.parse(input)
            .map_or(true, |i| self.inner.is_destructive(&i))
    }

    fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.parse(input)
            .is_ok_and(|i| self.inner.is_concurrency_safe(&i))
    }

    async fn validate_input(&self, input: &Value, ctx: &ToolContext) -> Result<(), ToolError> {
        let parsed = self.parse(input)?;
        self.inner.validate_input(&parsed, ctx).await
    }

    async fn check_permissions(&self, input: &Value, ctx: &ToolContext) -> PermissionCheck {
        match self.parse(input) {
            Ok(parsed) => self.inner.check_permissions(&parsed, ctx).await,
            Err(err) => PermissionCheck::Deny {
                reason: err.to_string(),
            },
        }
    }

    fn prompt(&self) -> Option<String> {
        self.inner.prompt()
    }

    fn activity(&self, input: &Value) -> Option<String> {
        self.parse(input).ok().and_then(|i| self.inner.activity(&i))
    }

    fn path(&self, input: &Value) -> Option<PathBuf> {
        self.parse(input).ok().and_then(|i| self.inner.path(&i))
    }

    fn permission_subject(&self, input: &Value) -> Option<String> {
        self.parse(input)
            .ok()
            .and_then(|i| self.inner.permission_subject(&i))
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let parsed = self.parse(&input)?;
        self.inner.call(parsed, ctx).await
    }
}
