//! The Rust the playground reads: a lexer and a parser for table declarations (`#[derive(Table)]` structs)
//! and DSL expressions, exactly as they are written in Rust, so a snippet from the book pastes in unchanged.
//! It is a small parser of a Rust subset, not `syn`: the page stays small, and every error names the spot.

mod cursor;
pub mod expr;
pub mod items;
pub mod lex;

/// A byte range of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// `start..end`.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// From the start of `self` to the end of `other`.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start, other.end.max(self.start))
    }
}

/// In tests: `r` is refused with a message that mentions `needle`.
#[cfg(test)]
#[track_caller]
pub(crate) fn refused<T: std::fmt::Debug>(r: Result<T, Diagnostic>, needle: &str) {
    let e = r.unwrap_err();
    assert!(
        e.message.contains(needle),
        "{needle:?} is not in: {}",
        e.message
    );
}

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// A sentence for the learner.
    pub message: String,
    /// The bad spot.
    pub span: Span,
}

impl Diagnostic {
    /// A diagnostic at `span`.
    pub fn new(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span,
        }
    }
}

/// The longest input the playground reads, per box.
pub const MAX_INPUT: usize = 32 * 1024;

/// Refuses inputs over [`MAX_INPUT`] before any work is done on them.
pub fn check_size(src: &str) -> Result<(), Diagnostic> {
    if src.len() > MAX_INPUT {
        return Err(Diagnostic::new(
            format!(
                "this input has {} bytes; the playground reads at most {MAX_INPUT}",
                src.len()
            ),
            Span::new(MAX_INPUT, src.len()),
        ));
    }
    Ok(())
}
