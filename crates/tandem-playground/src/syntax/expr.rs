//! DSL expressions as Rust writes them: paths (`users::age`), calls (`count_star()`, `Some(1)`), method chains
//! (`.filter(..).order_by(..)`), literals, tuples, arrays (`[1, 2]`, `vec![..]`, `&[..]`), `-x` and `+ - * / %`.
//! Rust operators the DSL spells as methods (`==`, `&&`, `!`) get an error that names the method.

use super::cursor::Cursor;
use super::lex::{Tok, Token, lex};
use super::{Diagnostic, Span, check_size};

/// A name and where it stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Name {
    /// The name.
    pub name: String,
    /// Where.
    pub span: Span,
}

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Lit {
    /// An integer, with its type suffix if written (`18i64`).
    Int(u128, Option<String>),
    /// A float, with its type suffix if written.
    Float(f64, Option<String>),
    /// A string.
    Str(String),
    /// Bytes (`b"…"`).
    Bytes(Vec<u8>),
    /// `true` / `false`.
    Bool(bool),
}

/// Arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// `a::b::c` (generic arguments dropped).
    Path(Vec<Name>, Span),
    /// A literal.
    Lit(Lit, Span),
    /// `path(args)`.
    Call {
        /// The function's path.
        func: Vec<Name>,
        /// Arguments.
        args: Vec<Expr>,
        /// The whole call.
        span: Span,
    },
    /// `recv.method(args)`.
    Method {
        /// The receiver.
        recv: Box<Expr>,
        /// The method.
        method: Name,
        /// Arguments.
        args: Vec<Expr>,
        /// The whole call.
        span: Span,
    },
    /// `(a, b)`; `(a,)` is a one-element tuple.
    Tuple(Vec<Expr>, Span),
    /// `[a, b]`, `vec![a, b]`, `&[a, b]`.
    Array(Vec<Expr>, Span),
    /// `-e`.
    Neg(Box<Expr>, Span),
    /// `a op b`.
    Arith {
        /// Operator.
        op: ArithOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
        /// The whole expression.
        span: Span,
    },
}

impl Expr {
    /// Where the expression stands.
    pub fn span(&self) -> Span {
        match self {
            Expr::Path(_, s)
            | Expr::Lit(_, s)
            | Expr::Call { span: s, .. }
            | Expr::Method { span: s, .. }
            | Expr::Tuple(_, s)
            | Expr::Array(_, s)
            | Expr::Neg(_, s)
            | Expr::Arith { span: s, .. } => *s,
        }
    }

    /// `lhs op rhs`, standing from the one's start to the other's end.
    fn arith(op: ArithOp, lhs: Expr, rhs: Expr) -> Expr {
        let span = lhs.span().to(rhs.span());
        Expr::Arith {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
            span,
        }
    }
}

/// Parses the query box: one expression, optionally written as `let name = expr;`, with a leading `&`
/// allowed (as in `show(&users::table…)`).
pub fn parse_query(src: &str) -> Result<Expr, Diagnostic> {
    check_size(src)?;
    let toks = lex(src)?;
    let mut c = Cursor::new(&toks, src.len());
    if c.at_end() {
        return Err(Diagnostic::new(
            "write a query, for example `users::table.select_all()`",
            Span::new(0, src.len()),
        ));
    }
    if c.eat_ident("let") {
        c.eat_ident("mut");
        c.ident("a name after `let`")?;
        if c.eat_punct(":") {
            // A type annotation: skip to `=`.
            while !c.at_end() && !c.is_punct("=") {
                c.next();
            }
        }
        c.expect_punct("=", "after the name")?;
    }
    let e = expression(&mut c)?;
    c.eat_punct(";");
    if !c.at_end() {
        return Err(c.unexpected("the end of the query (one statement at a time)"));
    }
    Ok(e)
}

/// An expression: arithmetic over unary terms, `* / %` binding tighter than `+ -`.
pub fn expression(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    c.descend()?;
    let e = sum(c);
    c.ascend();
    e
}

fn sum(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let lhs = left_assoc(c, &[("+", ArithOp::Add), ("-", ArithOp::Sub)], product)?;
    // No `+` or `-` follows: neither may a Rust operator the DSL writes as a method.
    refuse_operator(c)?;
    Ok(lhs)
}

fn product(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let ops = [
        ("*", ArithOp::Mul),
        ("/", ArithOp::Div),
        ("%", ArithOp::Rem),
    ];
    left_assoc(c, &ops, unary)
}

/// `operand (op operand)*`, grouped to the left: `a - b - c` is `(a - b) - c`.
fn left_assoc(
    c: &mut Cursor<'_>,
    ops: &[(&str, ArithOp)],
    operand: fn(&mut Cursor<'_>) -> Result<Expr, Diagnostic>,
) -> Result<Expr, Diagnostic> {
    let mut lhs = operand(c)?;
    while let Some(&(_, op)) = ops.iter().find(|(p, _)| c.eat_punct(p)) {
        lhs = Expr::arith(op, lhs, operand(c)?);
    }
    Ok(lhs)
}

/// Rust operators that the DSL writes as methods.
fn refuse_operator(c: &Cursor<'_>) -> Result<(), Diagnostic> {
    let hint = match c.peek().map(|t| &t.tok) {
        Some(Tok::Punct("==")) => "`.eq(..)`",
        Some(Tok::Punct("!=")) => "`.ne(..)`",
        Some(Tok::Punct("<")) => "`.lt(..)`",
        Some(Tok::Punct("<=")) => "`.le(..)`",
        Some(Tok::Punct(">")) => "`.gt(..)`",
        Some(Tok::Punct(">=")) => "`.ge(..)`",
        Some(Tok::Punct("&&")) => "`.and(..)`",
        Some(Tok::Punct("||")) => "`.or(..)`",
        _ => return Ok(()),
    };
    Err(Diagnostic::new(
        format!("SQL comparisons and logic are methods in tandem: write {hint}"),
        c.here(),
    ))
}

fn unary(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let start = c.here();
    if c.eat_punct("-") {
        c.descend()?;
        let inner = unary(c);
        c.ascend();
        let inner = inner?;
        let span = start.to(inner.span());
        return Ok(Expr::Neg(Box::new(inner), span));
    }
    if c.is_punct("!") {
        return Err(Diagnostic::new(
            "SQL NOT is a method in tandem: write `.not()` after the condition",
            start,
        ));
    }
    if c.eat_punct("&") {
        // References change nothing here: `&users::table`, `&[1, 2]`.
        c.eat_ident("mut");
        return unary(c);
    }
    postfix(c)
}

fn postfix(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let mut e = primary(c)?;
    let mut chained = 0usize;
    while c.eat_punct(".") {
        chained += 1;
        if chained > 4 * super::cursor::MAX_DEPTH {
            return Err(Diagnostic::new("this method chain is too long", c.here()));
        }
        if let Some(Token {
            tok: Tok::Int { .. },
            span,
        }) = c.peek()
        {
            return Err(Diagnostic::new(
                "tuple fields are not part of the DSL",
                *span,
            ));
        }
        let (name, nspan) = c.ident("a method name after `.`")?;
        if name == "await" {
            return Err(Diagnostic::new(
                "the playground renders and runs queries itself: drop `.await`",
                nspan,
            ));
        }
        if c.eat_punct("::") {
            if c.is_punct("<") {
                c.skip_generics()?;
            } else {
                return Err(c.unexpected("`<` after `::`"));
            }
        }
        if !c.is_punct("(") {
            return Err(Diagnostic::new(
                format!("`{name}` is not a field: call it as a method, `.{name}(..)`"),
                nspan,
            ));
        }
        let args = arguments(c, "(", ")")?;
        let span = e.span().to(c.last());
        e = Expr::Method {
            recv: Box::new(e),
            method: Name { name, span: nspan },
            args,
            span,
        };
    }
    if c.is_punct("?") {
        return Err(Diagnostic::new(
            "the playground shows errors itself: drop `?`",
            c.here(),
        ));
    }
    Ok(e)
}

/// `open a, b, … close` (a trailing comma allowed).
fn arguments(c: &mut Cursor<'_>, open: &str, close: &str) -> Result<Vec<Expr>, Diagnostic> {
    c.expect_punct(open, "")?;
    c.descend()?;
    let mut args = Vec::new();
    while !c.eat_punct(close) {
        if c.at_end() {
            c.ascend();
            return Err(c.unexpected(&format!("`{close}`")));
        }
        args.push(expression(c)?);
        if !c.eat_punct(",") && !c.is_punct(close) {
            c.ascend();
            return Err(c.unexpected(&format!("`,` or `{close}`")));
        }
    }
    c.ascend();
    Ok(args)
}

fn primary(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let Some(t) = c.peek() else {
        return Err(c.unexpected("an expression"));
    };
    let span = t.span;
    match &t.tok {
        Tok::Int { value, suffix } => {
            c.next();
            Ok(Expr::Lit(Lit::Int(*value, suffix.clone()), span))
        }
        Tok::Float { value, suffix } => {
            c.next();
            Ok(Expr::Lit(Lit::Float(*value, suffix.clone()), span))
        }
        Tok::Str(s) => {
            c.next();
            Ok(Expr::Lit(Lit::Str(s.clone()), span))
        }
        Tok::Bytes(b) => {
            c.next();
            Ok(Expr::Lit(Lit::Bytes(b.clone()), span))
        }
        Tok::Punct("(") => {
            let items = arguments(c, "(", ")")?;
            let whole = span.to(c.last());
            // `(e)` is a parenthesised expression, `(e,)` and `(a, b)` are tuples.
            if items.len() == 1 && !c.before_last_is_punct(",") {
                return Ok(items
                    .into_iter()
                    .next()
                    .unwrap_or(Expr::Tuple(Vec::new(), whole)));
            }
            Ok(Expr::Tuple(items, whole))
        }
        Tok::Punct("[") => {
            let items = arguments(c, "[", "]")?;
            Ok(Expr::Array(items, span.to(c.last())))
        }
        Tok::Ident(word) if word == "true" || word == "false" => {
            c.next();
            Ok(Expr::Lit(Lit::Bool(word == "true"), span))
        }
        Tok::Ident(word)
            if word == "vec" && matches!(c.peek_at(1).map(|t| &t.tok), Some(Tok::Punct("!"))) =>
        {
            c.next();
            c.next();
            let items = arguments(c, "[", "]")?;
            Ok(Expr::Array(items, span.to(c.last())))
        }
        Tok::Ident(_) => path_or_call(c),
        other => Err(Diagnostic::new(
            format!(
                "expected an expression, found {}",
                super::cursor::describe(other)
            ),
            span,
        )),
    }
}

fn path_or_call(c: &mut Cursor<'_>) -> Result<Expr, Diagnostic> {
    let mut segs = Vec::new();
    loop {
        let (name, span) = c.ident("a name")?;
        segs.push(Name { name, span });
        if !c.eat_punct("::") {
            break;
        }
        if c.is_punct("<") {
            c.skip_generics()?;
            if !c.eat_punct("::") {
                break;
            }
        }
    }
    if c.is_punct("!") {
        return Err(Diagnostic::new(
            "macros other than `vec![..]` are not part of the DSL",
            c.here(),
        ));
    }
    let start = segs[0].span;
    if c.is_punct("(") {
        let args = arguments(c, "(", ")")?;
        return Ok(Expr::Call {
            func: segs,
            args,
            span: start.to(c.last()),
        });
    }
    if c.is_punct("{") {
        return Err(Diagnostic::new(
            "struct literals are not part of the playground: insert with `.columns(..).values(..)`",
            c.here(),
        ));
    }
    let span = start.to(segs.last().map_or(start, |s| s.span));
    Ok(Expr::Path(segs, span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::refused;

    fn method_names(e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        let mut e = e;
        while let Expr::Method { recv, method, .. } = e {
            out.push(method.name.clone());
            e = recv;
        }
        out.reverse();
        out
    }

    /// A query from the README parses into its chain, with spans into the text.
    #[test]
    fn readme_query() {
        let src = "let adults = users::table\n    .select((users::id, users::name))\n    .filter(users::age.ge(18).and(users::email.is_not_null()))\n    .order_by(users::name.asc())\n    .limit(10);";
        let e = parse_query(src).unwrap();
        assert_eq!(method_names(&e), ["select", "filter", "order_by", "limit"]);
        let Expr::Method { args, .. } = &e else {
            panic!()
        };
        assert_eq!(
            args,
            &[Expr::Lit(
                Lit::Int(10, None),
                Span::new(src.len() - 4, src.len() - 2)
            )]
        );
        assert_eq!(&src[e.span().start..e.span().end], &src[13..src.len() - 1]);
    }

    /// Tuples, parentheses, arrays, turbofish, arithmetic precedence, negation.
    #[test]
    fn shapes() {
        let t = parse_query("(users::id,)").unwrap();
        assert!(matches!(t, Expr::Tuple(ref v, _) if v.len() == 1));
        let p = parse_query("(users::id)").unwrap();
        assert!(matches!(p, Expr::Path(..)));
        let a = parse_query("x.in_list(vec![1, 2, 3])").unwrap();
        let Expr::Method { args, .. } = a else {
            panic!()
        };
        assert!(matches!(&args[0], Expr::Array(v, _) if v.len() == 3));
        assert!(matches!(
            parse_query("x.in_list(&[1, 2])").unwrap(),
            Expr::Method { .. }
        ));
        let n = parse_query("None::<String>").unwrap();
        assert!(matches!(n, Expr::Path(ref s, _) if s.len() == 1 && s[0].name == "None"));
        let e = parse_query("users::age + 1 * 2").unwrap();
        let Expr::Arith {
            op: ArithOp::Add,
            rhs,
            ..
        } = e
        else {
            panic!()
        };
        assert!(matches!(
            *rhs,
            Expr::Arith {
                op: ArithOp::Mul,
                ..
            }
        ));
        assert!(matches!(parse_query("-users::age").unwrap(), Expr::Neg(..)));
    }

    /// Rust that is not the DSL gets an error that says what to write instead, at the right spot.
    #[test]
    fn helpful_errors() {
        let e = parse_query("users::table.filter(users::age == 3)").unwrap_err();
        assert!(e.message.contains(".eq("), "{}", e.message);
        assert_eq!(e.span, Span::new(31, 33));
        refused(parse_query("users::table.filter(!x)"), ".not()");
        refused(parse_query("users::table.filter(a && b)"), ".and(");
        refused(parse_query("users::table.name"), "not a field");
        assert!(parse_query("users::table.select_all().await").is_err());
        refused(
            parse_query("users::table.select_all()."),
            "end of the input",
        );
        let open = parse_query("users::table.select(").unwrap_err();
        assert_eq!(
            (open.span, open.message.as_str()),
            (Span::new(19, 20), "this `(` is never closed: add `)`")
        );
        refused(parse_query("a; b"), "one statement");
        assert!(parse_query("").is_err());
        assert!(parse_query("   // only a comment").is_err());
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        refused(parse_query(&deep), "nested");
        let long = format!("x{}", ".a()".repeat(10_000));
        assert!(parse_query(&long).is_err());
        refused(
            parse_query(&"a".repeat(super::super::MAX_INPUT + 1)),
            "at most",
        );
    }
}
