//! Stage 5's specification. `just check 05` runs it on your `src/exercise.rs`, on SQLite, and on PostgreSQL
//! and MariaDB when they can be reached. The expected answers are computed in Rust from the rows the test
//! wrote; the database says what it holds.

use blocking::{Database, Error, Executor};
use dialects::{GeneratedKey, Statement};
use repositories::{Account, Entity, Repository, accounts};
use tables::{Dialect, SqlValue, Table, Value, table};

table! {
    /// A second entity's table: the repository must not care which.
    notes (id) {
        id: i64,
        title: String,
        stars: i32,
        pinned: bool,
        body: Option<String>,
    }
}

/// A note: the tests' own entity, written against your `Entity` trait.
#[derive(Clone, Debug, PartialEq)]
struct Note {
    id: i64,
    title: String,
    stars: i32,
    pinned: bool,
    body: Option<String>,
}

impl Entity for Note {
    type Table = notes::table;
    type Key = notes::id;

    fn key(&self) -> i64 {
        self.id
    }

    fn to_values(&self) -> Vec<Value> {
        vec![
            self.id.to_value(),
            self.title.to_value(),
            self.stars.to_value(),
            self.pinned.to_value(),
            self.body.to_value(),
        ]
    }

    fn from_values(values: Vec<Value>) -> Result<Self, Error> {
        let found = values.len();
        let mut v = values.into_iter();
        let mut next = || v.next().ok_or(Error::Columns { expected: 5, found });
        Ok(Note {
            id: SqlValue::from_value(next()?)?,
            title: SqlValue::from_value(next()?)?,
            stars: SqlValue::from_value(next()?)?,
            pinned: SqlValue::from_value(next()?)?,
            body: SqlValue::from_value(next()?)?,
        })
    }
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

/// Runs `f` on a fresh database with both tables, on every engine that answers.
fn on_engines(name: &str, f: impl Fn(&Database)) {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), name) else {
            continue;
        };
        let db = Database::open(&target.url(), 4).unwrap_or_else(|e| panic!("{d}: {e}"));
        for ddl in [
            <accounts::table as Table>::schema().create_table(d),
            <notes::table as Table>::schema().create_table(d),
        ] {
            db.execute(&Statement {
                sql: ddl,
                params: vec![],
                key: GeneratedKey::None,
            })
            .unwrap_or_else(|e| panic!("{d}: CREATE TABLE: {e}"));
        }
        f(&db);
    }
}

fn account(i: usize) -> Account {
    Account {
        id: 0,
        owner: format!("owner-{i:05}"),
        balance: (i as i64 * 37) % 1_000,
        note: i.is_multiple_of(3).then(|| format!("note {i}")),
    }
}

/// Every id the table holds, in order, read page by page with `page_after`.
fn all_ids<E: Entity>(repo: &Repository<'_, Database, E>, size: u64) -> Vec<Vec<i64>> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page: Vec<i64> = repo
            .page_after(after, size)
            .unwrap()
            .iter()
            .map(Entity::key)
            .collect();
        let Some(last) = page.last().copied() else {
            return pages;
        };
        after = Some(last);
        pages.push(page);
    }
}

/// `Account`'s `Entity` impl gives every column in declaration order and reads them back; a row of the
/// wrong width is `Error::Columns`.
fn account_is_an_entity() {
    let a = Account {
        id: 7,
        owner: "ada".into(),
        balance: -3,
        note: None,
    };
    assert_eq!(a.key(), 7);
    let values = a.to_values();
    assert_eq!(
        values,
        [
            Value::I64(7),
            Value::Text("ada".into()),
            Value::I64(-3),
            Value::Null
        ]
    );
    assert_eq!(Account::from_values(values).unwrap(), a);
    assert!(matches!(
        Account::from_values(vec![Value::I64(1)]),
        Err(Error::Columns { .. })
    ));
}

/// Insert returns the generated key on every engine (RETURNING or LAST_INSERT_ID), find, update and
/// delete by it, and say so when there is no such row.
fn crud_on_every_engine() {
    on_engines("w5crud", |db| {
        let d = db.dialect();
        let repo = Repository::<_, Account>::new(db);
        let ids: Vec<i64> = (0..5).map(|i| repo.insert(&account(i)).unwrap()).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{d}: generated keys {ids:?}"
        );
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(
                repo.find_by_id(*id).unwrap(),
                Some(Account {
                    id: *id,
                    ..account(i)
                }),
                "{d}: the row with key {id}"
            );
        }
        assert_eq!(repo.find_by_id(-1).unwrap(), None, "{d}: no such key");
        let changed = Account {
            id: ids[1],
            owner: "changed".into(),
            balance: 42,
            note: Some("n".into()),
        };
        assert!(
            repo.update_by_id(&changed).unwrap(),
            "{d}: a row was updated"
        );
        assert_eq!(repo.find_by_id(ids[1]).unwrap(), Some(changed.clone()));
        assert!(
            repo.update_by_id(&changed).unwrap(),
            "{d}: an update that writes the values already there still found its row"
        );
        assert_eq!(
            repo.find_by_id(ids[2]).unwrap().map(|a| a.owner),
            Some(account(2).owner),
            "{d}: only the row with that key changed"
        );
        assert!(
            !repo.update_by_id(&Account { id: -1, ..changed }).unwrap(),
            "{d}: no row to update"
        );
        assert!(repo.delete_by_id(ids[0]).unwrap(), "{d}: a row was deleted");
        assert!(!repo.delete_by_id(ids[0]).unwrap(), "{d}: it is gone");
        assert_eq!(repo.find_by_id(ids[0]).unwrap(), None);
    });
}

/// A batch over every engine's parameter limit goes in whole (split into statements: three on SQLite, two
/// on the servers — the last one short), every row once; an empty batch is a typed error.
fn batch_insert_splits_at_the_limit() {
    on_engines("w5batch", |db| {
        let d = db.dialect();
        let repo = Repository::<_, Account>::new(db);
        let rows: Vec<Account> = (0..25_000).map(account).collect();
        assert_eq!(
            repo.batch_insert(&rows).unwrap(),
            25_000,
            "{d}: rows inserted, of 25,000 rows of 3 values (75,000 parameters)"
        );
        let stored = owners_by_key(db);
        assert_eq!(stored.len(), 25_000, "{d}: rows stored, of 25,000");
        let mut owners: Vec<&str> = stored.values().map(String::as_str).collect();
        owners.sort_unstable();
        owners.dedup();
        assert_eq!(owners.len(), 25_000, "{d}: every row once");
        assert_eq!(
            (owners[0], owners[24_999]),
            ("owner-00000", "owner-24999"),
            "{d}: the first and the last row (the last statement's) are stored"
        );
        assert!(
            matches!(repo.batch_insert(&[]), Err(Error::Render(_))),
            "{d}: an empty batch"
        );
    });
}

/// Every account's owner, by key, read page by page with `page_after`.
fn owners_by_key(db: &Database) -> std::collections::HashMap<i64, String> {
    let repo = Repository::<_, Account>::new(db);
    let mut owners = std::collections::HashMap::new();
    let mut after = None;
    loop {
        let page = repo.page_after(after, 5_000).unwrap();
        let Some(last) = page.last() else {
            return owners;
        };
        after = Some(last.id);
        owners.extend(page.into_iter().map(|a| (a.id, a.owner)));
    }
}

/// Keyset pages: every key once, in order, `size` to a page but the last; nothing after the last key.
fn keyset_pages_cover_every_row_once() {
    on_engines("w5pages", |db| {
        let d = db.dialect();
        let repo = Repository::<_, Account>::new(db);
        repo.batch_insert(&(0..157).map(account).collect::<Vec<_>>())
            .unwrap();
        let mut expected: Vec<i64> = db
            .fetch::<(i64,)>(&Statement {
                sql: "SELECT id FROM accounts ORDER BY id".into(),
                params: vec![],
                key: GeneratedKey::None,
            })
            .unwrap()
            .into_iter()
            .map(|r| r.0)
            .collect();
        // Make a hole: keyset pages do not care.
        let gone = expected.remove(10);
        assert!(repo.delete_by_id(gone).unwrap());
        for size in [1u64, 7, 50, 156, 500] {
            let pages = all_ids(&repo, size);
            assert_eq!(pages.concat(), expected, "{d}: size {size}");
            let (last, full) = pages.split_last().unwrap();
            assert!(
                full.iter().all(|p| p.len() as u64 == size),
                "{d}: full pages of {size}"
            );
            assert!(!last.is_empty() && last.len() as u64 <= size);
        }
        let last = *expected.last().unwrap();
        assert!(repo.page_after(Some(last), 10).unwrap().is_empty());
    });
}

/// The same repository inside a transaction: it sees its own writes, and a rollback undoes them.
fn a_repository_runs_in_a_transaction() {
    on_engines("w5tx", |db| {
        let d = db.dialect();
        let kept: i64 = db
            .transaction(|tx| {
                let repo = Repository::<_, Account>::new(tx);
                let id = repo.insert(&account(1))?;
                assert_eq!(repo.find_by_id(id)?.map(|a| a.id), Some(id), "{d}");
                Ok::<_, Error>(id)
            })
            .unwrap();
        let undone: Result<(), Error> = db.transaction(|tx| {
            let repo = Repository::<_, Account>::new(tx);
            let id = repo.insert(&account(2))?;
            repo.delete_by_id(kept)?;
            Err(Error::Connect(format!("give up after inserting {id}")))
        });
        assert!(undone.is_err());
        let repo = Repository::<_, Account>::new(db);
        let ids: Vec<i64> = all_ids(&repo, 10).concat();
        assert_eq!(
            ids,
            [kept],
            "{d}: the rolled-back insert and delete left no trace"
        );
    });
}

/// The repository is generic: another entity, with an `i32`, a boolean and an optional text, works the
/// same way.
fn another_entity_works_the_same() {
    on_engines("w5notes", |db| {
        let d = db.dialect();
        let repo = Repository::<_, Note>::new(db);
        let note = Note {
            id: 0,
            title: "first".into(),
            stars: 3,
            pinned: true,
            body: None,
        };
        let id = repo.insert(&note).unwrap();
        let stored = Note { id, ..note };
        assert_eq!(repo.find_by_id(id).unwrap(), Some(stored.clone()), "{d}");
        let edited = Note {
            pinned: false,
            body: Some("text".into()),
            ..stored
        };
        assert!(repo.update_by_id(&edited).unwrap());
        assert_eq!(repo.find_by_id(id).unwrap(), Some(edited), "{d}");
        assert_eq!(
            repo.batch_insert(&vec![
                Note {
                    id: 0,
                    title: "more".into(),
                    stars: -1,
                    pinned: false,
                    body: None
                };
                3
            ])
            .unwrap(),
            3
        );
        assert_eq!(all_ids(&repo, 2).concat().len(), 4, "{d}");
    });
}

/// The keys a batch insert returns are the keys of its rows, in order: on every engine, in chunks split
/// at the parameter limit; and with keys that are not consecutive — three apart, as on a three-node
/// Galera cluster (MySQL/MariaDB: `auto_increment_increment = 3`) or from a sequence that counts by three
/// (PostgreSQL) — where keys counted up by one from the first are wrong.
fn batch_keys_are_the_rows_keys() {
    on_engines("w5keys", |db| {
        let d = db.dialect();
        let check = |keys: Vec<i64>, accounts: &[Account], what: &str| {
            assert_eq!(keys.len(), accounts.len(), "{d} {what}: a key per row");
            let stored = owners_by_key(db);
            for (key, a) in keys.iter().zip(accounts) {
                assert_eq!(
                    stored.get(key),
                    Some(&a.owner),
                    "{d} {what}: key {key} is not the key of {}'s row (keys {:?}…)",
                    a.owner,
                    &keys[..keys.len().min(5)]
                );
            }
        };
        // 25,000 rows of 3 values: more than one statement on every engine.
        let many: Vec<Account> = (0..25_000).map(account).collect();
        let keys = Repository::<_, Account>::new(db)
            .batch_insert_keys(&many)
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        check(keys, &many, "25,000 rows");
        if d == Dialect::Sqlite {
            // SQLite gives the rows of one statement consecutive keys, always.
            return;
        }
        let spaced: Vec<Account> = (30_000..30_010).map(account).collect();
        let statement = |sql: &str| Statement {
            sql: sql.to_owned(),
            params: vec![],
            key: GeneratedKey::None,
        };
        let keys = if d == Dialect::MySql {
            let increment =
                |step: &str| statement(&format!("SET SESSION auto_increment_increment = {step}"));
            db.transaction(|tx| {
                tx.execute(&increment("3"))?;
                let keys = Repository::<_, Account>::new(tx).batch_insert_keys(&spaced);
                // A session setting outlives the transaction: the connection goes back to the pool as
                // it came, whatever the insert did (the unclean connection chapter 4 warns about).
                tx.execute(&increment("DEFAULT"))?;
                keys
            })
        } else {
            // The table's own sequence (this check's schema is its own): every next key three further.
            db.execute(&statement(
                "DO $$BEGIN EXECUTE format('ALTER SEQUENCE %s INCREMENT BY 3', \
                 pg_get_serial_sequence('accounts', 'id')); END$$",
            ))
            .unwrap_or_else(|e| panic!("{d}: a sequence counting by three: {e}"));
            Repository::<_, Account>::new(db).batch_insert_keys(&spaced)
        }
        .unwrap_or_else(|e| panic!("{d}: {e}"));
        assert!(
            keys.windows(2).all(|w| w[1] - w[0] == 3),
            "{d}: keys generated three apart come back three apart: {keys:?}"
        );
        check(keys, &spaced, "keys three apart");
    });
}

workshop_harness::checks!(
    account_is_an_entity,
    crud_on_every_engine,
    batch_insert_splits_at_the_limit,
    batch_keys_are_the_rows_keys,
    keyset_pages_cover_every_row_once,
    a_repository_runs_in_a_transaction,
    another_entity_works_the_same,
);
