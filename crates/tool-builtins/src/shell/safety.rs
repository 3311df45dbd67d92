//! Whether a command line only reads: the rule that lets `ls` and `git status` run without a
//! prompt. See the module doc of `shell` for the rule in words.

use super::lex::{Control, Redirect, Token, Word, tokenize};
use super::programs::program_is_safe;
use crate::denies::ReadDenies;
use crate::roots::AllowedRoots;

/// Whether any word of a read-only command names a path outside the allowed roots (absolute,
/// `~`, `..`, or a symlink that leads out), so that reading it still asks as read_file would
/// refuse it. Words that are not paths resolve inside the working directory and pass. A command
/// that does not tokenize counts as reaching outside.
pub(crate) fn reaches_outside(command: &str, roots: &AllowedRoots) -> bool {
    let Ok(tokens) = tokenize(command) else {
        return true;
    };
    tokens.iter().any(|token| match token {
        Token::Word(word) => path_candidates(&word.text).any(|path| {
            path.starts_with('~') || (path != "/dev/null" && roots.resolve(path).is_err())
        }),
        Token::Control(_) | Token::Redirect(_) => false,
    })
}

/// Whether a command may read a path a read deny rule names: a word that resolves to a denied
/// path or to a folder holding one, or a word the shell expands (a glob could reach one). A
/// command that does not tokenize counts as naming one.
pub(crate) fn names_denied(
    command: &str,
    roots: &AllowedRoots,
    denies: &ReadDenies,
    existing: &[std::path::PathBuf],
) -> bool {
    let Ok(tokens) = tokenize(command) else {
        return true;
    };
    tokens.iter().any(|token| match token {
        Token::Word(word) if word.expands => true,
        Token::Word(word) => path_candidates(&word.text).any(|path| {
            let Ok(resolved) = roots.resolve(path) else {
                return false;
            };
            denies.denies(&resolved, roots.cwd())
                || existing.iter().any(|denied| denied.starts_with(&resolved))
        }),
        Token::Redirect(_) | Token::Control(_) => false,
    })
}

/// The parts of a word that may be a path: the word, and the value of a `NAME=value` or
/// `--option=value`. An option with a path glued on (`-f/etc/x`) is kept whole and starts with
/// `-`, so it is named as an outside path by its `/` below.
fn path_candidates(word: &str) -> impl Iterator<Item = &str> {
    let value = word.split_once('=').map(|(_, value)| value);
    let glued = (word.starts_with('-') && word.contains('/') && value.is_none()).then_some("/");
    std::iter::once(word)
        .filter(|word| !word.starts_with('-'))
        .chain(value)
        .chain(glued)
        .filter(|path| !path.is_empty())
}

/// One simple command: its variable assignments, its words and its redirections.
#[derive(Debug, Default)]
struct SimpleCommand {
    assignments: Vec<Word>,
    words: Vec<Word>,
    redirects: Vec<(Redirect, Word)>,
}

impl SimpleCommand {
    fn is_empty(&self) -> bool {
        self.assignments.is_empty() && self.words.is_empty() && self.redirects.is_empty()
    }
}

/// Variables a command may be given in front of it: they change formatting, never which
/// program runs or what it loads.
const SAFE_ASSIGNMENTS: &[&str] = &[
    "LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "COLUMNS", "LINES",
];

/// Whether a command line only reads: every command in it (joined by `;`, `&&`, `||`, `|` or
/// newlines) is a known read-only program with only safe options, it expands nothing, and it
/// redirects nothing but into `/dev/null`, between descriptors, or from a file. Anything unsure
/// is not read-only: a wrong "no" costs a confirmation, a wrong "yes" an unchecked write.
pub(crate) fn is_read_only_command(command: &str) -> bool {
    let Ok(tokens) = tokenize(command) else {
        return false;
    };
    match split_commands(tokens) {
        Some(commands) => !commands.is_empty() && commands.iter().all(command_is_safe),
        None => false,
    }
}

/// Splits tokens into simple commands; `None` for shapes that are not a plain list of simple
/// commands (an operator with nothing before it, a redirection without a target).
fn split_commands(tokens: Vec<Token>) -> Option<Vec<SimpleCommand>> {
    let mut commands = Vec::new();
    let mut current = SimpleCommand::default();
    // Whether the last control operator needs a command after it (`&&`, `||`, `|` do).
    let mut needs_more = false;
    let mut tokens = tokens.into_iter();
    while let Some(token) = tokens.next() {
        match token {
            Token::Word(word) if current.words.is_empty() && is_assignment(&word) => {
                current.assignments.push(word);
            }
            Token::Word(word) => current.words.push(word),
            Token::Redirect(redirect) => match tokens.next() {
                Some(Token::Word(target)) => current.redirects.push((redirect, target)),
                _ => return None,
            },
            Token::Control(control) => {
                if current.is_empty() {
                    // Blank lines and a trailing `;` are fine; `&& ls` is not.
                    if control != Control::Sequence || needs_more {
                        return None;
                    }
                    continue;
                }
                commands.push(std::mem::take(&mut current));
                needs_more = control != Control::Sequence;
            }
        }
    }
    if current.is_empty() {
        return (!needs_more).then_some(commands);
    }
    commands.push(current);
    Some(commands)
}

/// `NAME=value` with an unquoted name is an assignment, not a program.
fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.raw.split_once('=') else {
        return false;
    };
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn command_is_safe(command: &SimpleCommand) -> bool {
    let Some((program, args)) = command.words.split_first() else {
        // Only assignments or redirections: `PATH=/x` changes later commands, `> f` truncates.
        return false;
    };
    command.assignments.iter().all(assignment_is_safe)
        && command.redirects.iter().all(redirect_is_safe)
        && !program.expands
        && !program.text.contains('/')
        && program_is_safe(&program.text, args)
}

fn assignment_is_safe(word: &Word) -> bool {
    let name = word.raw.split_once('=').map_or("", |(name, _)| name);
    !word.expands && (SAFE_ASSIGNMENTS.contains(&name) || name.starts_with("LC_"))
}

fn redirect_is_safe((redirect, target): &(Redirect, Word)) -> bool {
    if target.expands {
        return false;
    }
    match redirect {
        Redirect::Input => true,
        Redirect::Output => target.text == "/dev/null",
        // `2>&1` and `>&-` only; `>&file` writes the file.
        Redirect::Duplicate => {
            target.text == "-"
                || (!target.text.is_empty() && target.text.chars().all(|c| c.is_ascii_digit()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_commands() {
        for cmd in [
            "ls -la",
            "git status",
            "git log --oneline -5",
            "cat a.txt | grep x | wc -l",
            "git branch",
            "pwd && ls",
            "ls;",
            "ls\n\nls",
        ] {
            assert!(is_read_only_command(cmd), "{cmd}");
        }
        for cmd in [
            "rm -rf x",
            "ls > out.txt",
            "git commit -m x",
            "git branch -D main",
            "find . -delete",
            "echo $(rm x)",
            "FOO=1 ls",
            "cat x; rm y",
            "git diff --output=x",
            "",
            "&& ls",
            "ls &&",
            "ls |",
            "PATH=/tmp",
            "> f",
            "ls >",
        ] {
            assert!(!is_read_only_command(cmd), "{cmd}");
        }
    }
}
