//! Typed tools: a Rust input type gives both the schema and the parsing, and each call's input
//! is parsed once.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolContext;
use crate::output::{ToolError, ToolOutput};
use crate::spec::ToolSpec;
use crate::tool::{PermissionCheck, PreparedCall, Tool};

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
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
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

    fn prepare(&self, input: &Value) -> Option<Result<Box<dyn PreparedCall>, ToolError>> {
        Some(self.parse(input).map(|parsed| {
            Box::new(TypedCall {
                tool: Arc::clone(&self.inner),
                raw: input.clone(),
                input: parsed,
            }) as Box<dyn PreparedCall>
        }))
    }
}

/// A call of a typed tool, its input parsed once.
struct TypedCall<T: TypedTool> {
    tool: Arc<T>,
    raw: Value,
    input: T::Input,
}

#[async_trait]
impl<T: TypedTool> PreparedCall for TypedCall<T> {
    fn input(&self) -> &Value {
        &self.raw
    }

    fn is_read_only(&self) -> bool {
        self.tool.is_read_only(&self.input)
    }

    fn is_destructive(&self) -> bool {
        self.tool.is_destructive(&self.input)
    }

    fn is_concurrency_safe(&self) -> bool {
        self.tool.is_concurrency_safe(&self.input)
    }

    async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        self.tool.validate_input(&self.input, ctx).await
    }

    async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck {
        self.tool.check_permissions(&self.input, ctx).await
    }

    fn activity(&self) -> Option<String> {
        self.tool.activity(&self.input)
    }

    fn path(&self) -> Option<PathBuf> {
        self.tool.path(&self.input)
    }

    fn permission_subject(&self) -> Option<String> {
        self.tool.permission_subject(&self.input)
    }

    async fn call(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Self { tool, input, .. } = *self;
        tool.call(input, ctx).await
    }
}
