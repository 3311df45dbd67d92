//! The programs known to only read, and for each the options that would make it write, delete
//! or run another program.

use super::lex::Word;

/// What a known program may be given.
enum Args {
    /// Anything: no option of the program writes or runs another program, so even a glob that
    /// expands into an option is harmless.
    Any,
    /// Anything but these options (see [`is_denied`] for how they match), and no glob, which
    /// could expand into one of them.
    Deny(&'static [&'static str]),
    /// A check of its own, and no glob.
    Check(fn(&[Word]) -> bool),
}

/// Read-only programs, by name. `env` and `printenv` are left out: the environment holds
/// secrets (API keys) that should not reach a model without the user's say.
const PROGRAMS: &[(&str, Args)] = &[
    ("[", Args::Any),
    ("base64", Args::Any),
    ("basename", Args::Any),
    ("cat", Args::Any),
    // `cd` alone goes home and `cd -` back, both outside what the path check sees.
    (
        "cd",
        Args::Check(|args| matches!(args, [dir] if dir.text != "-")),
    ),
    ("cksum", Args::Any),
    ("cmp", Args::Any),
    ("column", Args::Any),
    ("comm", Args::Any),
    ("cut", Args::Any),
    ("date", Args::Check(date)),
    ("df", Args::Any),
    ("diff", Args::Any),
    ("dirname", Args::Any),
    ("du", Args::Any),
    ("echo", Args::Any),
    ("egrep", Args::Any),
    ("false", Args::Any),
    ("fd", Args::Deny(FD_DENY)),
    ("fdfind", Args::Deny(FD_DENY)),
    ("fgrep", Args::Any),
    ("file", Args::Deny(&["-C", "--compile"])),
    ("find", Args::Check(find)),
    ("fold", Args::Any),
    ("git", Args::Check(git)),
    ("grep", Args::Any),
    ("groups", Args::Any),
    ("head", Args::Any),
    ("hostname", Args::Check(hostname)),
    ("id", Args::Any),
    ("jq", Args::Check(jq)),
    ("ls", Args::Any),
    ("md5sum", Args::Any),
    ("nl", Args::Any),
    ("nproc", Args::Any),
    ("od", Args::Any),
    ("paste", Args::Any),
    // `printf -v NAME` assigns a shell variable (`PATH`, say) for the commands after it.
    ("printf", Args::Deny(&["-v"])),
    ("ps", Args::Check(ps)),
    ("pwd", Args::Any),
    ("readlink", Args::Any),
    ("realpath", Args::Any),
    ("rev", Args::Any),
    (
        "rg",
        Args::Deny(&["--pre", "--hostname-bin", "--search-zip", "-z"]),
    ),
    ("sed", Args::Check(sed)),
    ("seq", Args::Any),
    ("sha1sum", Args::Any),
    ("sha256sum", Args::Any),
    ("sha512sum", Args::Any),
    ("sleep", Args::Any),
    (
        "sort",
        Args::Deny(&["-o", "--output", "--compress-program"]),
    ),
    ("stat", Args::Any),
    ("strings", Args::Any),
    ("tac", Args::Any),
    ("tail", Args::Any),
    ("test", Args::Any),
    ("tr", Args::Any),
    // `tree -R` writes an `00Tree.html` into every directory.
    ("tree", Args::Deny(&["-o", "-R"])),
    ("true", Args::Any),
    ("type", Args::Any),
    ("uname", Args::Any),
    // The second operand of uniq is its output file.
    ("uniq", Args::Check(|args| operands(args) <= 1)),
    ("uptime", Args::Any),
    ("wc", Args::Any),
    ("which", Args::Any),
    ("whoami", Args::Any),
];

const FD_DENY: &[&str] = &["-x", "--exec", "-X", "--exec-batch"];

/// The names of the programs known to only read (each may still be refused some options).
pub(crate) fn known_programs() -> impl Iterator<Item = &'static str> {
    PROGRAMS.iter().map(|(name, _)| *name)
}

/// Whether `program` with `args` only reads.
pub(crate) fn program_is_safe(program: &str, args: &[Word]) -> bool {
    let Some((_, rule)) = PROGRAMS.iter().find(|(name, _)| *name == program) else {
        return false;
    };
    match rule {
        Args::Any => true,
        _ if args.iter().any(|arg| arg.expands) => false,
        Args::Deny(denied) => !options(args).any(|arg| is_denied(arg, denied)),
        Args::Check(check) => check(args),
    }
}

/// The arguments that may be options: those before a `--`.
fn options(args: &[Word]) -> impl Iterator<Item = &str> {
    args.iter()
        .map(|arg| arg.text.as_str())
        .take_while(|arg| *arg != "--")
}

/// The number of arguments that are not options.
fn operands(args: &[Word]) -> usize {
    let mut after_dashes = false;
    let mut count = 0;
    for arg in args.iter().map(|arg| arg.text.as_str()) {
        if !after_dashes && arg == "--" {
            after_dashes = true;
        } else if after_dashes || !arg.starts_with('-') || arg == "-" {
            count += 1;
        }
    }
    count
}

/// Whether `arg` is one of the `denied` options. A long option (`--output`) also matches its
/// abbreviations and an attached value (`--out=f`), as GNU getopt and git accept both; a short
/// option (`-o`) matches anywhere in a cluster (`-uo`); a single-dash word (`-exec`) matches
/// exactly.
fn is_denied(arg: &str, denied: &[&str]) -> bool {
    denied.iter().any(|denied| {
        if denied.starts_with("--") {
            let name = arg.split_once('=').map_or(arg, |(name, _)| name);
            name.len() > 2 && name.starts_with("--") && denied.starts_with(name)
        } else if denied.len() == 2 {
            let letter = &denied[1..];
            arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(letter)
        } else {
            arg == *denied
        }
    })
}

/// jq: no filter or option that reads the environment (`env`, `$ENV`), which holds secrets.
fn jq(args: &[Word]) -> bool {
    !args
        .iter()
        .any(|arg| arg.text.to_ascii_lowercase().contains("env"))
}

/// ps: no BSD-style `e`, which prints every process's environment.
fn ps(args: &[Word]) -> bool {
    !args.iter().any(|arg| {
        let text = arg.text.as_str();
        (!text.starts_with('-') && text.contains('e')) || text.contains("env")
    })
}

/// find: no action that runs a program, deletes, or writes a file. find has no `--` that ends
/// its expression, so every argument counts.
fn find(args: &[Word]) -> bool {
    const ACTIONS: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf",
    ];
    !args.iter().any(|arg| ACTIONS.contains(&arg.text.as_str()))
}

/// sed: only printing a line range (`sed -n '5,10p' file`); its scripts can otherwise write
/// files (`w`), run commands (`e`) and edit in place (`-i`).
fn sed(args: &[Word]) -> bool {
    let mut script = None;
    for arg in args.iter().map(|arg| arg.text.as_str()) {
        match arg {
            "-n" | "--quiet" | "--silent" | "-E" | "-r" | "--regexp-extended" => {}
            _ if arg.starts_with('-') && arg != "-" => return false,
            _ if script.is_none() => script = Some(arg),
            _ => {}
        }
    }
    script.is_some_and(is_print_range)
}

/// `5p`, `5,10p`, `10,$p` or `$p`.
fn is_print_range(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let address =
        |part: &str| part == "$" || (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    match range.split_once(',') {
        Some((from, to)) => address(from) && address(to),
        None => address(range),
    }
}

/// date: printing only; `-s` and a bare operand set the clock.
fn date(args: &[Word]) -> bool {
    let mut takes_value = false;
    for arg in args.iter().map(|arg| arg.text.as_str()) {
        if std::mem::take(&mut takes_value) {
            continue;
        }
        if is_denied(arg, &["-s", "--set"]) {
            return false;
        }
        takes_value = matches!(
            arg,
            "-d" | "--date" | "-f" | "--file" | "-r" | "--reference"
        );
        if !takes_value && !arg.starts_with('-') && !arg.starts_with('+') {
            return false;
        }
    }
    true
}

/// hostname: printing options only; an operand or `-F` sets the name.
fn hostname(args: &[Word]) -> bool {
    const PRINTING: &[&str] = &[
        "-f",
        "--fqdn",
        "--long",
        "-s",
        "--short",
        "-i",
        "--ip-address",
        "-I",
        "--all-ip-addresses",
        "-d",
        "--domain",
        "-a",
        "--alias",
        "-A",
        "--all-fqdns",
    ];
    args.iter().all(|arg| PRINTING.contains(&arg.text.as_str()))
}

/// Options no reading git subcommand may have: they write a file (`--output`), run a program
/// (`--ext-diff`, `--textconv`, `--filters`, `git grep -O`).
const GIT_DENY: &[&str] = &[
    "--output",
    "--ext-diff",
    "--textconv",
    "--filters",
    "--open-files-in-pager",
    "-O",
];

/// git subcommands that only read, whatever their options (but [`GIT_DENY`]).
const GIT_READING: &[&str] = &[
    "blame",
    "cat-file",
    "describe",
    "diff",
    "grep",
    "log",
    "ls-files",
    "ls-tree",
    "merge-base",
    "rev-list",
    "rev-parse",
    "shortlog",
    "show",
    "show-ref",
    "status",
    "version",
];

/// git: global options that change nothing, then a reading subcommand.
fn git(args: &[Word]) -> bool {
    let args: Vec<&str> = args.iter().map(|arg| arg.text.as_str()).collect();
    let mut i = 0;
    // `-c`, `--config-env`, `--exec-path`, `-p` (a pager from the repository's config) and the
    // rest are refused by not being listed.
    while let Some(arg) = args.get(i).filter(|arg| arg.starts_with('-')) {
        i += match *arg {
            "-C" => 2,
            "--no-pager" | "-P" | "--no-optional-locks" | "--literal-pathspecs" => 1,
            _ => return false,
        };
    }
    let Some((sub, rest)) = args.get(i..).and_then(<[&str]>::split_first) else {
        return false;
    };
    if rest
        .iter()
        .take_while(|a| **a != "--")
        .any(|a| is_denied(a, GIT_DENY))
    {
        return false;
    }
    let only = |allowed: &[&str]| rest.iter().all(|a| allowed.contains(a));
    match *sub {
        sub if GIT_READING.contains(&sub) => true,
        // branch, tag and remote read only when they list.
        "branch" => only(&[
            "-a",
            "-r",
            "-v",
            "-vv",
            "-l",
            "--list",
            "--all",
            "--remotes",
            "--verbose",
            "--show-current",
            "--no-color",
        ]),
        "tag" => only(&["-l", "--list"]),
        "remote" => only(&["-v", "--verbose"]),
        // `git stash` alone stashes, `git reflog expire` rewrites.
        "reflog" => matches!(rest.first(), None | Some(&"show")),
        "stash" => matches!(rest.first(), Some(&"list" | &"show")),
        "worktree" => rest.first() == Some(&"list"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denied_options_match_abbreviations_and_clusters() {
        assert!(is_denied("--out=x", &["--output"]));
        assert!(is_denied("--output", &["--output"]));
        assert!(!is_denied("--oneline", &["--output"]));
        assert!(!is_denied("--", &["--output"]));
        assert!(is_denied("-uo", &["-o"]));
        assert!(!is_denied("--follow", &["-o"]));
        assert!(is_denied("-exec", &["-exec"]));
        assert!(!is_denied("-executable", &["-exec"]));
    }

    #[test]
    fn print_ranges() {
        for script in ["5p", "5,10p", "10,$p", "$p"] {
            assert!(is_print_range(script), "{script}");
        }
        for script in ["p", "5", "1,2w x", "s/a/b/e", ",5p"] {
            assert!(!is_print_range(script), "{script}");
        }
    }
}
