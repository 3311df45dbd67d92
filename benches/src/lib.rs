//! criterion benches for the workspace live in `benches/benches/`; run them with
//! `cargo bench -p benches`. Each bench checks what it computed, so a bench that silently
//! computes nothing fails instead of reporting a fast time.
