//! The repository method set as plans: one entity declaration gives every method, and both executors'
//! `Repository` types are thin: they build the plan here and run it.
//!
//! Methods and meaning follow bluetape4k-exposed's `JdbcRepository` / `R2dbcRepository`: `find_by_id`, `get`, `find_all`, `find_by`,
//! `find_page`, `find_cursor_page`, `count`, `count_by`, `exists_by_id`, `exists_by`, `insert`, `insert_all`,
//! `batch_insert`, `batch_upsert`, `update_by_id`, `update_all`, `delete_by_id`, `delete_all`, `delete_by`,
//! `delete_all_by_ids`.

use std::marker::PhantomData;

use tandem_sql::ast::{
    BinaryOp, Conflict, Delete, Expr, Insert, Order, OrderBy, Returning, Select, SelectItem, Update,
};
use tandem_sql::batch::{BorrowedStatement, InsertTemplate, rows_per_statement};
use tandem_sql::kind;
use tandem_sql::typed::{AllIn, Entity, Expression, Ordering, Table, UpdateQuery};
use tandem_sql::{Dialect, GeneratedKey, Ident, Render, Rendered, Row, SqlValue, Value};

use crate::error::{Error, Result};
use crate::plan::{Atomicity, CopyIn, Outcome, Plan, Step, StepId, Steps};

mod insert;

pub use insert::{
    BorrowedBatch, batch_insert, batch_upsert, borrowed_batch_insert, insert, insert_all,
};

/// Filter, order, limit and offset for `find_all` and friends, checked against table `T`.
pub struct Find<T> {
    filter: Option<Expr>,
    order: Vec<OrderBy>,
    limit: Option<u64>,
    offset: Option<u64>,
    _table: PhantomData<fn() -> T>,
}

impl<T> Clone for Find<T> {
    fn clone(&self) -> Self {
        Find {
            filter: self.filter.clone(),
            order: self.order.clone(),
            limit: self.limit,
            offset: self.offset,
            _table: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Find<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Find")
            .field("filter", &self.filter)
            .field("order", &self.order)
            .field("limit", &self.limit)
            .field("offset", &self.offset)
            .finish()
    }
}

impl<T: Table> Default for Find<T> {
    fn default() -> Self {
        Find {
            filter: None,
            order: Vec::new(),
            limit: None,
            offset: None,
            _table: PhantomData,
        }
    }
}

impl<T: Table> Find<T> {
    /// Every row, in the engine's order.
    pub fn all() -> Self {
        Self::default()
    }

    /// Only rows matching `cond` (joined with AND when called again).
    pub fn filter<E, I>(mut self, cond: E) -> Self
    where
        E: Expression<Kind = kind::Bool>,
        E::Sources: AllIn<(T, ()), I>,
    {
        let cond = cond.into_ast();
        Expr::and_into(&mut self.filter, cond);
        self
    }

    /// Sorted by `term` (then by further terms when called again).
    pub fn order_by<S, I>(mut self, term: Ordering<S>) -> Self
    where
        S: AllIn<(T, ()), I>,
    {
        self.order.push(term.into_ast());
        self
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: u64) -> Self {
        self.limit = Some(n);
        self
    }

    /// Skips the first `n` rows.
    pub fn offset(mut self, n: u64) -> Self {
        self.offset = Some(n);
        self
    }
}

/// One page of `find_page`: zero-based page number, size, and the total over all pages.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<E> {
    /// The rows of this page.
    pub items: Vec<E>,
    /// Zero-based page number.
    pub page: u64,
    /// Page size asked for.
    pub size: u64,
    /// Rows matching over all pages.
    pub total: u64,
}

impl<E> Page<E> {
    /// How many pages there are.
    pub fn total_pages(&self) -> u64 {
        if self.size == 0 {
            0
        } else {
            self.total.div_ceil(self.size)
        }
    }
}

/// One page of `find_cursor_page` (keyset paging): the rows after a key, and the key to continue after.
#[derive(Clone, Debug, PartialEq)]
pub struct CursorPage<E, K> {
    /// The rows, in key order.
    pub items: Vec<E>,
    /// The key to pass as `after` for the next page; `None` when this was the last.
    pub next: Option<K>,
}

/// The smallest batch sent through COPY: below it multi-row INSERTs are as fast, and sqlx's COPY adds a
/// fixed round trip of tens of milliseconds (docs/benchmarks.md).
pub const COPY_MIN_ROWS: usize = 5_000;

/// How a batch insert commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BatchTransaction {
    /// Each chunk commits on its own (the shape of the benchmark's `seed` scenario: one transaction per chunk).
    #[default]
    PerChunk,
    /// The whole call is one transaction: all rows or none.
    PerCall,
}

/// Options of `batch_insert`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchOptions {
    /// Rows per statement; `None` is as many as the engine's parameter limit allows. Default 1,000.
    pub chunk_rows: Option<usize>,
    /// Skip rows that collide with a unique key instead of failing.
    pub ignore_duplicates: bool,
    /// One transaction per chunk or per call.
    pub transaction: BatchTransaction,
    /// Return the generated keys (in insertion order).
    pub return_ids: bool,
    /// Let PostgreSQL use `COPY … (FORMAT binary)` where it is faster: one transaction per call, no ignore,
    /// no keys returned, at least [`COPY_MIN_ROWS`] rows. Default true.
    pub allow_copy: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            chunk_rows: Some(1_000),
            ignore_duplicates: false,
            transaction: BatchTransaction::PerChunk,
            return_ids: false,
            allow_copy: true,
        }
    }
}

/// What `batch_insert` did.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchResult<K> {
    /// Rows inserted (skipped duplicates not counted).
    pub inserted: u64,
    /// Generated keys, when asked for.
    pub ids: Vec<K>,
}

/// The entity's columns, qualified, in declaration order: what every entity query selects.
pub fn entity_select<E: Entity>() -> Select {
    let table = <E::Table as Table>::NAME;
    let schema = <E::Table as Table>::schema();
    let mut s = Select::from(table.clone());
    s.items = schema
        .columns
        .iter()
        .map(|c| SelectItem::Expr {
            expr: Expr::qualified(table.clone(), c.name.clone()),
            alias: None,
        })
        .collect();
    s
}

fn key_column<E: Entity>() -> Expr {
    Expr::qualified(<E::Table as Table>::NAME, E::KEY)
}

fn key_eq<E: Entity>(key: E::Key) -> Expr {
    key_column::<E>().binary(BinaryOp::Eq, Expr::Value(key.into_value()))
}

fn decode_all<E: Entity>(rows: Vec<Row>) -> Result<Vec<E>> {
    rows.into_iter()
        .map(|r| E::from_row(r).map_err(Error::from))
        .collect()
}

fn first_i64(outcome: &Outcome) -> Result<i64> {
    outcome
        .rows
        .first()
        .and_then(|r| r.values().first())
        .and_then(Value::as_i64)
        .ok_or(Error::RowNotFound)
}

/// The statement `find_all` streams.
pub fn find_all<E: Entity>(dialect: Dialect, find: Find<E::Table>) -> Result<Rendered> {
    let mut s = entity_select::<E>();
    s.filter = find.filter;
    s.order_by = find.order;
    s.limit = find.limit;
    s.offset = find.offset;
    Ok(s.render(dialect)?)
}

thread_local! {
    /// The SQL of `find_by_id` per entity type and dialect, rendered once per thread: the statement's text
    /// does not depend on the key (values are always bound), and rendering it — building the select list
    /// from the table's schema, quoting every name — cost a tenth of a SQLite point read. A list searched
    /// in order, not a hash map: a program has a handful of entities, and hashing the key (SipHash) cost
    /// more than comparing it with each of them.
    static FIND_BY_ID_SQL: std::cell::RefCell<Vec<((std::any::TypeId, Dialect), String)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// `find_by_id`: the row with this key, if any.
pub fn find_by_id<E: Entity>(dialect: Dialect, key: E::Key) -> Result<Plan<Option<E>>> {
    // The key is unique: at most one row, decoded without a list around it.
    Ok(Plan::one(find_by_id_statement::<E>(dialect, key)?, |o| {
        o.rows
            .into_iter()
            .next()
            .map(|r| E::from_row(r).map_err(Error::from))
            .transpose()
    }))
}

/// `find_by_id`'s one statement, for the executors' repositories: a point read is the call made most
/// often, and running its statement straight into `E::from_row` skips the plan's step list, outcome list
/// and row list — three allocations of the nine left in a SQLite `find_by_id` (see `tandem-bench point`).
/// The plan [`find_by_id`] and this run the same statement.
pub fn find_by_id_statement<E: Entity>(dialect: Dialect, key: E::Key) -> Result<Rendered> {
    let shape = (std::any::TypeId::of::<E>(), dialect);
    let cached = FIND_BY_ID_SQL.with(|c| {
        c.borrow()
            .iter()
            .find(|(s, _)| *s == shape)
            .map(|(_, sql)| sql.clone())
    });
    let rendered = match cached {
        Some(sql) => Rendered {
            sql,
            params: vec![key.into_value()],
            generated_key: GeneratedKey::None,
        },
        None => {
            let mut s = entity_select::<E>();
            s.and_where(key_eq::<E>(key));
            let r = s.render(dialect)?;
            FIND_BY_ID_SQL.with(|c| c.borrow_mut().push((shape, r.sql.clone())));
            r
        }
    };
    Ok(rendered)
}

/// `get`: the row with this key, or [`Error::NotFound`].
pub fn get<E: Entity>(dialect: Dialect, key: E::Key) -> Result<Plan<E>> {
    let shown = format!("{:?}", key.clone().into_value());
    Ok(find_by_id::<E>(dialect, key)?.map(|found| {
        found.ok_or_else(|| Error::NotFound {
            table: <E::Table as Table>::NAME.to_string(),
            key: shown,
        })
    }))
}

fn count_select<E: Entity>(filter: Option<Expr>) -> Select {
    let mut s = Select::from(<E::Table as Table>::NAME);
    s.items = vec![SelectItem::Expr {
        expr: Expr::CountStar,
        alias: None,
    }];
    s.filter = filter;
    s
}

/// `count` / `count_by`: rows matching the filter.
pub fn count<E: Entity>(dialect: Dialect, find: Find<E::Table>) -> Result<Plan<u64>> {
    let s = count_select::<E>(find.filter);
    Ok(Plan::one(s.render(dialect)?, |o| {
        Ok(first_i64(&o)?.max(0) as u64)
    }))
}

/// `exists_by` / `exists_by_id`: whether any row matches.
pub fn exists<E: Entity>(dialect: Dialect, find: Find<E::Table>) -> Result<Plan<bool>> {
    let mut s = Select::from(<E::Table as Table>::NAME);
    s.items = vec![SelectItem::Expr {
        expr: key_column::<E>(),
        alias: None,
    }];
    s.filter = find.filter;
    s.limit = Some(1);
    Ok(Plan::one(s.render(dialect)?, |o| Ok(!o.rows.is_empty())))
}

/// `exists_by_id`.
pub fn exists_by_id<E: Entity>(dialect: Dialect, key: E::Key) -> Result<Plan<bool>> {
    let mut find = Find::<E::Table>::all();
    find.filter = Some(key_eq::<E>(key));
    exists::<E>(dialect, find)
}

/// `find_page`: page `page` (zero-based) of `size` rows and the total, read in one transaction so they
/// agree. Without an order the pages follow the key, so they neither overlap nor skip.
pub fn find_page<E: Entity>(
    dialect: Dialect,
    page: u64,
    size: u64,
    find: Find<E::Table>,
) -> Result<Plan<Page<E>>> {
    let count = count_select::<E>(find.filter.clone()).render(dialect)?;
    let mut s = entity_select::<E>();
    s.filter = find.filter;
    s.order_by = if find.order.is_empty() {
        vec![OrderBy {
            expr: key_column::<E>(),
            order: Order::Asc,
        }]
    } else {
        find.order
    };
    s.limit = Some(size);
    s.offset = Some(page.saturating_mul(size));
    let select = s.render(dialect)?;
    let mut steps = Steps::new();
    let (count, rows) = (steps.sql(count), steps.sql(select));
    Ok(steps.finish(Atomicity::Together, move |mut outcomes| {
        Ok(Page {
            items: decode_all::<E>(outcomes.take(rows)?.rows)?,
            page,
            size,
            total: first_i64(&outcomes.take(count)?)?.max(0) as u64,
        })
    }))
}

// ANCHOR: find_cursor_page
/// `find_cursor_page`: up to `size` rows with key greater than `after`, in key order, and the key to continue
/// after. Reads one row more than asked to know whether there is a next page.
pub fn find_cursor_page<E: Entity>(
    dialect: Dialect,
    after: Option<E::Key>,
    size: u64,
    find: Find<E::Table>,
) -> Result<Plan<CursorPage<E, E::Key>>> {
    let mut s = entity_select::<E>();
    s.filter = find.filter;
    if let Some(after) = after {
        s.and_where(key_column::<E>().binary(BinaryOp::Gt, Expr::Value(after.into_value())));
    }
    s.order_by = vec![OrderBy {
        expr: key_column::<E>(),
        order: Order::Asc,
    }];
    s.limit = Some(size.saturating_add(1));
    Ok(Plan::one(s.render(dialect)?, move |o| {
        let mut items = decode_all::<E>(o.rows)?;
        let more = items.len() as u64 > size;
        items.truncate(size as usize);
        let next = if more {
            items.last().map(Entity::key)
        } else {
            None
        };
        Ok(CursorPage { items, next })
    }))
}
// ANCHOR_END: find_cursor_page

/// `update_by_id`: writes every column of the entity but its key to the row with its key.
pub fn update_by_id<E: Entity>(dialect: Dialect, entity: &E) -> Result<Plan<u64>> {
    let set: Vec<(Ident, Expr)> = E::insert_columns()
        .iter()
        .cloned()
        .zip(entity.insert_values())
        .filter(|(c, _)| *c != E::KEY)
        .map(|(c, v)| (c, Expr::Value(v)))
        .collect();
    let update = Update {
        table: <E::Table as Table>::NAME,
        set,
        filter: Some(key_eq::<E>(entity.key())),
    };
    Ok(Plan::one(update.render(dialect)?, |o| Ok(o.affected)))
}

/// `update_all`: the UPDATE `build` makes from `UPDATE table` (its SET and optional filter). Returns rows
/// affected.
pub fn update_all<E: Entity>(
    dialect: Dialect,
    build: impl FnOnce(UpdateQuery<E::Table>) -> UpdateQuery<E::Table>,
) -> Result<Plan<u64>> {
    let update = build(tandem_sql::typed::update(<E::Table as Default>::default()));
    Ok(Plan::one(update.render(dialect)?, |o| Ok(o.affected)))
}

/// `delete_by` (and `delete_all` with [`Find::all`]): rows matching the filter. Returns rows deleted.
pub fn delete<E: Entity>(dialect: Dialect, find: Find<E::Table>) -> Result<Plan<u64>> {
    let d = Delete {
        table: <E::Table as Table>::NAME,
        filter: find.filter,
    };
    Ok(Plan::one(d.render(dialect)?, |o| Ok(o.affected)))
}

/// `delete_by_id`.
pub fn delete_by_id<E: Entity>(dialect: Dialect, key: E::Key) -> Result<Plan<u64>> {
    let mut find = Find::<E::Table>::all();
    find.filter = Some(key_eq::<E>(key));
    delete::<E>(dialect, find)
}

/// `delete_all_by_ids`: `DELETE … WHERE key IN (..)`, in as many statements as the parameter limit needs,
/// all in one transaction. An empty list deletes nothing and sends nothing.
pub fn delete_all_by_ids<E: Entity>(dialect: Dialect, keys: &[E::Key]) -> Result<Plan<u64>> {
    let per = rows_per_statement(dialect, 1, None)?;
    let mut steps = Vec::new();
    for chunk in keys.chunks(per) {
        let d = Delete {
            table: <E::Table as Table>::NAME,
            filter: Some(Expr::InList {
                expr: Box::new(key_column::<E>()),
                list: chunk
                    .iter()
                    .map(|k| Expr::Value(k.clone().into_value()))
                    .collect(),
                negated: false,
            }),
        };
        steps.push(Step::Sql(d.render(dialect)?));
    }
    Ok(Plan::new(steps, Atomicity::Together, |outcomes| {
        Ok(outcomes.iter().map(|o| o.affected).sum())
    }))
}

/// Whether an executor should read the last insert id after running `r`.
pub fn wants_last_insert_id(r: &Rendered) -> bool {
    r.generated_key == GeneratedKey::LastInsertId
}
