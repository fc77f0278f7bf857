//! SQL identifiers (table, column, index and alias names), validated once when they are made.
//!
//! Every identifier is quoted when rendered, so reserved words and mixed case are fine. What cannot be quoted
//! safely on all three engines is refused here, with a typed error, so that no renderer ever has to.

use std::borrow::Cow;
use std::fmt;

use crate::error::Error;

/// The longest identifier accepted, in bytes: PostgreSQL's `NAMEDATALEN - 1` (MySQL allows 64, SQLite more).
pub const MAX_IDENT_BYTES: usize = 63;

/// A validated SQL identifier: non-empty, at most [`MAX_IDENT_BYTES`] bytes, no control characters, and no
/// trailing space (MySQL refuses names that end in one).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ident(Cow<'static, str>);

/// Why a name is not a valid identifier, or `None` if it is. A `const fn` so declared tables can check their
/// names at compile time.
pub const fn ident_problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return Some("identifier is empty");
    }
    if bytes.len() > MAX_IDENT_BYTES {
        return Some("identifier is longer than 63 bytes");
    }
    if bytes[bytes.len() - 1] == b' ' {
        return Some("identifier ends with a space");
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x20 || b == 0x7f {
            return Some("identifier contains a control character");
        }
        i += 1;
    }
    None
}

impl Ident {
    /// Validates `name` and wraps it.
    pub fn new(name: impl Into<Cow<'static, str>>) -> Result<Self, Error> {
        let name = name.into();
        match ident_problem(&name) {
            None => Ok(Ident(name)),
            Some(reason) => Err(Error::InvalidIdentifier {
                ident: name.into_owned(),
                reason,
            }),
        }
    }

    /// A name known at compile time. Used by `#[derive(Table)]` inside `const` items, so an invalid name stops
    /// the build instead of reaching run time.
    #[doc(hidden)]
    pub const fn from_static(name: &'static str) -> Self {
        if ident_problem(name).is_some() {
            panic!("invalid SQL identifier");
        }
        Ident(Cow::Borrowed(name))
    }

    /// The name, unquoted.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<&str> for Ident {
    type Error = Error;
    fn try_from(value: &str) -> Result<Self, Error> {
        Ident::new(value.to_owned())
    }
}

impl TryFrom<String> for Ident {
    type Error = Error;
    fn try_from(value: String) -> Result<Self, Error> {
        Ident::new(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each rule of `ident_problem` refuses its case and accepts ordinary names, quotes and non-ASCII.
    #[test]
    fn validation_rules() {
        assert!(Ident::new("").is_err());
        assert!(Ident::new("a".repeat(64)).is_err());
        assert!(Ident::new("a".repeat(63)).is_ok());
        assert!(Ident::new("name ").is_err());
        assert!(Ident::new("na\0me").is_err());
        assert!(Ident::new("line\nbreak").is_err());
        for ok in [
            "users",
            "order",
            "Mixed Case",
            "quo\"te",
            "back`tick",
            "이름",
        ] {
            assert_eq!(Ident::new(ok).unwrap().as_str(), ok);
        }
    }
}
