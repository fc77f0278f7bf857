//! Stage 3 — dialects and parameters: the reference solution.

use std::fmt;
use std::marker::PhantomData;

use expressions::{Condition, Expr, RenderError, Sql};
use tables::{Column, Dialect, SqlValue, Table, Value};

// ANCHOR: statement
/// A statement ready for a driver: the SQL text, its parameters, and how the keys it generates come back.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The SQL text, with the dialect's placeholders.
    pub sql: String,
    /// The values, in placeholder order.
    pub params: Vec<Value>,
    /// For an INSERT asked for its keys: where they come from.
    pub key: GeneratedKey,
}

/// Where an INSERT's generated keys come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeneratedKey {
    /// Nowhere: nobody asked.
    #[default]
    None,
    /// The statement returns them as rows (`RETURNING "id"`): run it as a query.
    Returning,
    /// The connection's last insert id, read after the statement (MySQL has no `RETURNING`).
    LastInsertId,
}

/// Why a statement cannot be rendered.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The WHERE clause cannot be rendered.
    Expr(RenderError),
    /// An INSERT with no rows.
    EmptyBatch {
        /// The table.
        table: &'static str,
    },
    /// A list that must not be empty is (the INSERT columns, an UPDATE's SET, an upsert's SET).
    Empty {
        /// Which list.
        what: &'static str,
    },
    /// More bind parameters than the engine accepts in one statement.
    TooManyParameters {
        /// The engine.
        dialect: Dialect,
        /// How many the statement needs.
        count: usize,
        /// How many the engine takes.
        limit: usize,
    },
    /// A row with another number of values than the INSERT has columns.
    RowWidth {
        /// The row's index.
        row: usize,
        /// The number of columns.
        expected: usize,
        /// The number of values in the row.
        found: usize,
    },
    /// A column the table does not have.
    UnknownColumn {
        /// The table.
        table: &'static str,
        /// The name given.
        column: &'static str,
    },
    /// Something this dialect cannot say.
    Unsupported {
        /// The engine.
        dialect: Dialect,
        /// What it cannot say.
        feature: &'static str,
    },
}

impl From<RenderError> for Error {
    fn from(e: RenderError) -> Error {
        Error::Expr(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Expr(e) => e.fmt(f),
            Error::EmptyBatch { table } => write!(f, "an INSERT into {table} with no rows"),
            Error::Empty { what } => write!(f, "the {what} is empty"),
            Error::TooManyParameters {
                dialect,
                count,
                limit,
            } => write!(
                f,
                "{count} parameters in one statement; {dialect} takes at most {limit}"
            ),
            Error::RowWidth {
                row,
                expected,
                found,
            } => write!(f, "row {row} has {found} values for {expected} columns"),
            Error::UnknownColumn { table, column } => {
                write!(f, "table {table} has no column {column:?}")
            }
            Error::Unsupported { dialect, feature } => write!(f, "{dialect} cannot say {feature}"),
        }
    }
}

impl std::error::Error for Error {}
// ANCHOR_END: statement

// ANCHOR: limits
/// The most bind parameters one statement may carry: 32,766 on SQLite (its default
/// `SQLITE_MAX_VARIABLE_NUMBER` since 3.32), 65,535 on PostgreSQL and MySQL (their protocols count
/// parameters in 16 bits).
pub fn param_limit(dialect: Dialect) -> usize {
    match dialect {
        Dialect::Sqlite => 32_766,
        Dialect::Postgres | Dialect::MySql => 65_535,
    }
}

/// Hands the written statement out, or refuses it when it needs more parameters than the engine takes.
fn finish(out: Sql, key: GeneratedKey) -> Result<Statement, Error> {
    let limit = param_limit(out.dialect());
    if out.params.len() > limit {
        return Err(Error::TooManyParameters {
            dialect: out.dialect(),
            count: out.params.len(),
            limit,
        });
    }
    Ok(Statement {
        sql: out.text,
        params: out.params,
        key,
    })
}
// ANCHOR_END: limits

/// A column of `T` as `"table"."column"`.
fn column_expr<T: Table>(column: &'static str) -> Expr {
    Expr::Column {
        table: T::NAME,
        column,
    }
}

/// The names of `T`'s columns, in declaration order.
fn column_names<T: Table>() -> Vec<&'static str> {
    T::schema().columns.iter().map(|c| c.name).collect()
}

/// The name of `T`'s key (the first column when it declares none).
fn key_name<T: Table>() -> &'static str {
    let schema = T::schema();
    schema
        .primary_key()
        .or(schema.columns.first())
        .map_or("id", |c| c.name)
}

// ANCHOR: select
/// The direction of an ORDER BY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Smallest first.
    Asc,
    /// Largest first.
    Desc,
}

/// `SELECT` every column of `T`, with an optional filter, order, limit and offset.
#[derive(Clone, Debug)]
pub struct Select<T: Table> {
    filter: Option<Condition<T>>,
    order_by: Vec<(&'static str, Order)>,
    limit: Option<u64>,
    offset: Option<u64>,
}

impl<T: Table> Select<T> {
    /// Every row of `table`, every column in declaration order.
    pub fn from(_table: T) -> Select<T> {
        Select {
            filter: None,
            order_by: Vec::new(),
            limit: None,
            offset: None,
        }
    }

    /// Keeps the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Select<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// Orders by `column` (after earlier orderings).
    pub fn order_by<C: Column<Table = T>>(mut self, _column: C, order: Order) -> Select<T> {
        self.order_by.push((C::NAME, order));
        self
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: u64) -> Select<T> {
        self.limit = Some(n);
        self
    }

    /// Skips the first `n` rows.
    pub fn offset(mut self, n: u64) -> Select<T> {
        self.offset = Some(n);
        self
    }
    // ANCHOR_END: select

    // ANCHOR: render_select
    /// `SELECT "t"."a", "t"."b" FROM "t"[ WHERE …][ ORDER BY …][ LIMIT ?][ OFFSET ?]` for `dialect`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        let mut out = Sql::new(dialect);
        out.push("SELECT ");
        for (i, name) in column_names::<T>().into_iter().enumerate() {
            if i > 0 {
                out.push(", ");
            }
            column_expr::<T>(name).render(&mut out)?;
        }
        out.push(" FROM ");
        out.ident(T::NAME);
        if let Some(f) = &self.filter {
            out.push(" WHERE ");
            f.expr().render(&mut out)?;
        }
        for (i, (name, order)) in self.order_by.iter().enumerate() {
            out.push(if i == 0 { " ORDER BY " } else { ", " });
            column_expr::<T>(name).render(&mut out)?;
            out.push(match order {
                Order::Asc => " ASC",
                Order::Desc => " DESC",
            });
        }
        limit_offset(&mut out, self.limit, self.offset);
        finish(out, GeneratedKey::None)
    }
}

/// `LIMIT ? OFFSET ?`, both bound as 64-bit integers. An OFFSET needs a LIMIT before it on SQLite (`-1`:
/// no limit) and MySQL (the largest unsigned 64-bit number, as its manual suggests); PostgreSQL takes
/// OFFSET alone.
fn limit_offset(out: &mut Sql, limit: Option<u64>, offset: Option<u64>) {
    let bound = |n: u64| Value::I64(n.min(i64::MAX as u64) as i64);
    match (limit, offset, out.dialect()) {
        (Some(n), _, _) => {
            out.push(" LIMIT ");
            out.param(bound(n));
        }
        (None, Some(_), Dialect::Sqlite) => out.push(" LIMIT -1"),
        (None, Some(_), Dialect::MySql) => out.push(" LIMIT 18446744073709551615"),
        (None, _, _) => {}
    }
    if let Some(n) = offset {
        out.push(" OFFSET ");
        out.param(bound(n));
    }
}
// ANCHOR_END: render_select

// ANCHOR: insert
/// What an INSERT does with a row whose key already exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// Fail (the default).
    Fail,
    /// Skip the row.
    Ignore,
    /// Update these columns of the existing row with the new row's values (an upsert).
    Update(Vec<&'static str>),
}

/// `INSERT INTO T (columns…) VALUES (…), (…)`, with conflict handling and generated keys.
#[derive(Clone, Debug)]
pub struct Insert<T: Table> {
    columns: Vec<&'static str>,
    rows: Vec<Vec<Value>>,
    conflict: OnConflict,
    returning_key: bool,
    table: PhantomData<T>,
}

impl<T: Table> Insert<T> {
    /// An INSERT of `columns` into `table`, with no rows yet.
    pub fn into(_table: T, columns: Vec<&'static str>) -> Insert<T> {
        Insert {
            columns,
            rows: Vec::new(),
            conflict: OnConflict::Fail,
            returning_key: false,
            table: PhantomData,
        }
    }

    /// One more row: a value per column, in the columns' order.
    pub fn row(mut self, values: Vec<Value>) -> Insert<T> {
        self.rows.push(values);
        self
    }

    /// What to do with rows whose key exists.
    pub fn on_conflict(mut self, conflict: OnConflict) -> Insert<T> {
        self.conflict = conflict;
        self
    }

    /// Asks for the generated keys.
    pub fn returning_key(mut self) -> Insert<T> {
        self.returning_key = true;
        self
    }
    // ANCHOR_END: insert

    // ANCHOR: render_insert
    /// The statement for `dialect`; more parameters than the engine takes is an error (see
    /// [`Insert::render_chunks`]).
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        self.check()?;
        if self.rows.is_empty() {
            return Err(Error::EmptyBatch { table: T::NAME });
        }
        self.render_rows(dialect, &self.rows)
    }

    /// The rows split into as few statements as the engine's parameter limit allows, each a full INSERT
    /// with the same columns, conflict handling and keys; every row once, in order.
    pub fn render_chunks(&self, dialect: Dialect) -> Result<Vec<Statement>, Error> {
        self.check()?;
        if self.rows.is_empty() {
            return Err(Error::EmptyBatch { table: T::NAME });
        }
        let limit = param_limit(dialect);
        let per = limit / self.columns.len();
        if per == 0 {
            return Err(Error::TooManyParameters {
                dialect,
                count: self.columns.len(),
                limit,
            });
        }
        self.rows
            .chunks(per)
            .map(|rows| self.render_rows(dialect, rows))
            .collect()
    }

    /// Columns known, none missing, every row as wide as the column list.
    fn check(&self) -> Result<(), Error> {
        if self.columns.is_empty() {
            return Err(Error::Empty {
                what: "INSERT column list",
            });
        }
        let known = column_names::<T>();
        let unknown = self.columns.iter().chain(match &self.conflict {
            OnConflict::Update(set) => set.iter(),
            _ => [].iter(),
        });
        for c in unknown {
            if !known.contains(c) {
                return Err(Error::UnknownColumn {
                    table: T::NAME,
                    column: c,
                });
            }
        }
        for (row, values) in self.rows.iter().enumerate() {
            if values.len() != self.columns.len() {
                return Err(Error::RowWidth {
                    row,
                    expected: self.columns.len(),
                    found: values.len(),
                });
            }
        }
        Ok(())
    }

    fn render_rows(&self, dialect: Dialect, rows: &[Vec<Value>]) -> Result<Statement, Error> {
        let limit = param_limit(dialect);
        let count = rows.len() * self.columns.len();
        if count > limit {
            return Err(Error::TooManyParameters {
                dialect,
                count,
                limit,
            });
        }
        let key = match (self.returning_key, dialect) {
            (false, _) => GeneratedKey::None,
            (true, Dialect::Sqlite | Dialect::Postgres) => GeneratedKey::Returning,
            (true, Dialect::MySql) if self.conflict != OnConflict::Fail => {
                return Err(Error::Unsupported {
                    dialect,
                    feature: "the keys of an INSERT that skips or updates rows (LAST_INSERT_ID is not theirs)",
                });
            }
            (true, Dialect::MySql) if rows.len() > 1 => {
                return Err(Error::Unsupported {
                    dialect,
                    feature: "the keys of a multi-row INSERT (LAST_INSERT_ID gives only the first)",
                });
            }
            (true, Dialect::MySql) => GeneratedKey::LastInsertId,
        };
        let mut out = Sql::new(dialect);
        out.push("INSERT INTO ");
        out.ident(T::NAME);
        out.push(" (");
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(", ");
            }
            out.ident(c);
        }
        out.push(") VALUES ");
        for (r, row) in rows.iter().enumerate() {
            out.push(if r == 0 { "(" } else { ", (" });
            for (i, v) in row.iter().enumerate() {
                if i > 0 {
                    out.push(", ");
                }
                out.param(v.clone());
            }
            out.push(")");
        }
        conflict_clause::<T>(&mut out, &self.conflict)?;
        if key == GeneratedKey::Returning {
            out.push(" RETURNING ");
            out.ident(key_name::<T>());
        }
        finish(out, key)
    }
}

/// ` ON CONFLICT ("key") DO NOTHING | DO UPDATE SET "c" = EXCLUDED."c"` on SQLite and PostgreSQL,
/// ` ON DUPLICATE KEY UPDATE …` on MySQL, which has no ON CONFLICT.
fn conflict_clause<T: Table>(out: &mut Sql, conflict: &OnConflict) -> Result<(), Error> {
    let key = key_name::<T>();
    match (conflict, out.dialect()) {
        (OnConflict::Fail, _) => {}
        (OnConflict::Update(set), _) if set.is_empty() => {
            return Err(Error::Empty {
                what: "upsert SET list",
            });
        }
        // Not `INSERT IGNORE`: that also turns a too-long string or a bad value into a warning and stores
        // something else. Setting the key to itself skips the duplicate and nothing more.
        (OnConflict::Ignore, Dialect::MySql) => {
            out.push(" ON DUPLICATE KEY UPDATE ");
            out.ident(key);
            out.push(" = ");
            out.ident(key);
        }
        (OnConflict::Update(set), Dialect::MySql) => {
            out.push(" ON DUPLICATE KEY UPDATE ");
            for (i, c) in set.iter().enumerate() {
                if i > 0 {
                    out.push(", ");
                }
                out.ident(c);
                out.push(" = VALUES(");
                out.ident(c);
                out.push(")");
            }
        }
        (OnConflict::Ignore, _) => {
            out.push(" ON CONFLICT (");
            out.ident(key);
            out.push(") DO NOTHING");
        }
        (OnConflict::Update(set), _) => {
            out.push(" ON CONFLICT (");
            out.ident(key);
            out.push(") DO UPDATE SET ");
            for (i, c) in set.iter().enumerate() {
                if i > 0 {
                    out.push(", ");
                }
                out.ident(c);
                out.push(" = EXCLUDED.");
                out.ident(c);
            }
        }
    }
    Ok(())
}
// ANCHOR_END: render_insert

// ANCHOR: write
/// Column types that can be added to: `Update::add` is only for them.
pub trait Numeric: SqlValue {}
impl Numeric for i32 {}
impl Numeric for i64 {}
impl Numeric for f64 {}

/// What an UPDATE sets a column to.
#[derive(Clone, Debug)]
enum SetTo {
    /// A value.
    Value(Value),
    /// The column's own value plus this one.
    Add(Value),
}

/// `UPDATE T SET … WHERE …`.
#[derive(Clone, Debug)]
pub struct Update<T: Table> {
    set: Vec<(&'static str, SetTo)>,
    filter: Option<Condition<T>>,
}

impl<T: Table> Update<T> {
    /// An UPDATE of `table`, with nothing set yet.
    pub fn table(_table: T) -> Update<T> {
        Update {
            set: Vec::new(),
            filter: None,
        }
    }

    /// `SET column = value`.
    pub fn set<C: Column<Table = T>>(mut self, _column: C, value: impl Into<C::Type>) -> Update<T> {
        self.set
            .push((C::NAME, SetTo::Value(value.into().to_value())));
        self
    }

    /// `SET name = value` by the column's name, for code that knows its columns only at run time (a
    /// repository over any entity); a name the table lacks is `Error::UnknownColumn` when rendered.
    pub fn set_column(mut self, name: &'static str, value: Value) -> Update<T> {
        self.set.push((name, SetTo::Value(value)));
        self
    }

    /// `SET column = column + delta`: computed by the database, so that two transactions adding at once
    /// both count.
    pub fn add<C: Column<Table = T>>(mut self, _column: C, delta: C::Type) -> Update<T>
    where
        C::Type: Numeric,
    {
        self.set.push((C::NAME, SetTo::Add(delta.to_value())));
        self
    }

    /// Changes only the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Update<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// `UPDATE "t" SET "a" = ?, "b" = "t"."b" + ?[ WHERE …]`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        if self.set.is_empty() {
            return Err(Error::Empty {
                what: "UPDATE SET list",
            });
        }
        let known = column_names::<T>();
        if let Some((name, _)) = self.set.iter().find(|(name, _)| !known.contains(name)) {
            return Err(Error::UnknownColumn {
                table: T::NAME,
                column: name,
            });
        }
        let mut out = Sql::new(dialect);
        out.push("UPDATE ");
        out.ident(T::NAME);
        out.push(" SET ");
        for (i, (name, value)) in self.set.iter().enumerate() {
            if i > 0 {
                out.push(", ");
            }
            out.ident(name);
            out.push(" = ");
            match value {
                SetTo::Value(v) => out.param(v.clone()),
                SetTo::Add(v) => {
                    column_expr::<T>(name).render(&mut out)?;
                    out.push(" + ");
                    out.param(v.clone());
                }
            }
        }
        if let Some(f) = &self.filter {
            out.push(" WHERE ");
            f.expr().render(&mut out)?;
        }
        finish(out, GeneratedKey::None)
    }
}

/// `DELETE FROM T WHERE …`.
#[derive(Clone, Debug)]
pub struct Delete<T: Table> {
    filter: Option<Condition<T>>,
}

impl<T: Table> Delete<T> {
    /// A DELETE of every row of `table`, until filtered.
    pub fn from(_table: T) -> Delete<T> {
        Delete { filter: None }
    }

    /// Deletes only the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Delete<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// `DELETE FROM "t"[ WHERE …]`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        let mut out = Sql::new(dialect);
        out.push("DELETE FROM ");
        out.ident(T::NAME);
        if let Some(f) = &self.filter {
            out.push(" WHERE ");
            f.expr().render(&mut out)?;
        }
        finish(out, GeneratedKey::None)
    }
}
// ANCHOR_END: write
