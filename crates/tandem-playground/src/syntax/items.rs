//! Table declarations as Rust writes them: `#[derive(Table)]` structs with `#[table(..)]` and `#[column(..)]`
//! attributes. `use` lines, doc comments and other derives are accepted and ignored.

use super::cursor::Cursor;
use super::expr::{Lit, Name};
use super::lex::{Tok, lex};
use super::{Diagnostic, Span, check_size};

/// One attribute argument: `flag`, `key = literal` or `name(a, b, ..)`.
#[derive(Clone, Debug, PartialEq)]
pub enum Meta {
    /// `primary_key`
    Flag(Name),
    /// `varchar = 100`, `name = "users"`, `default = -1`
    Value {
        /// The key.
        name: Name,
        /// The literal.
        lit: Lit,
        /// Written with a leading `-`.
        negative: bool,
        /// The literal's span.
        span: Span,
    },
    /// `index(age, name)`
    List(Name, Vec<Meta>),
}

impl Meta {
    /// The argument's name.
    pub fn name(&self) -> &Name {
        match self {
            Meta::Flag(n) | Meta::Value { name: n, .. } | Meta::List(n, _) => n,
        }
    }
}

/// `#[path(args)]`
#[derive(Clone, Debug, PartialEq)]
pub struct Attr {
    /// `table`, `column`, `derive`, `doc`, …
    pub path: Name,
    /// Its arguments.
    pub args: Vec<Meta>,
}

/// A field type: `i64`, `Option<String>`, `Vec<u8>`.
#[derive(Clone, Debug, PartialEq)]
pub struct TypeName {
    /// The last path segment (`std::string::String` is `String`).
    pub name: String,
    /// Generic arguments.
    pub args: Vec<TypeName>,
    /// Where.
    pub span: Span,
}

/// One field of a struct.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Its attributes.
    pub attrs: Vec<Attr>,
    /// Its name.
    pub name: Name,
    /// Its type.
    pub ty: TypeName,
}

/// A struct declaration.
#[derive(Clone, Debug, PartialEq)]
pub struct StructDecl {
    /// Its attributes.
    pub attrs: Vec<Attr>,
    /// Its name.
    pub name: Name,
    /// Its fields.
    pub fields: Vec<Field>,
}

/// Parses the schema box: struct declarations (and `use` lines).
pub fn parse_items(src: &str) -> Result<Vec<StructDecl>, Diagnostic> {
    check_size(src)?;
    let toks = lex(src)?;
    let mut c = Cursor::new(&toks, src.len());
    let mut out = Vec::new();
    while !c.at_end() {
        let attrs = attributes(&mut c)?;
        visibility(&mut c)?;
        if c.eat_ident("use") {
            while !c.eat_punct(";") {
                if c.next().is_none() {
                    return Err(c.unexpected("`;` after the `use` line"));
                }
            }
            continue;
        }
        if !c.eat_ident("struct") {
            return Err(c.unexpected("a `struct` declaration"));
        }
        let (name, span) = c.ident("the struct's name")?;
        if c.is_punct("<") {
            return Err(Diagnostic::new(
                "a table struct takes no generic parameters",
                c.here(),
            ));
        }
        c.expect_punct("{", "to open the struct's fields")?;
        let mut fields = Vec::new();
        while !c.eat_punct("}") {
            if c.at_end() {
                return Err(c.unexpected("`}` to close the struct"));
            }
            let attrs = attributes(&mut c)?;
            visibility(&mut c)?;
            let (fname, fspan) = c.ident("a field name")?;
            c.expect_punct(":", "after the field name")?;
            let ty = type_name(&mut c)?;
            fields.push(Field {
                attrs,
                name: Name {
                    name: fname,
                    span: fspan,
                },
                ty,
            });
            if !c.eat_punct(",") && !c.is_punct("}") {
                return Err(c.unexpected("`,` or `}` after the field"));
            }
        }
        out.push(StructDecl {
            attrs,
            name: Name { name, span },
            fields,
        });
    }
    Ok(out)
}

/// `#[..]` attributes (and inner `#![..]` ones, which are skipped).
fn attributes(c: &mut Cursor<'_>) -> Result<Vec<Attr>, Diagnostic> {
    let mut out = Vec::new();
    while c.eat_punct("#") {
        let inner = c.eat_punct("!");
        c.expect_punct("[", "after `#`")?;
        let (name, span) = c.ident("an attribute name")?;
        let args = if c.is_punct("(") {
            meta_list(c)?
        } else if c.eat_punct("=") {
            // `#[doc = "…"]`: the value does not matter.
            c.next();
            Vec::new()
        } else {
            Vec::new()
        };
        c.expect_punct("]", "to close the attribute")?;
        if !inner {
            out.push(Attr {
                path: Name { name, span },
                args,
            });
        }
    }
    Ok(out)
}

fn meta_list(c: &mut Cursor<'_>) -> Result<Vec<Meta>, Diagnostic> {
    c.expect_punct("(", "")?;
    c.descend()?;
    let mut out = Vec::new();
    while !c.eat_punct(")") {
        let (name, span) = c.ident("an attribute argument")?;
        let name = Name { name, span };
        let meta = if c.eat_punct("=") {
            let negative = c.eat_punct("-");
            let Some(t) = c.next() else {
                return Err(c.unexpected("a value after `=`"));
            };
            let lit = match &t.tok {
                Tok::Int { value, suffix } => Lit::Int(*value, suffix.clone()),
                Tok::Float { value, suffix } => Lit::Float(*value, suffix.clone()),
                Tok::Str(s) if !negative => Lit::Str(s.clone()),
                Tok::Ident(b) if !negative && (b == "true" || b == "false") => {
                    Lit::Bool(b == "true")
                }
                _ => return Err(Diagnostic::new("expected a literal value", t.span)),
            };
            Meta::Value {
                name,
                lit,
                negative,
                span: t.span,
            }
        } else if c.is_punct("(") {
            Meta::List(name, meta_list(c)?)
        } else {
            Meta::Flag(name)
        };
        out.push(meta);
        if !c.eat_punct(",") && !c.is_punct(")") {
            c.ascend();
            return Err(c.unexpected("`,` or `)`"));
        }
    }
    c.ascend();
    Ok(out)
}

/// `pub`, `pub(crate)`, …
fn visibility(c: &mut Cursor<'_>) -> Result<(), Diagnostic> {
    if c.eat_ident("pub") && c.is_punct("(") {
        while !c.eat_punct(")") {
            if c.next().is_none() {
                return Err(c.unexpected("`)`"));
            }
        }
    }
    Ok(())
}

fn type_name(c: &mut Cursor<'_>) -> Result<TypeName, Diagnostic> {
    c.descend()?;
    let start = c.here();
    let mut name = c.ident("a type")?.0;
    while c.eat_punct("::") {
        name = c.ident("a type name after `::`")?.0;
    }
    let mut args = Vec::new();
    if c.eat_punct("<") {
        loop {
            args.push(type_name(c)?);
            if c.eat_punct(">") {
                break;
            }
            c.expect_punct(",", "or `>` between type arguments")?;
        }
    }
    c.ascend();
    Ok(TypeName {
        name,
        args,
        span: start.to(c.last()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::refused;

    /// The default schema's declarations, with doc comments, derives and a `use` line.
    #[test]
    fn default_schema_declarations() {
        // The playground's default schema: users, then orders.
        let src = crate::samples::DEFAULT_SCHEMA;
        let items = parse_items(src).unwrap();
        assert_eq!(items.len(), 2);
        let u = &items[0];
        assert_eq!(u.name.name, "User");
        assert_eq!(u.attrs.len(), 2);
        assert_eq!(u.attrs[1].args.len(), 2);
        assert!(
            matches!(&u.attrs[1].args[1], Meta::List(n, cols) if n.name == "index" && cols.len() == 1)
        );
        assert_eq!(u.fields.len(), 4);
        assert_eq!(u.fields[3].ty.name, "Option");
        assert_eq!(u.fields[3].ty.args[0].name, "String");
        assert!(
            matches!(&u.fields[1].attrs[0].args[0], Meta::Value { name, lit: Lit::Int(100, None), .. } if name.name == "varchar")
        );
        assert_eq!(
            &src[u.fields[2].name.span.start..u.fields[2].name.span.end],
            "age"
        );
    }

    /// Broken declarations are diagnostics at the bad spot.
    #[test]
    fn broken_declarations() {
        let e = parse_items("struct A { id i64 }").unwrap_err();
        assert_eq!(e.span, Span::new(14, 17));
        let open = parse_items("struct A { id: i64").unwrap_err();
        assert_eq!(
            (open.span, open.message.as_str()),
            (Span::new(9, 10), "this `{` is never closed: add `}`")
        );
        refused(parse_items("struct A { id: }"), "found `}`");
        refused(parse_items("fn main() {}"), "struct");
        assert!(parse_items("#[table(name = )] struct A {}").is_err());
        assert!(parse_items("struct A { x: Option<i64 }").is_err());
        assert!(parse_items("").unwrap().is_empty());
    }
}
