//! The one channel from the engine up to whoever drives it: print mode, the interactive
//! terminal, a sub-agent's parent call, a test.
//!
//! An [`Agent`](crate::agent::Agent) and its tools report everything through the
//! [`FrontEnd`] their [`ToolRuntime`](crate::runtime::ToolRuntime) was built with: streamed text
//! and thinking, each tool call's progress and result, each request's usage, retries and
//! compactions ([`AgentEvent`]), and the permission questions a call needs answered
//! ([`FrontEnd::ask`]). A closure `Fn(AgentEvent)` is a front end that shows events and cannot
//! ask; [`Headless`] shows nothing and cannot ask.

use std::sync::Arc;

use async_trait::async_trait;
use tool_core::{PermissionRequest, PromptAnswer, Prompter};

use crate::agent::AgentEvent;

/// What an agent reports to, and asks through.
#[async_trait]
pub trait FrontEnd: Send + Sync {
    /// Something happened. Called in order for one agent, from the turn's task and from the
    /// tasks of running tools; it should return quickly.
    fn event(&self, event: AgentEvent) {
        let _ = event;
    }

    /// Whether [`FrontEnd::ask`] can reach a person. When it cannot (print mode, a server), a
    /// call that needs approval is denied, saying that the run is non-interactive.
    fn can_ask(&self) -> bool {
        false
    }

    /// Asks whether to run a call; only called when [`FrontEnd::can_ask`] says so.
    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        let _ = request;
        PromptAnswer::Deny { feedback: None }
    }
}

/// Shows nothing and cannot ask: calls that need approval are denied.
#[derive(Debug, Clone, Copy, Default)]
pub struct Headless;

impl FrontEnd for Headless {}

impl<F> FrontEnd for F
where
    F: Fn(AgentEvent) + Send + Sync,
{
    fn event(&self, event: AgentEvent) {
        self(event);
    }
}

/// The permission stage's view of a front end that can ask.
pub(crate) struct Asking(pub(crate) Arc<dyn FrontEnd>);

#[async_trait]
impl Prompter for Asking {
    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        self.0.ask(request).await
    }
}

/// `front_end` as the permission stage's prompter, when it can ask.
pub(crate) fn prompter(front_end: &Arc<dyn FrontEnd>) -> Option<Arc<dyn Prompter>> {
    front_end
        .can_ask()
        .then(|| Arc::new(Asking(Arc::clone(front_end))) as Arc<dyn Prompter>)
}
