//! Stage 5 — repositories: the reference solution.

use std::marker::PhantomData;

use blocking::{Error, Executor, Result};
use dialects::{Delete, GeneratedKey, Insert, Order, Select, Statement, Update};
use expressions::ColumnExt;
use tables::{Column, Dialect, SqlValue, Table, Value, table};

// ANCHOR: entity
/// A struct that is one row of a table: it says which table, which column is the key, and how to turn
/// itself into the row's values and back.
pub trait Entity: Sized {
    /// The table.
    type Table: Table;
    /// The key column: an `i64` the database generates.
    type Key: Column<Table = Self::Table, Type = i64>;
    /// This row's key (ignored by `insert`, which lets the database choose).
    fn key(&self) -> i64;
    /// Every column's value, in the table's declaration order (the key included).
    fn to_values(&self) -> Vec<Value>;
    /// The entity back from every column's value, in declaration order.
    fn from_values(values: Vec<Value>) -> Result<Self>;
}
// ANCHOR_END: entity

table! {
    /// Bank accounts (given).
    accounts (id) {
        id: i64,
        owner: String,
        balance: i64,
        note: Option<String>,
    }
}

/// An account: one row of `accounts` (given).
#[derive(Clone, Debug, PartialEq)]
pub struct Account {
    /// The key.
    pub id: i64,
    /// The owner's name.
    pub owner: String,
    /// The balance, in cents.
    pub balance: i64,
    /// A note, if any.
    pub note: Option<String>,
}

// ANCHOR: account
impl Entity for Account {
    type Table = accounts::table;
    type Key = accounts::id;

    fn key(&self) -> i64 {
        self.id
    }

    fn to_values(&self) -> Vec<Value> {
        vec![
            self.id.to_value(),
            self.owner.to_value(),
            self.balance.to_value(),
            self.note.to_value(),
        ]
    }

    fn from_values(values: Vec<Value>) -> Result<Self> {
        let [id, owner, balance, note]: [Value; 4] =
            values.try_into().map_err(|v: Vec<Value>| Error::Columns {
                expected: 4,
                found: v.len(),
            })?;
        Ok(Account {
            id: SqlValue::from_value(id)?,
            owner: SqlValue::from_value(owner)?,
            balance: SqlValue::from_value(balance)?,
            note: SqlValue::from_value(note)?,
        })
    }
}
// ANCHOR_END: account

// ANCHOR: repository
/// The everyday queries of entity `E`, over any executor: a database, or a transaction.
pub struct Repository<'x, X: Executor, E: Entity> {
    x: &'x X,
    entity: PhantomData<E>,
}

impl<'x, X: Executor, E: Entity> Repository<'x, X, E> {
    /// The repository of `E` on `x`.
    pub fn new(x: &'x X) -> Self {
        Repository {
            x,
            entity: PhantomData,
        }
    }
    // ANCHOR_END: repository

    // ANCHOR: methods
    /// The entity with key `id`, if there is one.
    pub fn find_by_id(&self, id: i64) -> Result<Option<E>> {
        let st = Select::from(E::Table::default())
            .filter(E::Key::default().eq(id))
            .render(self.x.dialect())?;
        self.x
            .fetch_values(&st)?
            .into_iter()
            .next()
            .map(E::from_values)
            .transpose()
    }

    /// Inserts `e` (all but its key) and returns the key the database generated: from `RETURNING` where
    /// the engine has it, else from the connection's last insert id.
    pub fn insert(&self, e: &E) -> Result<i64> {
        let (columns, values) = without_key::<E>(e);
        let st = Insert::into(E::Table::default(), columns)
            .row(values)
            .returning_key()
            .render(self.x.dialect())?;
        match st.key {
            GeneratedKey::Returning => {
                let keys: Vec<(i64,)> = self.x.fetch(&st)?;
                keys.first().map(|k| k.0).ok_or(Error::Columns {
                    expected: 1,
                    found: 0,
                })
            }
            GeneratedKey::LastInsertId | GeneratedKey::None => {
                let outcome = self.x.execute(&st)?;
                outcome.last_insert_id.ok_or(Error::Columns {
                    expected: 1,
                    found: 0,
                })
            }
        }
    }

    /// Inserts every entity (their keys generated), as few multi-row INSERTs as each engine's parameter
    /// limit allows; returns how many rows went in. Run it in a transaction to make it all or nothing.
    pub fn batch_insert(&self, es: &[E]) -> Result<u64> {
        let columns = insert_columns::<E>();
        let mut insert = Insert::into(E::Table::default(), columns);
        for e in es {
            insert = insert.row(without_key::<E>(e).1);
        }
        let mut inserted = 0;
        for st in insert.render_chunks(self.x.dialect())? {
            inserted += self.x.execute(&st)?.rows_affected;
        }
        Ok(inserted)
    }

    /// [`Repository::batch_insert`], returning the keys the database generated, in the order of `es`.
    /// Where the engine has `RETURNING`, each statement returns its rows' keys (in no promised order: keys
    /// grow in insertion order, so sort them). MySQL and MariaDB have no `RETURNING`: one multi-row INSERT
    /// gets its keys allocated together, the first in the outcome's `last_insert_id` and each next one
    /// `@@auto_increment_increment` further — 1 on a lone server, the cluster's size on a Galera node.
    pub fn batch_insert_keys(&self, es: &[E]) -> Result<Vec<i64>> {
        let d = self.x.dialect();
        let mut insert = Insert::into(E::Table::default(), insert_columns::<E>());
        for e in es {
            insert = insert.row(without_key::<E>(e).1);
        }
        let mut keys = Vec::with_capacity(es.len());
        if d == Dialect::MySql {
            // Stage 3 will not promise a multi-row INSERT's keys: the statement alone cannot know them.
            // The repository can, asking the connection how far apart they are.
            let step = self
                .x
                .fetch_optional::<(i64,)>(&raw("SELECT @@SESSION.auto_increment_increment"))?
                .map_or(1, |(s,)| s.max(1));
            for st in insert.render_chunks(d)? {
                let outcome = self.x.execute(&st)?;
                let first = outcome.last_insert_id.ok_or(Error::Columns {
                    expected: 1,
                    found: 0,
                })?;
                keys.extend((0..outcome.rows_affected as i64).map(|i| first + i * step));
            }
        } else {
            for st in insert.returning_key().render_chunks(d)? {
                let mut chunk: Vec<i64> = self
                    .x
                    .fetch::<(i64,)>(&st)?
                    .into_iter()
                    .map(|k| k.0)
                    .collect();
                chunk.sort_unstable();
                keys.extend(chunk);
            }
        }
        Ok(keys)
    }

    /// Writes every column of `e` but its key to the row with `e`'s key; whether there was such a row.
    pub fn update_by_id(&self, e: &E) -> Result<bool> {
        let (columns, values) = without_key::<E>(e);
        let mut update = Update::table(E::Table::default());
        for (c, v) in columns.into_iter().zip(values) {
            update = update.set_column(c, v);
        }
        let st = update
            .filter(E::Key::default().eq(e.key()))
            .render(self.x.dialect())?;
        Ok(self.x.execute(&st)?.rows_affected > 0)
    }

    /// Deletes the row with key `id`; whether there was one.
    pub fn delete_by_id(&self, id: i64) -> Result<bool> {
        let st = Delete::from(E::Table::default())
            .filter(E::Key::default().eq(id))
            .render(self.x.dialect())?;
        Ok(self.x.execute(&st)?.rows_affected > 0)
    }

    /// Up to `size` entities in key order, starting after key `after` (from the first without it): a
    /// keyset page. The next page starts after the last key of this one.
    pub fn page_after(&self, after: Option<i64>, size: u64) -> Result<Vec<E>> {
        let mut select = Select::from(E::Table::default());
        if let Some(after) = after {
            select = select.filter(E::Key::default().gt(after));
        }
        let st = select
            .order_by(E::Key::default(), Order::Asc)
            .limit(size)
            .render(self.x.dialect())?;
        self.x
            .fetch_values(&st)?
            .into_iter()
            .map(E::from_values)
            .collect()
    }
}

/// The names of `E`'s columns but the key, in declaration order.
/// SQL without parameters, as a statement.
fn raw(sql: &str) -> Statement {
    Statement {
        sql: sql.to_owned(),
        params: vec![],
        key: GeneratedKey::None,
    }
}

fn insert_columns<E: Entity>() -> Vec<&'static str> {
    let key = <E::Key as Column>::NAME;
    E::Table::schema()
        .columns
        .iter()
        .map(|c| c.name)
        .filter(|name| *name != key)
        .collect()
}

/// `e`'s columns and values, the key left out.
fn without_key<E: Entity>(e: &E) -> (Vec<&'static str>, Vec<Value>) {
    let key = <E::Key as Column>::NAME;
    E::Table::schema()
        .columns
        .iter()
        .map(|c| c.name)
        .zip(e.to_values())
        .filter(|(name, _)| *name != key)
        .unzip()
}
// ANCHOR_END: methods
