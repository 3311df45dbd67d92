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
    if choices.is_empty() {
        return Ok(None);
    }
    let mut err = std::io::stderr().lock();
    for line in header {
        writeln!(err, "{line}")?;
    }
    let raw = RawMode::enter().map_err(std::io::Error::from)?;
    let mut keys = Keys::default();
    let mut selected = 0usize;
    let mut drawn = false;
    let picked = loop {
        if drawn {
            write!(err, "\x1b[{}A\r\x1b[J", choices.len())?;
        }
        draw(&mut err, choices, selected, colour)?;
        drawn = true;
        match keys.next()? {
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
    write!(err, "\x1b[{}A\r\x1b[J", choices.len())?;
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
        let line = if choice.key.is_ascii_digit() {
            format!("{}. {}", i + 1, choice.label)
        } else {
            format!("{}. {}  ({})", i + 1, choice.label, choice.key)
        };
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

/// Keys read straight from the descriptor (a buffered reader would hide the rest of an escape
/// sequence from [`ready`]), several to a read when they come fast.
#[derive(Default)]
struct Keys {
    pending: std::collections::VecDeque<u8>,
}

impl Keys {
    /// The next key.
    fn next(&mut self) -> std::io::Result<Key> {
        if self.pending.is_empty() && !self.fill()? {
            // End of input: no answer.
            return Ok(Key::Escape);
        }
        if self.pending.len() == 1 && self.pending[0] == 0x1b && ready()? {
            // The start of an arrow key's sequence, whose rest follows at once.
            self.fill()?;
        }
        let bytes: Vec<u8> = self.pending.iter().copied().collect();
        let (key, used) = key(&bytes);
        self.pending.drain(..used.clamp(1, bytes.len()));
        Ok(key)
    }

    /// Reads what is there; false at the end of input.
    fn fill(&mut self) -> std::io::Result<bool> {
        let mut bytes = [0u8; 64];
        let n = nix::unistd::read(std::io::stdin().as_fd(), &mut bytes)
            .map_err(std::io::Error::from)?;
        self.pending.extend(&bytes[..n]);
        Ok(n > 0)
    }
}

/// The first key in `bytes`, and how many bytes it took.
fn key(bytes: &[u8]) -> (Key, usize) {
    match bytes {
        [] => (Key::Escape, 0),
        [b'\r' | b'\n', ..] => (Key::Enter, 1),
        [3, ..] => (Key::Interrupt, 1),
        // Ctrl-D on a menu: no answer.
        [4, ..] => (Key::Escape, 1),
        [0x1b, b'[' | b'O', b'A', ..] => (Key::Up, 3),
        [0x1b, b'[' | b'O', b'B', ..] => (Key::Down, 3),
        [0x1b, b'[', rest @ ..] => {
            // Another control sequence: up to its final byte.
            let end = rest.iter().position(|b| (0x40..=0x7e).contains(b));
            (Key::Other, end.map_or(bytes.len(), |e| e + 3))
        }
        [0x1b, ..] => (Key::Escape, 1),
        [b, ..] if b.is_ascii_graphic() => (Key::Char(char::from(*b)), 1),
        _ => (Key::Other, 1),
    }
}

/// Whether more input arrives within a moment.
fn ready() -> std::io::Result<bool> {
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let n = poll(&mut fds, PollTimeout::from(50u16)).map_err(std::io::Error::from)?;
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_from_bytes() {
        assert_eq!(key(b"\x1b[A"), (Key::Up, 3));
        assert_eq!(key(b"\x1bOB\r"), (Key::Down, 3));
        assert_eq!(key(b"\x1b"), (Key::Escape, 1));
        assert_eq!(key(b"\r"), (Key::Enter, 1));
        assert_eq!(key(b"ab"), (Key::Char('a'), 1));
        assert_eq!(key(&[3]), (Key::Interrupt, 1));
        assert_eq!(key(b"\x1b[1;5Cx"), (Key::Other, 6));
    }
}
