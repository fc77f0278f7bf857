//! A cursor over tokens, shared by the expression and item parsers.

use super::lex::{Tok, Token};
use super::{Diagnostic, Span};

/// Deepest nesting of parentheses, calls and method chains the parser follows: a bound on recursion, so no
/// input can exhaust the stack.
pub const MAX_DEPTH: usize = 64;

pub struct Cursor<'t> {
    toks: &'t [Token],
    pos: usize,
    /// The end of the input, for errors at the end.
    end: usize,
    pub depth: usize,
}

impl<'t> Cursor<'t> {
    pub fn new(toks: &'t [Token], end: usize) -> Self {
        Cursor {
            toks,
            pos: 0,
            end,
            depth: 0,
        }
    }

    pub fn peek(&self) -> Option<&'t Token> {
        self.toks.get(self.pos)
    }

    pub fn peek_at(&self, n: usize) -> Option<&'t Token> {
        self.toks.get(self.pos + n)
    }

    pub fn next(&mut self) -> Option<&'t Token> {
        let t = self.toks.get(self.pos);
        if t.is_some() {
            self.pos += 1;
        }
        t
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }

    /// The span of the next token, or an empty span at the end of the input.
    pub fn here(&self) -> Span {
        self.peek()
            .map_or(Span::new(self.end, self.end), |t| t.span)
    }

    /// The span of the token just taken.
    pub fn last(&self) -> Span {
        self.pos
            .checked_sub(1)
            .and_then(|p| self.toks.get(p))
            .map_or(Span::new(self.end, self.end), |t| t.span)
    }

    /// Whether the token before the one just taken is punctuation `p` (a trailing comma in `(e,)`).
    pub fn before_last_is_punct(&self, p: &str) -> bool {
        self.pos >= 2
            && matches!(self.toks.get(self.pos - 2), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }

    pub fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Punct(q), .. }) if *q == p)
    }

    pub fn is_ident(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Ident(i), .. }) if i == name)
    }

    pub fn eat_punct(&mut self, p: &str) -> bool {
        let yes = self.is_punct(p);
        if yes {
            self.pos += 1;
        }
        yes
    }

    pub fn eat_ident(&mut self, name: &str) -> bool {
        let yes = self.is_ident(name);
        if yes {
            self.pos += 1;
        }
        yes
    }

    pub fn expect_punct(&mut self, p: &str, what: &str) -> Result<Span, Diagnostic> {
        if self.eat_punct(p) {
            Ok(self.last())
        } else {
            Err(self.unexpected(&format!("`{p}` {what}")))
        }
    }

    pub fn ident(&mut self, what: &str) -> Result<(String, Span), Diagnostic> {
        match self.peek() {
            Some(Token {
                tok: Tok::Ident(name),
                span,
            }) => {
                self.pos += 1;
                Ok((name.clone(), *span))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// "expected …, found …" at the next token.
    pub fn unexpected(&self, expected: &str) -> Diagnostic {
        let found = match self.peek() {
            None => "the end of the input".to_owned(),
            Some(t) => describe(&t.tok),
        };
        Diagnostic::new(format!("expected {expected}, found {found}"), self.here())
    }

    /// Enters one level of nesting, refusing to go deeper than [`MAX_DEPTH`].
    pub fn descend(&mut self) -> Result<(), Diagnostic> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::new(
                format!("nested more than {MAX_DEPTH} deep"),
                self.here(),
            ));
        }
        Ok(())
    }

    pub fn ascend(&mut self) {
        self.depth -= 1;
    }

    /// Skips a balanced `<…>` (generic arguments, which the playground does not need).
    pub fn skip_generics(&mut self) -> Result<(), Diagnostic> {
        let open = self.here();
        let mut depth = 0usize;
        while let Some(t) = self.next() {
            match &t.tok {
                Tok::Punct("<") => depth += 1,
                Tok::Punct(">") => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Tok::Punct(";" | "{" | "}") => break,
                _ => {}
            }
        }
        Err(Diagnostic::new(
            "these generic arguments are never closed: add `>`",
            open,
        ))
    }
}

/// A token as a learner reads it in an error message.
pub fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(i) => format!("`{i}`"),
        Tok::Int { value, .. } => format!("the number {value}"),
        Tok::Float { value, .. } => format!("the number {value}"),
        Tok::Str(_) => "a string".into(),
        Tok::Bytes(_) => "a byte string".into(),
        Tok::Punct(p) => format!("`{p}`"),
    }
}
