//! The errors of this crate.

/// A mistake in how the pool was configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// The deferral mode setting is not one of the accepted forms.
    #[error(
        "invalid deferral mode `{value}`: use true, false, auto or auto:N (N a percentage from 1 to 100)"
    )]
    InvalidDeferralMode {
        /// The setting as written.
        value: String,
    },
    /// The activation strategy is unknown.
    #[error("invalid activation strategy `{value}`: use native, proxy or inline")]
    InvalidActivation {
        /// The setting as written.
        value: String,
    },
    /// Registering a tool failed.
    #[error(transparent)]
    Core(#[from] tool_core::CoreError),
}
