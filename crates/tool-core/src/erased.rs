//! [`AnyTool`]: any [`Tool`] behind one type, so that registries, pools and servers can hold
//! tools of different input types; and the prepared call the executor runs. The type erasure
//! itself is private.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::context::ToolContext;
use crate::output::{ToolError, ToolOutput};
use crate::spec::ToolSpec;
use crate::tool::{CallInfo, PermissionCheck, ProxyTarget, Tool};

/// A check of each call's [`CallInfo`] before the tool's own validation (see [`AnyTool::gated`]).
type Gate = dyn Fn(&CallInfo) -> Result<(), ToolError> + Send + Sync;

/// Any [`Tool`], its spec derived once. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct AnyTool(Arc<dyn Erased>);

impl fmt::Debug for AnyTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AnyTool").field(&self.spec().name).finish()
    }
}

impl<T: Tool> From<T> for AnyTool {
    fn from(tool: T) -> Self {
        Self::new(tool)
    }
}

impl<T: Tool> From<Arc<T>> for AnyTool {
    fn from(tool: Arc<T>) -> Self {
        Self::from_arc(tool)
    }
}

impl AnyTool {
    /// Wraps a tool, deriving its input schema and asking its spec once.
    pub fn new<T: Tool>(tool: T) -> Self {
        Self::from_arc(Arc::new(tool))
    }

    /// [`AnyTool::new`] for a tool the caller keeps a handle to.
    pub fn from_arc<T: Tool>(tool: Arc<T>) -> Self {
        let spec = tool.spec(schema_for::<T::Input>());
        Self(Arc::new(Holder { tool, spec }))
    }

    /// The tool's spec.
    pub fn spec(&self) -> &ToolSpec {
        self.0.spec()
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.spec().name
    }

    /// See [`Tool::is_enabled`].
    pub fn is_enabled(&self) -> bool {
        self.0.is_enabled()
    }

    /// See [`Tool::prompt`].
    pub fn prompt(&self) -> Option<String> {
        self.0.prompt()
    }

    /// What a call with `input` would be ([`Tool::info`]), or why the input does not fit.
    pub fn info(&self, input: &Value) -> Result<CallInfo, ToolError> {
        self.0.prepare(input.clone()).map(|call| call.info)
    }

    /// The tool itself, if it is a `T`.
    pub fn downcast_ref<T: Tool>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref::<T>()
    }

    /// The same tool with a gate: every call's [`CallInfo`] is checked first, and a call the
    /// gate refuses fails validation with its error (so it never reaches a permission prompt).
    /// A read-only sub-agent, for example, gates its tools on [`CallInfo::is_read_only`].
    #[must_use]
    pub fn gated(
        self,
        gate: impl Fn(&CallInfo) -> Result<(), ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(Gated {
            inner: self.0,
            gate: Box::new(gate),
        }))
    }

    /// Parses `input` once into a call whose questions are answered from the parsed value and
    /// which then runs (the executor's stages do this; a test or a wrapper may too).
    pub fn prepare(&self, input: Value) -> Result<PreparedCall, ToolError> {
        self.0.prepare(input)
    }

    /// Parses `input` and runs the call directly, without the executor's other stages (no
    /// validation, hooks or permission): for tests and for wrappers that have done those.
    pub async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.prepare(input)?.call(ctx).await
    }

    /// See [`Tool::proxy_target`].
    pub(crate) fn proxy_target(&self, input: &Value) -> Option<Result<ProxyTarget, ToolError>> {
        self.0.proxy_target(input)
    }
}

/// One call's input, parsed once, with its [`CallInfo`] and the tool that runs it.
pub struct PreparedCall {
    raw: Value,
    info: CallInfo,
    refusal: Option<ToolError>,
    call: Box<dyn ErasedCall>,
}

impl PreparedCall {
    /// The input as JSON, as hooks and permission prompts show it.
    pub fn input(&self) -> &Value {
        &self.raw
    }

    /// What this call is: read-only, concurrency-safe, its path, subject and progress line.
    pub fn info(&self) -> &CallInfo {
        &self.info
    }

    /// A gate's refusal, then [`Tool::validate_input`].
    pub async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        if let Some(refusal) = &self.refusal {
            return Err(refusal.clone());
        }
        self.call.validate(ctx).await
    }

    /// See [`Tool::check_permissions`].
    pub async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck {
        self.call.check_permissions(ctx).await
    }

    /// See [`Tool::call`].
    pub async fn call(self, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.call.call(ctx).await
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

/// A tool of any input type.
trait Erased: Send + Sync {
    fn spec(&self) -> &ToolSpec;
    fn is_enabled(&self) -> bool;
    fn prompt(&self) -> Option<String>;
    fn prepare(&self, input: Value) -> Result<PreparedCall, ToolError>;
    fn proxy_target(&self, input: &Value) -> Option<Result<ProxyTarget, ToolError>>;
    fn as_any(&self) -> &dyn Any;
}

/// A call of any input type.
#[async_trait]
trait ErasedCall: Send + Sync {
    async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError>;
    async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck;
    async fn call(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

struct Holder<T: Tool> {
    tool: Arc<T>,
    spec: ToolSpec,
}

impl<T: Tool> Holder<T> {
    fn parse(&self, input: &Value) -> Result<T::Input, ToolError> {
        T::Input::deserialize(input).map_err(|err| {
            ToolError::InvalidInput(format!(
                "the input does not fit {}'s parameters: {err}; send an object that matches the tool's input schema",
                self.spec.name
            ))
        })
    }
}

impl<T: Tool> Erased for Holder<T> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn is_enabled(&self) -> bool {
        self.tool.is_enabled()
    }

    fn prompt(&self) -> Option<String> {
        self.tool.prompt()
    }

    fn prepare(&self, raw: Value) -> Result<PreparedCall, ToolError> {
        let input = self.parse(&raw)?;
        Ok(PreparedCall {
            info: self.tool.info(&input),
            raw,
            refusal: None,
            call: Box::new(TypedCall {
                tool: Arc::clone(&self.tool),
                input,
            }),
        })
    }

    fn proxy_target(&self, input: &Value) -> Option<Result<ProxyTarget, ToolError>> {
        match self.parse(input) {
            Ok(parsed) => self.tool.proxy_target(&parsed),
            // An input that does not fit is reported when the call is prepared.
            Err(_) => None,
        }
    }

    fn as_any(&self) -> &dyn Any {
        self.tool.as_ref()
    }
}

/// A call of a `T`, its input parsed once.
struct TypedCall<T: Tool> {
    tool: Arc<T>,
    input: T::Input,
}

#[async_trait]
impl<T: Tool> ErasedCall for TypedCall<T> {
    async fn validate(&self, ctx: &ToolContext) -> Result<(), ToolError> {
        self.tool.validate_input(&self.input, ctx).await
    }

    async fn check_permissions(&self, ctx: &ToolContext) -> PermissionCheck {
        self.tool.check_permissions(&self.input, ctx).await
    }

    async fn call(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Self { tool, input } = *self;
        tool.call(input, ctx).await
    }
}

/// A tool behind a gate (see [`AnyTool::gated`]).
struct Gated {
    inner: Arc<dyn Erased>,
    gate: Box<Gate>,
}

impl Erased for Gated {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }

    fn is_enabled(&self) -> bool {
        self.inner.is_enabled()
    }

    fn prompt(&self) -> Option<String> {
        self.inner.prompt()
    }

    fn prepare(&self, input: Value) -> Result<PreparedCall, ToolError> {
        let mut prepared = self.inner.prepare(input)?;
        if prepared.refusal.is_none() {
            prepared.refusal = (self.gate)(&prepared.info).err();
        }
        Ok(prepared)
    }

    fn proxy_target(&self, input: &Value) -> Option<Result<ProxyTarget, ToolError>> {
        self.inner.proxy_target(input)
    }

    fn as_any(&self) -> &dyn Any {
        self.inner.as_any()
    }
}
