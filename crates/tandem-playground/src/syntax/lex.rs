//! The lexer: Rust tokens, as far as table declarations and DSL expressions use them, each with its span.

use super::{Diagnostic, Span};

/// A token's kind and content.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword (`users`, `pub`, `r#type` as `type`).
    Ident(String),
    /// An integer literal; `suffix` is the type after the digits (`18i64`).
    Int {
        /// The value.
        value: u128,
        /// The suffix, if any.
        suffix: Option<String>,
    },
    /// A float literal.
    Float {
        /// The value.
        value: f64,
        /// The suffix, if any.
        suffix: Option<String>,
    },
    /// A string literal, escapes resolved.
    Str(String),
    /// A byte string literal (`b"…"`).
    Bytes(Vec<u8>),
    /// Punctuation (`::`, `.`, `(`, …).
    Punct(&'static str),
}

/// A token and where it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where.
    pub span: Span,
}

/// Longest first, so `::` wins over `:`.
const PUNCTS: [&str; 34] = [
    "::", "..", "=>", "->", "==", "!=", "<=", ">=", "&&", "||", ".", ",", "(", ")", "[", "]", "{",
    "}", "<", ">", "#", "!", "=", ":", ";", "&", "+", "-", "*", "/", "%", "|", "?", "'",
];

/// Most tokens one input may have: far more than any query or schema needs, and a bound on the work a
/// pasted novel can cause.
pub const MAX_TOKENS: usize = 5_000;

/// Splits `src` into tokens; comments (`//`, `/* */`, doc comments) and white space are dropped.
pub fn lex(src: &str) -> Result<Vec<Token>, Diagnostic> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if src[i..].starts_with("//") {
            i = src[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if src[i..].starts_with("/*") {
            i = block_comment_end(src, i)?;
            continue;
        }
        if out.len() >= MAX_TOKENS {
            return Err(Diagnostic::new(
                format!("this input is too long: more than {MAX_TOKENS} tokens"),
                Span::new(i, src.len()),
            ));
        }
        let start = i;
        let (tok, end) = if c == b'"' {
            let (s, end) = string(src, i + 1, start)?;
            (Tok::Str(s), end)
        } else if c == b'r' && (src[i + 1..].starts_with('"') || src[i + 1..].starts_with("#\"")) {
            raw_string(src, i + 1, start)?
        } else if c == b'b' && src[i + 1..].starts_with('"') {
            let (s, end) = string(src, i + 2, start)?;
            (Tok::Bytes(s.into_bytes()), end)
        } else if c == b'r' && src[i + 1..].starts_with('#') && ident_start(bytes.get(i + 2)) {
            // A raw identifier: `r#type`.
            let end = ident_end(bytes, i + 2);
            (Tok::Ident(src[i + 2..end].to_owned()), end)
        } else if ident_start(Some(&c)) {
            let end = ident_end(bytes, i);
            (Tok::Ident(src[i..end].to_owned()), end)
        } else if c.is_ascii_digit() {
            number(src, i)?
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            (Tok::Punct(p), i + p.len())
        } else {
            let ch = src[i..].chars().next().unwrap_or('?');
            return Err(Diagnostic::new(
                format!("unexpected character {ch:?}"),
                Span::new(i, i + ch.len_utf8()),
            ));
        };
        out.push(Token {
            tok,
            span: Span::new(start, end),
        });
        i = end;
    }
    check_delimiters(&out)?;
    Ok(out)
}

/// Every `(`, `[` and `{` closed by its own partner, as rustc checks before it parses: an unclosed one is
/// reported at the bracket itself, not at the end of the input where the parser would notice.
fn check_delimiters(toks: &[Token]) -> Result<(), Diagnostic> {
    let partner = |open: &str| match open {
        "(" => ")",
        "[" => "]",
        _ => "}",
    };
    let mut open: Vec<(&'static str, Span)> = Vec::new();
    for t in toks {
        match t.tok {
            Tok::Punct(p @ ("(" | "[" | "{")) => open.push((p, t.span)),
            Tok::Punct(p @ (")" | "]" | "}")) => match open.pop() {
                Some((o, _)) if partner(o) == p => {}
                Some((o, _)) => {
                    return Err(Diagnostic::new(
                        format!(
                            "mismatched closing delimiter `{p}`: the `{o}` still open here is closed by `{}`",
                            partner(o)
                        ),
                        t.span,
                    ));
                }
                None => {
                    return Err(Diagnostic::new(
                        format!("unexpected closing delimiter `{p}`: nothing is open here"),
                        t.span,
                    ));
                }
            },
            _ => {}
        }
    }
    match open.pop() {
        Some((o, at)) => Err(Diagnostic::new(
            format!("this `{o}` is never closed: add `{}`", partner(o)),
            at,
        )),
        None => Ok(()),
    }
}

fn ident_start(c: Option<&u8>) -> bool {
    c.is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
}

fn ident_end(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
        i += 1;
    }
    i
}

/// The end of a (nested) block comment starting at `i`.
fn block_comment_end(src: &str, start: usize) -> Result<usize, Diagnostic> {
    let mut depth = 0usize;
    let mut i = start;
    while i < src.len() {
        if src[i..].starts_with("/*") {
            depth += 1;
            i += 2;
        } else if src[i..].starts_with("*/") {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return Ok(i);
            }
        } else {
            i += src[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    Err(Diagnostic::new(
        "this comment is never closed: add `*/`",
        Span::new(start, start + 2),
    ))
}

/// A string body from `i` (after the opening quote) to its closing quote; returns the text and the index
/// after the quote.
fn string(src: &str, mut i: usize, start: usize) -> Result<(String, usize), Diagnostic> {
    let mut out = String::new();
    let mut chars = src[i..].char_indices();
    while let Some((off, ch)) = chars.next() {
        match ch {
            '"' => return Ok((out, i + off + 1)),
            '\\' => {
                let Some((eoff, e)) = chars.next() else { break };
                let bad = |what: &str| {
                    Diagnostic::new(
                        format!("unknown escape {what} in this string"),
                        Span::new(i + off, i + eoff + e.len_utf8()),
                    )
                };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    '\'' => out.push('\''),
                    '\n' => {
                        // A line continuation: skip the leading white space of the next line.
                        let rest = &src[i + eoff + 1..];
                        let skip = rest.len() - rest.trim_start().len();
                        let resume = i + eoff + 1 + skip;
                        chars = src[resume..].char_indices();
                        // Offsets from the new iterator are relative to `resume`.
                        i = resume;
                        continue;
                    }
                    'u' => {
                        let rest = &src[i + eoff + 1..];
                        let close = rest.find('}').filter(|_| rest.starts_with('{'));
                        let code = close
                            .and_then(|c| u32::from_str_radix(&rest[1..c], 16).ok())
                            .and_then(char::from_u32)
                            .ok_or_else(|| bad("\\u{…}"))?;
                        out.push(code);
                        let close = close.unwrap_or(0);
                        for _ in 0..=close {
                            chars.next();
                        }
                    }
                    other => return Err(bad(&format!("\\{other}"))),
                }
            }
            other => out.push(other),
        }
    }
    Err(Diagnostic::new(
        "this string is never closed: add `\"`",
        Span::new(start, start + 1),
    ))
}

/// `r"…"` or `r#"…"#` starting at `i` (after the `r`).
fn raw_string(src: &str, i: usize, start: usize) -> Result<(Tok, usize), Diagnostic> {
    let hashes = src[i..].bytes().take_while(|b| *b == b'#').count();
    let body = i + hashes + 1;
    let close = format!("\"{}", "#".repeat(hashes));
    match src[body..].find(&close) {
        Some(n) => Ok((
            Tok::Str(src[body..body + n].to_owned()),
            body + n + close.len(),
        )),
        None => Err(Diagnostic::new(
            format!("this raw string is never closed: add `{close}`"),
            Span::new(start, body),
        )),
    }
}

/// A decimal integer or float with optional `_` separators, exponent and type suffix.
fn number(src: &str, start: usize) -> Result<(Tok, usize), Diagnostic> {
    let bytes = src.as_bytes();
    if src[start..].starts_with("0x")
        || src[start..].starts_with("0b")
        || src[start..].starts_with("0o")
    {
        return Err(Diagnostic::new(
            "write numbers in decimal here",
            Span::new(start, start + 2),
        ));
    }
    let digits = |mut i: usize| {
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'_') {
            i += 1;
        }
        i
    };
    let mut i = digits(start);
    let mut float = false;
    if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
        float = true;
        i = digits(i + 1);
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut j = i + 1;
        if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
            j += 1;
        }
        if j < bytes.len() && bytes[j].is_ascii_digit() {
            float = true;
            i = digits(j);
        }
    }
    let text: String = src[start..i].chars().filter(|c| *c != '_').collect();
    let suffix_end = ident_end(bytes, i);
    let suffix = (suffix_end > i).then(|| src[i..suffix_end].to_owned());
    let span = Span::new(start, suffix_end);
    let float = float || matches!(suffix.as_deref(), Some("f32" | "f64"));
    let tok = if float {
        let value = text
            .parse::<f64>()
            .map_err(|_| Diagnostic::new("this is not a number", span))?;
        Tok::Float { value, suffix }
    } else {
        let value = text
            .parse::<u128>()
            .map_err(|_| Diagnostic::new("this integer is too large", span))?;
        Tok::Int { value, suffix }
    };
    Ok((tok, suffix_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        lex(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    /// Paths, calls, literals of every kind, comments and spans.
    #[test]
    fn tokens_and_spans() {
        let toks = lex("users::age.ge(18) // adults\n").unwrap();
        assert_eq!(toks.len(), 8);
        assert_eq!(toks[0].tok, Tok::Ident("users".into()));
        assert_eq!(toks[1].tok, Tok::Punct("::"));
        assert_eq!(
            toks[6].tok,
            Tok::Int {
                value: 18,
                suffix: None
            }
        );
        assert_eq!(toks[6].span, Span::new(14, 16));
        assert_eq!(
            kinds(r##"1.5 2e3 7i64 3f64 "a\"b\n" r#"x"y"# b"hi" 1_000 /* c /* d */ */ r#type"##),
            vec![
                Tok::Float {
                    value: 1.5,
                    suffix: None
                },
                Tok::Float {
                    value: 2000.0,
                    suffix: None
                },
                Tok::Int {
                    value: 7,
                    suffix: Some("i64".into())
                },
                Tok::Float {
                    value: 3.0,
                    suffix: Some("f64".into())
                },
                Tok::Str("a\"b\n".into()),
                Tok::Str("x\"y".into()),
                Tok::Bytes(b"hi".to_vec()),
                Tok::Int {
                    value: 1000,
                    suffix: None
                },
                Tok::Ident("type".into()),
            ]
        );
        assert_eq!(kinds(r#""\u{e9}t\u{e9}""#), vec![Tok::Str("été".into())]);
    }

    /// Broken input is a diagnostic at the bad spot, never a panic.
    #[test]
    fn bad_input_points_at_the_spot() {
        let e = lex("users::name.eq(\"ada)").unwrap_err();
        assert_eq!(
            (e.span.start, e.message.contains("never closed")),
            (15, true)
        );
        assert_eq!(lex("a /* b").unwrap_err().span, Span::new(2, 4));
        assert_eq!(lex("x.eq(\"\\q\")").unwrap_err().span, Span::new(6, 8));
        assert_eq!(lex("é").unwrap_err().span, Span::new(0, 2));
        assert!(lex("0x1f").is_err());
        assert!(lex("99999999999999999999999999999999999999999").is_err());
        assert!(
            lex(&"a ".repeat(MAX_TOKENS + 1))
                .unwrap_err()
                .message
                .contains("too long")
        );
        // Brackets: the unclosed one is named where it stands, not at the end of the input.
        let e = lex("users::table.filter(users::age.ge(18).limit(3)").unwrap_err();
        assert_eq!(
            (e.span, e.message.as_str()),
            (Span::new(19, 20), "this `(` is never closed: add `)`")
        );
        let e = lex("f(a]").unwrap_err();
        assert_eq!(e.span, Span::new(3, 4));
        assert!(
            e.message.starts_with("mismatched closing delimiter `]`"),
            "{}",
            e.message
        );
        let e = lex("a)").unwrap_err();
        assert_eq!(e.span, Span::new(1, 2));
        assert!(lex("f([{}], (x))").is_ok());
        // Every prefix of a valid input lexes or fails cleanly.
        let src = r#"users::table.filter(users::name.like("a%")).limit(3)"#;
        for i in 0..src.len() {
            let _ = lex(&src[..i]);
        }
    }
}
