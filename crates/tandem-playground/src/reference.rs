//! The DSL as the playground reads it: every function and method, what it is called on, its shape, one
//! line of what it does, and the book chapter that teaches it. The evaluator's "no such method" errors
//! list their names from here, the page's reference panel and completion show it, and a test proves that
//! the evaluator knows every name listed.

/// What a method is called on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum On {
    /// A free function: `count_star()`, `exists(..)`.
    Function,
    /// A table marker: `users::table`.
    Table,
    /// A query: `users::table.select_all()`.
    Query,
    /// A typed expression: a column, a literal, a computed value.
    Expression,
    /// An INSERT being built.
    Insert,
    /// An UPDATE being built.
    Update,
    /// A DELETE being built.
    Delete,
}

impl On {
    /// Every receiver, in the order the reference shows them.
    pub const ALL: [On; 7] = [
        On::Table,
        On::Query,
        On::Expression,
        On::Function,
        On::Insert,
        On::Update,
        On::Delete,
    ];

    /// Its one-word name, as the page's completion reads it.
    pub fn key(self) -> &'static str {
        match self {
            On::Function => "function",
            On::Table => "table",
            On::Query => "query",
            On::Expression => "expression",
            On::Insert => "insert",
            On::Update => "update",
            On::Delete => "delete",
        }
    }

    /// The heading the reference shows.
    pub fn title(self) -> &'static str {
        match self {
            On::Function => "functions",
            On::Table => "on a table (users::table)",
            On::Query => "on a query",
            On::Expression => "on an expression (a column, a value)",
            On::Insert => "on an insert",
            On::Update => "on an update",
            On::Delete => "on a delete",
        }
    }
}

/// One function or method.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// What it is called on.
    pub on: On,
    /// Its name.
    pub name: &'static str,
    /// How it is called.
    pub call: &'static str,
    /// What it does, in one line.
    pub doc: &'static str,
    /// The book chapter that teaches it (a page of the book).
    pub chapter: &'static str,
}

const fn e(
    on: On,
    name: &'static str,
    call: &'static str,
    doc: &'static str,
    chapter: &'static str,
) -> Entry {
    Entry {
        on,
        name,
        call,
        doc,
        chapter,
    }
}

const TABLES: &str = "01-tables.html";
const EXPRESSIONS: &str = "02-expressions.html";
const DIALECTS: &str = "03-dialects.html";
const REPOSITORIES: &str = "05-repositories.html";

use On::*;

/// The whole DSL the playground reads.
pub const ENTRIES: &[Entry] = &[
    e(
        Table,
        "select_all",
        "users::table.select_all()",
        "SELECT every column",
        TABLES,
    ),
    e(
        Table,
        "select",
        "users::table.select((users::name, users::age))",
        "SELECT these items (one, or a tuple of up to 8)",
        EXPRESSIONS,
    ),
    e(
        Table,
        "filter",
        "users::table.filter(users::age.ge(18))",
        "SELECT * with a WHERE condition",
        EXPRESSIONS,
    ),
    e(
        Table,
        "inner_join",
        "users::table.inner_join(orders::table, orders::user_id.eq(users::id))",
        "join another table ON a condition",
        EXPRESSIONS,
    ),
    e(
        Table,
        "left_join",
        "users::table.left_join(orders::table, orders::user_id.eq(users::id))",
        "join, keeping rows without a match (their columns NULL)",
        EXPRESSIONS,
    ),
    e(
        Table,
        "insert",
        "users::table.insert()",
        "start an INSERT into this table",
        REPOSITORIES,
    ),
    e(
        Table,
        "update",
        "users::table.update()",
        "start an UPDATE of this table",
        REPOSITORIES,
    ),
    e(
        Table,
        "delete",
        "users::table.delete()",
        "start a DELETE from this table",
        REPOSITORIES,
    ),
    e(
        Table,
        "create_table",
        "users::table.create_table()",
        "CREATE TABLE IF NOT EXISTS, with its indexes",
        TABLES,
    ),
    e(
        Table,
        "drop_table",
        "users::table.drop_table()",
        "DROP TABLE IF EXISTS",
        TABLES,
    ),
    e(
        Query,
        "select",
        ".select((users::name, count_star()))",
        "choose the select list",
        EXPRESSIONS,
    ),
    e(
        Query,
        "filter",
        ".filter(users::age.ge(18))",
        "add a WHERE condition (AND with earlier ones)",
        EXPRESSIONS,
    ),
    e(
        Query,
        "inner_join",
        ".inner_join(orders::table, orders::user_id.eq(users::id))",
        "join another table",
        EXPRESSIONS,
    ),
    e(
        Query,
        "left_join",
        ".left_join(orders::table, orders::user_id.eq(users::id))",
        "join, keeping rows without a match",
        EXPRESSIONS,
    ),
    e(
        Query,
        "correlated_with",
        ".correlated_with(users::table)",
        "a subquery that reads the outer query's table",
        EXPRESSIONS,
    ),
    e(
        Query,
        "order_by",
        ".order_by(users::age.desc())",
        "ORDER BY (one item or a tuple)",
        EXPRESSIONS,
    ),
    e(
        Query,
        "group_by",
        ".group_by(users::name)",
        "GROUP BY (one item or a tuple)",
        EXPRESSIONS,
    ),
    e(
        Query,
        "having",
        ".having(count_star().gt(1))",
        "a condition on groups",
        EXPRESSIONS,
    ),
    e(
        Query,
        "distinct",
        ".distinct()",
        "SELECT DISTINCT",
        EXPRESSIONS,
    ),
    e(
        Query,
        "limit",
        ".limit(10)",
        "at most this many rows",
        DIALECTS,
    ),
    e(
        Query,
        "offset",
        ".offset(20)",
        "skip this many rows (with limit)",
        DIALECTS,
    ),
    e(
        Expression,
        "eq",
        "users::age.eq(18)",
        "= (a NULL never equals: use is_null)",
        EXPRESSIONS,
    ),
    e(Expression, "ne", "users::age.ne(18)", "<>", EXPRESSIONS),
    e(Expression, "lt", "users::age.lt(18)", "<", EXPRESSIONS),
    e(Expression, "le", "users::age.le(18)", "<=", EXPRESSIONS),
    e(Expression, "gt", "users::age.gt(18)", ">", EXPRESSIONS),
    e(Expression, "ge", "users::age.ge(18)", ">=", EXPRESSIONS),
    e(
        Expression,
        "is_null",
        "users::email.is_null()",
        "IS NULL",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "is_not_null",
        "users::email.is_not_null()",
        "IS NOT NULL",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "in_list",
        "users::age.in_list([17, 25])",
        "IN (a list of values)",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "in_subquery",
        "users::id.in_subquery(orders::table.select(orders::user_id))",
        "IN (a one-column subquery)",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "between",
        "users::age.between(18, 30)",
        "BETWEEN low AND high, both included",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "like",
        "users::name.like(\"a%\")",
        "LIKE a pattern (% any run, _ one character), case-sensitive",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "and",
        "users::age.ge(18).and(users::email.is_not_null())",
        "both conditions",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "or",
        "users::age.lt(18).or(users::age.gt(65))",
        "either condition",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "not",
        "users::email.is_null().not()",
        "NOT a condition",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "asc",
        "users::age.asc()",
        "ascending, for order_by",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "desc",
        "users::age.desc()",
        "descending, for order_by",
        EXPRESSIONS,
    ),
    e(
        Expression,
        "alias",
        "avg(users::age).alias(\"mean_age\")",
        "name a select item (AS)",
        EXPRESSIONS,
    ),
    e(
        Function,
        "count_star",
        "count_star()",
        "COUNT(*): rows",
        EXPRESSIONS,
    ),
    e(
        Function,
        "count",
        "count(users::email)",
        "COUNT(expr): rows where it is not NULL",
        EXPRESSIONS,
    ),
    e(
        Function,
        "count_distinct",
        "count_distinct(users::age)",
        "COUNT(DISTINCT expr)",
        EXPRESSIONS,
    ),
    e(
        Function,
        "sum",
        "sum(orders::total)",
        "SUM of a number column (NULL over no rows)",
        EXPRESSIONS,
    ),
    e(
        Function,
        "avg",
        "avg(users::age)",
        "AVG, always a float",
        EXPRESSIONS,
    ),
    e(Function, "min", "min(users::age)", "MIN", EXPRESSIONS),
    e(Function, "max", "max(users::age)", "MAX", EXPRESSIONS),
    e(
        Function,
        "upper",
        "upper(users::name)",
        "UPPER of text",
        EXPRESSIONS,
    ),
    e(
        Function,
        "lower",
        "lower(users::name)",
        "LOWER of text",
        EXPRESSIONS,
    ),
    e(
        Function,
        "length",
        "length(users::name)",
        "LENGTH of text, in characters",
        EXPRESSIONS,
    ),
    e(
        Function,
        "coalesce",
        "coalesce(users::email, \"none\")",
        "the first value that is not NULL",
        EXPRESSIONS,
    ),
    e(
        Function,
        "exists",
        "exists(orders::table.select_all().correlated_with(users::table).filter(..))",
        "EXISTS (a subquery)",
        EXPRESSIONS,
    ),
    e(
        Function,
        "not_exists",
        "not_exists(orders::table.select_all().correlated_with(users::table).filter(..))",
        "NOT EXISTS (a subquery)",
        EXPRESSIONS,
    ),
    e(
        Function,
        "insert_into",
        "insert_into(users::table)",
        "start an INSERT (as users::table.insert())",
        REPOSITORIES,
    ),
    e(
        Function,
        "update",
        "update(users::table)",
        "start an UPDATE (as users::table.update())",
        REPOSITORIES,
    ),
    e(
        Function,
        "delete_from",
        "delete_from(users::table)",
        "start a DELETE (as users::table.delete())",
        REPOSITORIES,
    ),
    e(
        Insert,
        "columns",
        ".columns((users::name, users::age))",
        "the columns the values go to",
        REPOSITORIES,
    ),
    e(
        Insert,
        "values",
        ".values((\"ada\", 36))",
        "one row of values, in column order",
        REPOSITORIES,
    ),
    e(
        Insert,
        "rows",
        ".rows([(\"ada\", 36), (\"bob\", 17)])",
        "several rows of values",
        REPOSITORIES,
    ),
    e(
        Insert,
        "on_conflict_do_nothing",
        ".on_conflict_do_nothing()",
        "skip a row that collides with a unique key",
        DIALECTS,
    ),
    e(
        Insert,
        "on_conflict_update",
        ".on_conflict_update(users::name, users::age)",
        "upsert: on a collision with the first column(s), set the second to the inserted values",
        DIALECTS,
    ),
    e(
        Insert,
        "returning",
        ".returning(users::id)",
        "the generated key back (MySQL: LAST_INSERT_ID())",
        DIALECTS,
    ),
    e(
        Update,
        "set",
        ".set(users::age, 37)",
        "SET a column to a value or an expression",
        REPOSITORIES,
    ),
    e(
        Update,
        "filter",
        ".filter(users::id.eq(1))",
        "which rows (without it: every row)",
        REPOSITORIES,
    ),
    e(
        Delete,
        "filter",
        ".filter(users::id.eq(1))",
        "which rows (without it: every row)",
        REPOSITORIES,
    ),
];

/// The error for a method that `on` does not have, at the method's name, listing those it has.
pub fn no_method(on: On, method: &str, at: crate::syntax::Span) -> crate::syntax::Diagnostic {
    let these = match on {
        On::Function => "functions",
        On::Table => "table markers",
        On::Query => "queries",
        On::Expression => "expressions",
        On::Insert => "inserts",
        On::Update => "updates",
        On::Delete => "deletes",
    };
    crate::syntax::Diagnostic::new(
        format!("{these} have no method `{method}` ({})", names(on)),
        at,
    )
}

/// The names callable on `on`, comma-separated, as errors list them.
pub fn names(on: On) -> String {
    ENTRIES
        .iter()
        .filter(|e| e.on == on)
        .map(|e| e.name)
        .collect::<Vec<_>>()
        .join(", ")
}
