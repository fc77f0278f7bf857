//! Equivalence: generated sequences of repository operations run through the blocking executor and the
//! async one on each of its drivers (the engine's native one and sqlx), each on fresh tables of the same
//! engine, give the same result at every step and the same final table contents — on SQLite, PostgreSQL
//! and MariaDB.

use tandem_test_support::schema as support;
use tandem_test_support::{db, harness};

use futures_util::TryStreamExt;
use proptest::prelude::*;
use support::{User, users};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;
use tandem_core::{BatchOptions, Error, Find};
use tandem_sql::Dialect;
use tandem_sql::prelude::*;

/// One repository operation; names come from a small pool so unique violations happen.
#[derive(Clone, Debug)]
enum Op {
    Insert {
        name: u8,
        age: i32,
    },
    Batch {
        rows: Vec<(u8, i32)>,
        ignore: bool,
    },
    Upsert {
        name: u8,
        age: i32,
    },
    UpdateAges {
        below: i32,
        delta: i32,
    },
    UpdateById {
        id: i64,
        age: i32,
    },
    DeleteByAge {
        age: i32,
    },
    DeleteIds {
        ids: Vec<i64>,
    },
    FindRange {
        lo: i32,
        hi: i32,
        desc: bool,
        limit: Option<u64>,
    },
    Page {
        page: u64,
        size: u64,
    },
    Cursor {
        after: Option<i64>,
        size: u64,
    },
    Count {
        min_age: Option<i32>,
    },
    Exists {
        id: i64,
    },
    Get {
        id: i64,
    },
    /// A statement the database refuses: see [`BAD`].
    Bad {
        which: usize,
    },
}

/// Statements each engine refuses, for both executors to report alike: unknown column, unknown table,
/// syntax, NOT NULL, a value too long for `varchar(100)` (SQLite has no length limit: accepted on both).
const BAD: [&str; 5] = [
    "SELECT nope FROM users",
    "SELECT id FROM no_such_table",
    "SELEC id FROM users",
    "INSERT INTO users (name, age) VALUES (NULL, 1)",
    "INSERT INTO users (name, age) VALUES ('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 1)",
];

fn op() -> impl Strategy<Value = Op> {
    let age = -3i32..20;
    prop_oneof![
        (any::<u8>(), age.clone()).prop_map(|(name, age)| Op::Insert { name, age }),
        (
            proptest::collection::vec((any::<u8>(), age.clone()), 0..6),
            any::<bool>()
        )
            .prop_map(|(rows, ignore)| Op::Batch { rows, ignore }),
        (any::<u8>(), age.clone()).prop_map(|(name, age)| Op::Upsert { name, age }),
        (age.clone(), -2i32..3).prop_map(|(below, delta)| Op::UpdateAges { below, delta }),
        (1i64..12, age.clone()).prop_map(|(id, age)| Op::UpdateById { id, age }),
        age.clone().prop_map(|age| Op::DeleteByAge { age }),
        proptest::collection::vec(1i64..12, 0..4).prop_map(|ids| Op::DeleteIds { ids }),
        (
            age.clone(),
            age.clone(),
            any::<bool>(),
            proptest::option::of(1u64..5)
        )
            .prop_map(|(lo, hi, desc, limit)| Op::FindRange {
                lo,
                hi,
                desc,
                limit
            }),
        (0u64..3, 1u64..4).prop_map(|(page, size)| Op::Page { page, size }),
        (proptest::option::of(0i64..10), 1u64..4)
            .prop_map(|(after, size)| Op::Cursor { after, size }),
        proptest::option::of(age.clone()).prop_map(|min_age| Op::Count { min_age }),
        (0i64..12).prop_map(|id| Op::Exists { id }),
        (0i64..12).prop_map(|id| Op::Get { id }),
        (0..BAD.len()).prop_map(|which| Op::Bad { which }),
    ]
}

fn name(n: u8) -> String {
    format!("n{}", n % 10)
}

fn user(n: u8, age: i32) -> User {
    User {
        id: 0,
        name: name(n),
        age,
        email: if n.is_multiple_of(3) {
            None
        } else {
            Some(format!("{}@x", name(n)))
        },
    }
}

/// A step's result as comparable text: values as they are, database errors by kind and the engine's code
/// (the messages differ between drivers).
fn show<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Ok(v) => format!("ok {v:?}"),
        Err(Error::Database(e)) => format!("db error {:?} {:?}", e.kind, e.code),
        Err(Error::Sql(e)) => format!("sql error {e}"),
        Err(e) => format!("error {e}"),
    }
}

fn range(lo: i32, hi: i32, desc: bool, limit: Option<u64>) -> Find<users::table> {
    let order = if desc {
        users::age.desc()
    } else {
        users::age.asc()
    };
    let mut f = Find::all()
        .filter(users::age.between(lo.min(hi), lo.max(hi)))
        .order_by(order)
        .order_by(users::id.asc());
    if let Some(l) = limit {
        f = f.limit(l);
    }
    f
}

fn run_blocking(db: &tandem_blocking::Database, op: &Op) -> String {
    let r = db.repository::<User>();
    match op {
        Op::Bad { which } => show(db.execute(&tandem_sql::raw(BAD[*which], vec![]))),
        Op::Insert { name, age } => show(r.insert(&user(*name, *age))),
        Op::Batch { rows, ignore } => {
            let rows: Vec<User> = rows.iter().map(|(n, a)| user(*n, *a)).collect();
            show(
                r.batch_insert(
                    &rows,
                    &BatchOptions {
                        ignore_duplicates: *ignore,
                        chunk_rows: Some(2),
                        ..BatchOptions::default()
                    },
                )
                .map(|b| b.inserted),
            )
        }
        Op::Upsert { name, age } => show(r.batch_upsert(&[user(*name, *age)], users::name)),
        Op::UpdateAges { below, delta } => show(r.update_all(|u| {
            u.set(users::age, users::age + *delta)
                .filter(users::age.lt(*below))
        })),
        Op::UpdateById { id, age } => show(r.find_by_id(*id).and_then(|u| match u {
            Some(u) => r.update_by_id(&User { age: *age, ..u }),
            None => Ok(0),
        })),
        Op::DeleteByAge { age } => show(r.delete_by(Find::all().filter(users::age.eq(*age)))),
        Op::DeleteIds { ids } => show(r.delete_all_by_ids(ids)),
        Op::FindRange {
            lo,
            hi,
            desc,
            limit,
        } => show(
            r.find_all(range(*lo, *hi, *desc, *limit))
                .and_then(|s| s.collect::<Result<Vec<User>, _>>()),
        ),
        Op::Page { page, size } => show(r.find_page(*page, *size, Find::all())),
        Op::Cursor { after, size } => show(r.find_cursor_page(*after, *size, Find::all())),
        Op::Count { min_age: Some(a) } => show(r.count_by(Find::all().filter(users::age.ge(*a)))),
        Op::Count { min_age: None } => show(r.count()),
        Op::Exists { id } => show(r.exists_by_id(*id)),
        Op::Get { id } => show(r.get(*id)),
    }
}

async fn run_async(db: &tandem_async::Database, op: &Op) -> String {
    let r = db.repository::<User>();
    match op {
        Op::Bad { which } => show(db.execute(&tandem_sql::raw(BAD[*which], vec![])).await),
        Op::Insert { name, age } => show(r.insert(&user(*name, *age)).await),
        Op::Batch { rows, ignore } => {
            let rows: Vec<User> = rows.iter().map(|(n, a)| user(*n, *a)).collect();
            show(
                r.batch_insert(
                    &rows,
                    &BatchOptions {
                        ignore_duplicates: *ignore,
                        chunk_rows: Some(2),
                        ..BatchOptions::default()
                    },
                )
                .await
                .map(|b| b.inserted),
            )
        }
        Op::Upsert { name, age } => show(r.batch_upsert(&[user(*name, *age)], users::name).await),
        Op::UpdateAges { below, delta } => show(
            r.update_all(|u| {
                u.set(users::age, users::age + *delta)
                    .filter(users::age.lt(*below))
            })
            .await,
        ),
        Op::UpdateById { id, age } => show(match r.find_by_id(*id).await {
            Ok(Some(u)) => r.update_by_id(&User { age: *age, ..u }).await,
            Ok(None) => Ok(0),
            Err(e) => Err(e),
        }),
        Op::DeleteByAge { age } => show(r.delete_by(Find::all().filter(users::age.eq(*age))).await),
        Op::DeleteIds { ids } => show(r.delete_all_by_ids(ids).await),
        Op::FindRange {
            lo,
            hi,
            desc,
            limit,
        } => show(match r.find_all(range(*lo, *hi, *desc, *limit)).await {
            Ok(s) => s.try_collect::<Vec<User>>().await,
            Err(e) => Err(e),
        }),
        Op::Page { page, size } => show(r.find_page(*page, *size, Find::all()).await),
        Op::Cursor { after, size } => show(r.find_cursor_page(*after, *size, Find::all()).await),
        Op::Count { min_age: Some(a) } => {
            show(r.count_by(Find::all().filter(users::age.ge(*a))).await)
        }
        Op::Count { min_age: None } => show(r.count().await),
        Op::Exists { id } => show(r.exists_by_id(*id).await),
        Op::Get { id } => show(r.get(*id).await),
    }
}

/// The blocking executor, the async one on its native driver and the async one on sqlx's driver, each on
/// a database of its own, run the same generated operations: every step's result, and the rows left at
/// the end, are the same on all three.
fn equivalence(dialect: Dialect) {
    let b_target = db::target(dialect, "eqb");
    let blocking = tandem_blocking::Database::open(
        b_target.options.clone(),
        tandem_pool::PoolConfig::default(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let drivers = [
        ("eqa", tandem_core::AsyncDriver::Native),
        ("eqs", tandem_core::AsyncDriver::Sqlx),
    ];
    // The targets live as long as the test (a SQLite target's directory goes with it).
    let mut targets = Vec::new();
    let mut asynchronous = Vec::new();
    for (name, driver) in drivers {
        let mut target = db::target(dialect, name);
        target.options.async_driver = driver;
        let db = rt
            .block_on(tandem_async::Database::open(
                target.options.clone(),
                tandem_pool::PoolConfig::default(),
            ))
            .unwrap();
        asynchronous.push((driver, db));
        targets.push(target);
    }
    let config = ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(ops in proptest::collection::vec(op(), 1..14))| {
        blocking.execute(&users::table.drop_table()).unwrap();
        blocking.create_table(&users::table.create_table()).unwrap();
        rt.block_on(async {
            for (_, a) in &asynchronous {
                a.execute(&users::table.drop_table()).await.unwrap();
                a.create_table(&users::table.create_table()).await.unwrap();
            }
        });
        for (i, op) in ops.iter().enumerate() {
            let b = run_blocking(&blocking, op);
            for (driver, a) in &asynchronous {
                let a = rt.block_on(run_async(a, op));
                prop_assert_eq!(&b, &a, "step {} {:?} on {:?}", i, op, driver);
            }
        }
        let all = users::table.select_all().order_by(users::id.asc());
        let all_b: Vec<User> = blocking.fetch_all(&all).unwrap();
        for (driver, a) in &asynchronous {
            let all_a: Vec<User> = rt.block_on(a.fetch_all(&all)).unwrap();
            prop_assert_eq!(&all_b, &all_a, "on {:?}", driver);
        }
    });
    drop(asynchronous);
    drop(rt);
}

/// SQLite: the blocking executor (rusqlite), the async one on rusqlite and on sqlx agree step by step.
fn equivalent_on_sqlite() {
    equivalence(Dialect::Sqlite);
}

/// PostgreSQL: the blocking executor and the async one (both on tokio-postgres), and the async one on
/// sqlx, agree step by step.
fn equivalent_on_postgres() {
    equivalence(Dialect::Postgres);
}

/// MariaDB: the blocking executor (mysql), the async one on mysql_async and on sqlx agree step by step.
fn equivalent_on_mysql() {
    equivalence(Dialect::MySql);
}

fn main() {
    harness::main(
        [
            vec![harness::Case::new(
                "equivalent_on_sqlite",
                equivalent_on_sqlite,
            )],
            vec![
                harness::Case::new("equivalent_on_postgres", equivalent_on_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("equivalent_on_mysql", equivalent_on_mysql)
                    .needs(&[Dialect::MySql]),
            ],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
