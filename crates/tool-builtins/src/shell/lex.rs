//! Cuts a command line into words, control operators and redirections the way a POSIX shell
//! reads it, so that `ls;rm x` is two commands and `echo ';'` is one.
//!
//! Only the static part of the shell language is accepted: anything whose meaning depends on
//! an expansion or on syntax this lexer does not model (`$`, backticks, `(`, here-documents,
//! process substitution, background jobs, comments) is refused with [`Unsupported`], which the
//! classifier treats as "not known to be safe". The boundaries between words are found here,
//! while the quoting inside each word is removed by the `shlex` crate.

/// A part of the command line the lexer does not model; the command is then not known to be safe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unsupported;

/// One word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word as the program receives it.
    pub(crate) text: String,
    /// The word as written, quotes included.
    pub(crate) raw: String,
    /// Whether unquoted glob or brace characters let the shell turn it into other words
    /// (a file named `-delete` matched by `*` becomes an option).
    pub(crate) expands: bool,
}

/// Operators that end a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// `;` or a newline.
    Sequence,
    /// `&&`.
    And,
    /// `||`.
    Or,
    /// `|` or `|&`.
    Pipe,
}

/// A redirection operator, with the file descriptor written before it (`2>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirect {
    /// `<`: reads a file.
    Input,
    /// `>`, `>>`, `>|`, `&>` or `&>>`: writes a file.
    Output,
    /// `>&` or `<&`: duplicates or closes a descriptor (or, with a file name, writes it).
    Duplicate,
}

/// A token of the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    /// A word.
    Word(Word),
    /// A control operator.
    Control(Control),
    /// A redirection; its target is the next word.
    Redirect(Redirect),
}

/// Tokenises `command`, or refuses it when it uses syntax this lexer does not model.
pub(crate) fn tokenize(command: &str) -> Result<Vec<Token>, Unsupported> {
    let mut lexer = Lexer {
        chars: command.chars().collect(),
        pos: 0,
        raw: String::new(),
        expands: false,
        open_bracket: false,
        open_brace: false,
        tokens: Vec::new(),
    };
    while let Some(c) = lexer.next() {
        lexer.step(c)?;
    }
    lexer.finish_word()?;
    Ok(lexer.tokens)
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    raw: String,
    expands: bool,
    open_bracket: bool,
    open_brace: bool,
    tokens: Vec<Token>,
}

impl Lexer {
    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.pos).copied();
        self.pos += usize::from(c.is_some());
        c
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Consumes the next character when it is `c`.
    fn eat(&mut self, c: char) -> bool {
        let found = self.peek() == Some(c);
        self.pos += usize::from(found);
        found
    }

    fn step(&mut self, c: char) -> Result<(), Unsupported> {
        match c {
            ' ' | '\t' => self.finish_word(),
            '\n' => self.control(Control::Sequence),
            ';' if self.peek() == Some(';') => Err(Unsupported),
            ';' => self.control(Control::Sequence),
            '&' => self.ampersand(),
            '|' => {
                let control = if self.eat('|') {
                    Control::Or
                } else {
                    self.eat('&');
                    Control::Pipe
                };
                self.control(control)
            }
            '<' | '>' => self.redirect(c),
            '(' | ')' | '`' | '$' => Err(Unsupported),
            // A comment hides the rest of the line; shells differ on when `#` starts one.
            '#' if self.raw.is_empty() => Err(Unsupported),
            '\\' => self.escape(),
            '\'' => self.single_quoted(),
            '"' => self.double_quoted(),
            c if c.is_control() => Err(Unsupported),
            c => {
                self.glob_char(c);
                self.raw.push(c);
                Ok(())
            }
        }
    }

    fn ampersand(&mut self) -> Result<(), Unsupported> {
        if self.eat('&') {
            return self.control(Control::And);
        }
        if self.eat('>') {
            self.eat('>');
            self.finish_word()?;
            self.tokens.push(Token::Redirect(Redirect::Output));
            return Ok(());
        }
        // A background job: its output and lifetime are not what a reader expects.
        Err(Unsupported)
    }

    fn redirect(&mut self, first: char) -> Result<(), Unsupported> {
        // `2>` names a descriptor only when the digits are the whole word so far.
        if !self.raw.is_empty() && self.raw.chars().all(|c| c.is_ascii_digit()) {
            self.raw.clear();
        }
        self.finish_word()?;
        let redirect = match first {
            '<' if self.eat('&') => Redirect::Duplicate,
            '<' if matches!(self.peek(), Some('<' | '>' | '(')) => return Err(Unsupported),
            '<' => Redirect::Input,
            _ if self.eat('&') => Redirect::Duplicate,
            _ if self.peek() == Some('(') => return Err(Unsupported),
            _ => {
                if !self.eat('>') {
                    self.eat('|');
                }
                Redirect::Output
            }
        };
        self.tokens.push(Token::Redirect(redirect));
        Ok(())
    }

    fn escape(&mut self) -> Result<(), Unsupported> {
        let escaped = self.next().ok_or(Unsupported)?;
        self.raw.push('\\');
        self.raw.push(escaped);
        Ok(())
    }

    fn single_quoted(&mut self) -> Result<(), Unsupported> {
        self.raw.push('\'');
        loop {
            let c = self.next().ok_or(Unsupported)?;
            self.raw.push(c);
            if c == '\'' {
                return Ok(());
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), Unsupported> {
        self.raw.push('"');
        loop {
            match self.next().ok_or(Unsupported)? {
                '$' | '`' => return Err(Unsupported),
                '\\' => {
                    let escaped = self.next().ok_or(Unsupported)?;
                    self.raw.push('\\');
                    self.raw.push(escaped);
                }
                '"' => {
                    self.raw.push('"');
                    return Ok(());
                }
                c => self.raw.push(c),
            }
        }
    }

    /// Notes unquoted pattern characters: `*`, `?`, a `[...]` class or a `{...}` brace.
    fn glob_char(&mut self, c: char) {
        match c {
            '*' | '?' => self.expands = true,
            '[' => self.open_bracket = true,
            '{' => self.open_brace = true,
            ']' if self.open_bracket => self.expands = true,
            '}' if self.open_brace => self.expands = true,
            _ => {}
        }
    }

    fn control(&mut self, control: Control) -> Result<(), Unsupported> {
        self.finish_word()?;
        self.tokens.push(Token::Control(control));
        Ok(())
    }

    /// Ends the current word, removing its quotes with `shlex`; a word must stay one word.
    fn finish_word(&mut self) -> Result<(), Unsupported> {
        if self.raw.is_empty() {
            return Ok(());
        }
        let raw = std::mem::take(&mut self.raw);
        let mut words = shlex::split(&raw).ok_or(Unsupported)?;
        let text = match (words.pop(), words.is_empty()) {
            (Some(text), true) => text,
            _ => return Err(Unsupported),
        };
        self.tokens.push(Token::Word(Word {
            text,
            raw,
            expands: std::mem::take(&mut self.expands),
        }));
        self.open_bracket = false;
        self.open_brace = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<String> {
        tokenize(command)
            .unwrap_or_default()
            .into_iter()
            .map(|token| match token {
                Token::Word(word) => word.text,
                Token::Control(control) => format!("<{control:?}>"),
                Token::Redirect(redirect) => format!("<{redirect:?}>"),
            })
            .collect()
    }

    #[test]
    fn operators_split_words_outside_quotes_only() {
        assert_eq!(words("ls;rm x"), ["ls", "<Sequence>", "rm", "x"]);
        assert_eq!(words("echo ';' \"a|b\""), ["echo", ";", "a|b"]);
        assert_eq!(
            words("a&&b||c|d|&e"),
            ["a", "<And>", "b", "<Or>", "c", "<Pipe>", "d", "<Pipe>", "e"]
        );
        assert_eq!(words("ls 2>/dev/null"), ["ls", "<Output>", "/dev/null"]);
        assert_eq!(words("ls a2>x"), ["ls", "a2", "<Output>", "x"]);
        assert_eq!(words("cmd 2>&1"), ["cmd", "<Duplicate>", "1"]);
        assert_eq!(words("find . -del\\ete"), ["find", ".", "-delete"]);
        assert_eq!(words("grep 'a b'c"), ["grep", "a bc"]);
    }

    #[test]
    fn expansions_and_unmodelled_syntax_are_refused() {
        for command in [
            "echo $(rm x)",
            "echo `rm x`",
            "echo \"$HOME\"",
            "cat <(ls)",
            "cat <<EOF",
            "ls &",
            "(ls)",
            "ls # comment",
            "echo 'open",
            "case x in x) ;; esac",
            "a\rb",
        ] {
            assert_eq!(tokenize(command), Err(Unsupported), "{command}");
        }
    }

    #[test]
    fn glob_characters_are_noted() {
        let expands = |command: &str| match tokenize(command).unwrap_or_default().pop() {
            Some(Token::Word(word)) => word.expands,
            _ => panic!("{command}"),
        };
        assert!(expands("ls *.rs"));
        assert!(expands("ls a{b,c}"));
        assert!(expands("ls [ab]"));
        assert!(!expands("ls '*.rs'"));
        assert!(!expands("test ["));
        assert!(!expands("ls \\*"));
    }
}
