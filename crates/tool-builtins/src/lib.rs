//! The everyday coding tools as [`tool_core`] tools.
//!
//! This crate is filled by the tool-builtins work: read_file, write_file, edit_file, glob, grep,
//! shell, web_fetch, plan mode and todo_write.
