//! The Tool contract.
