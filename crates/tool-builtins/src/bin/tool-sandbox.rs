//! The shell sandbox's launcher as a program of its own, for programs that cannot call
//! [`tool_builtins::run_if_launcher`] from their own `main`: point
//! `ShellConfig::launcher` at this executable.

fn main() {
    tool_builtins::run_if_launcher();
    eprintln!(
        "tool-sandbox starts sandboxed commands for the shell tool; it is not meant to be run by hand (the first argument must be {})",
        tool_builtins::LAUNCH_FLAG
    );
    std::process::exit(2);
}
