//! Stage 5 — repositories. Your code. Read `book/src/05-repositories.md`, then make `just check 05` pass.
//! First `Account`'s `Entity` impl, then the repository's methods, one check at a time.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables, unused_imports, dead_code)]

use std::marker::PhantomData;

use blocking::{Error, Executor, Result};
use dialects::{Delete, GeneratedKey, Insert, Order, Select, Update};
use expressions::ColumnExt;
use tables::{Column, SqlValue, Table, Value, table};

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
        todo!("the key")
    }

    fn to_values(&self) -> Vec<Value> {
        todo!("every column's value, in order")
    }

    fn from_values(values: Vec<Value>) -> Result<Self> {
        todo!("the account from its values")
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
        todo!("find by key")
    }

    /// Inserts `e` (all but its key) and returns the key the database generated: from `RETURNING` where
    /// the engine has it, else from the connection's last insert id.
    pub fn insert(&self, e: &E) -> Result<i64> {
        todo!("insert, returning the generated key")
    }

    /// Inserts every entity (their keys generated), as few multi-row INSERTs as each engine's parameter
    /// limit allows; returns how many rows went in. Run it in a transaction to make it all or nothing.
    pub fn batch_insert(&self, es: &[E]) -> Result<u64> {
        todo!("insert in as few statements as the limit allows")
    }

    /// [`Repository::batch_insert`], returning the keys the database generated, in the order of `es`.
    /// Where the engine has `RETURNING`, each statement returns its rows' keys (in no promised order: keys
    /// grow in insertion order, so sort them). MySQL and MariaDB have no `RETURNING`: one multi-row INSERT
    /// gets its keys allocated together, the first in the outcome's `last_insert_id` and each next one
    /// `@@auto_increment_increment` further — 1 on a lone server, the cluster's size on a Galera node.
    pub fn batch_insert_keys(&self, es: &[E]) -> Result<Vec<i64>> {
        todo!("insert, and every generated key in order")
    }

    /// Writes every column of `e` but its key to the row with `e`'s key; whether there was such a row.
    pub fn update_by_id(&self, e: &E) -> Result<bool> {
        todo!("update by key")
    }

    /// Deletes the row with key `id`; whether there was one.
    pub fn delete_by_id(&self, id: i64) -> Result<bool> {
        todo!("delete by key")
    }

    /// Up to `size` entities in key order, starting after key `after` (from the first without it): a
    /// keyset page. The next page starts after the last key of this one.
    pub fn page_after(&self, after: Option<i64>, size: u64) -> Result<Vec<E>> {
        todo!("a keyset page")
    }
}

// ANCHOR_END: methods
