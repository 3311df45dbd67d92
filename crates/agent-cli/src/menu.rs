//! A small menu on the terminal: a few choices, picked with the arrow keys and Enter or with
//! each choice's letter; Esc declines. The terminal is in raw mode only while the menu is shown.

use std::io::Write as _;
use std::os::fd::AsFd as _;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::termios::{self, LocalFlags, SetArg, Termios};

/// One choice of a menu.
#[derive(Debug, Clone)]
pub(crate) struct Choice {
    /// The letter that picks it.
    pub(crate) key: char,
    /// What it says.
    pub(crate) label: String,
}

/// A key read in raw mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Up,
    Down,
    Enter,
    Escape,
    Interrupt,
    Char(char),
    Other,
}

/// Restores the terminal's settings when dropped.
struct RawMode(Termios);

impl RawMode {
    fn enter() -> nix::Result<Self> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(stdin.as_fd())?;
        let mut raw = saved.clone();
        // Keys one at a time, not echoed, and Ctrl-C as a key: the menu hands it on as SIGINT
        // after the terminal is restored.
        raw.local_flags
            .remove(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG);
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &raw)?;
        Ok(Self(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.0);
    }
}

/// Shows `header` (lines, printed once) and the choices below it; returns the index picked, or
/// `None` when the user declined (Esc, Ctrl-C, end of input). Ctrl-C is passed on as an
/// interrupt once the terminal is restored, so it cancels the turn as it does elsewhere.
pub(crate) fn choose(
    header: &[String],
    choices: &[Choice],
    colour: bool,
) -> std::io::Result<Option<usize>> {
    let mut err = std::io::stderr().lock();
    for line in header {
        writeln!(err, "{line}")?;
    }
    let raw = RawMode::enter().map_err(std::io::Error::from)?;
    let mut selected = 0usize;
    let mut drawn = false;
    let picked = loop {
        if drawn {
            write!(err, "\x1b[{}A\r\x1b[J", choices.len() + 1)?;
        }
        draw(&mut err, choices, selected, colour)?;
        drawn = true;
        match read_key()? {
            Key::Up => selected = selected.checked_sub(1).unwrap_or(choices.len() - 1),
            Key::Down => selected = (selected + 1) % choices.len(),
            Key::Enter => break Some(selected),
            Key::Escape => break None,
            Key::Interrupt => {
                drop(raw);
                writeln!(err)?;
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGINT);
                return Ok(None);
            }
            Key::Char(c) => {
                let c = c.to_ascii_lowercase();
                if let Some(i) = choices.iter().position(|choice| choice.key == c) {
                    break Some(i);
                }
                if let Some(i) = c.to_digit(10).and_then(|d| (d as usize).checked_sub(1))
                    && i < choices.len()
                {
                    break Some(i);
                }
            }
            Key::Other => {}
        }
    };
    drop(raw);
    // Leave the menu with the choice made, for the record.
    write!(err, "\x1b[{}A\r\x1b[J", choices.len() + 1)?;
    match picked {
        Some(i) => writeln!(err, "╰─ {}", choices[i].label)?,
        None => writeln!(err, "╰─ (declined)")?,
    }
    err.flush()?;
    Ok(picked)
}

fn draw(
    err: &mut impl std::io::Write,
    choices: &[Choice],
    selected: usize,
    colour: bool,
) -> std::io::Result<()> {
    for (i, choice) in choices.iter().enumerate() {
        let line = format!("{}. {}  ({})", i + 1, choice.label, choice.key);
        if i == selected && colour {
            writeln!(err, "│ \x1b[36m❯ {line}\x1b[0m")?;
        } else if i == selected {
            writeln!(err, "│ ❯ {line}")?;
        } else {
            writeln!(err, "│   {line}")?;
        }
    }
    write!(err, "╰─ ↑/↓ and Enter, or a letter; Esc declines")?;
    err.flush()
}

/// Reads one key (an arrow key's escape sequence as one key), straight from the descriptor: a
/// buffered reader would hide the rest of a sequence from [`ready`].
fn read_key() -> std::io::Result<Key> {
    let stdin = std::io::stdin();
    let mut bytes = [0u8; 8];
    let n = nix::unistd::read(stdin.as_fd(), &mut bytes).map_err(std::io::Error::from)?;
    let mut read = bytes[..n].to_vec();
    if read == [0x1b] && ready(&stdin)? {
        // The start of an arrow key's sequence, whose rest follows at once.
        let n = nix::unistd::read(stdin.as_fd(), &mut bytes).map_err(std::io::Error::from)?;
        read.extend_from_slice(&bytes[..n]);
    }
    Ok(key(&read))
}

/// The key that `bytes` (one read's worth) stand for.
fn key(bytes: &[u8]) -> Key {
    match bytes {
        // End of input: no answer.
        [] => Key::Escape,
        [b'\r' | b'\n', ..] => Key::Enter,
        [3, ..] => Key::Interrupt,
        // Ctrl-D on a menu: no answer.
        [4, ..] => Key::Escape,
        [0x1b] => Key::Escape,
        [0x1b, b'[' | b'O', b'A', ..] => Key::Up,
        [0x1b, b'[' | b'O', b'B', ..] => Key::Down,
        [b, ..] if b.is_ascii_graphic() => Key::Char(char::from(*b)),
        _ => Key::Other,
    }
}

/// Whether more input arrives within a moment.
fn ready(stdin: &std::io::Stdin) -> std::io::Result<bool> {
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let n = poll(&mut fds, PollTimeout::from(50u16)).map_err(std::io::Error::from)?;
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_bytes() {
        assert_eq!(key(b"\x1b[A"), Key::Up);
        assert_eq!(key(b"\x1bOB"), Key::Down);
        assert_eq!(key(b"\x1b"), Key::Escape);
        assert_eq!(key(b"\r"), Key::Enter);
        assert_eq!(key(b"a"), Key::Char('a'));
        assert_eq!(key(&[3]), Key::Interrupt);
        assert_eq!(key(b"\x1b[C"), Key::Other);
    }
}
