//! The PostgreSQL primary and its hot standby: read-only transactions served by the standby, and a promoted
//! standby taking writes with the pool following by itself.

use super::*;

/// The standby serves read-only transactions (it is in recovery there), sees the primary's commits after
/// the replay lag (measured), and refuses writes; writes go to the primary. Both executors.
pub(crate) fn pg_standby_reads() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let db = tandem_blocking::Database::connect_with(PG_PRIMARY, quick())
        .and_then(|d| d.with_standby(PG_STANDBY))
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS standby_reads", vec![]))
        .unwrap();
    db.execute(&raw(
        "CREATE TABLE standby_reads (id BIGINT PRIMARY KEY)",
        vec![],
    ))
    .unwrap();
    let read_only = TxOptions::default().read_only();
    // The table itself reaches the standby after the replay lag.
    let created = Instant::now();
    while !db
        .transaction_with(read_only.clone(), |tx| {
            tx.fetch_one::<(bool,)>(&raw(
                "SELECT to_regclass('standby_reads') IS NOT NULL",
                vec![],
            ))
        })
        .unwrap()
        .0
    {
        assert!(
            created.elapsed() < Duration::from_secs(10),
            "the standby never saw the table"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut lags = Vec::new();
    for i in 1..=20_i64 {
        db.execute(&raw(
            "INSERT INTO standby_reads VALUES ($1)",
            vec![i.into()],
        ))
        .unwrap();
        let written = Instant::now();
        loop {
            let (in_recovery, seen): (bool, i64) = db
                .transaction_with(read_only.clone(), |tx| {
                    tx.fetch_one(&raw(
                        "SELECT pg_is_in_recovery(), (SELECT COUNT(*) FROM standby_reads)",
                        vec![],
                    ))
                })
                .unwrap();
            assert!(in_recovery, "read-only transactions run on the standby");
            if seen == i {
                lags.push(written.elapsed());
                break;
            }
            assert!(
                written.elapsed() < Duration::from_secs(10),
                "the standby never caught up"
            );
        }
    }
    lags.sort();
    eprintln!(
        "standby: replay lag seen by a read-only transaction: median {:?}, max {:?}",
        lags[lags.len() / 2],
        lags[lags.len() - 1]
    );
    let refused = db.transaction_with(read_only, |tx| {
        tx.execute(&raw("INSERT INTO standby_reads VALUES (0)", vec![]))
    });
    assert!(refused.is_err(), "a standby takes no writes");

    let rt = harness::runtime();
    rt.block_on(async {
        use tandem_async::Executor as _;
        let adb = tandem_async::Database::connect_with(PG_PRIMARY, quick())
            .await?
            .with_standby(PG_STANDBY)
            .await?;
        let tx = adb.begin(TxOptions::default().read_only()).await?;
        let (in_recovery,): (bool,) = tx
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .await?;
        tx.commit().await?;
        assert!(
            in_recovery,
            "async: read-only transactions run on the standby"
        );
        let (primary,): (bool,) = adb
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .await?;
        assert!(!primary, "async: the rest stays on the primary");
        Ok::<_, Error>(())
    })
    .unwrap();
}

/// Failover: pools on `5433,5434?target_session_attrs=read-write` write to the primary; the primary is
/// killed and the standby promoted; both executors' pools go on writing to it by themselves, after a few
/// refused calls while no server is read-write. The pair is rebuilt afterwards.
pub(crate) fn pg_failover() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    struct Rebuild;
    impl Drop for Rebuild {
        fn drop(&mut self) {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("pg-rebuild").status();
        }
    }
    let _rebuild = Rebuild;
    let url =
        "postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/test?target_session_attrs=read-write";
    let db = tandem_blocking::Database::connect_with(url, quick()).unwrap();
    let rt = harness::runtime();
    let adb = rt
        .block_on(tandem_async::Database::connect_with(url, quick()))
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS failover_writes", vec![]))
        .unwrap();
    db.execute(&raw(
        "CREATE TABLE failover_writes (side TEXT, n BIGINT)",
        vec![],
    ))
    .unwrap();
    let write = |side: &str, n: i64| -> Result<u64, Error> {
        let stmt = raw(
            "INSERT INTO failover_writes VALUES ($1, $2)",
            vec![side.into(), n.into()],
        );
        if side == "async" {
            use tandem_async::Executor as _;
            rt.block_on(adb.execute(&stmt))
        } else {
            db.execute(&stmt)
        }
    };
    write("blocking", 0).unwrap();
    write("async", 0).unwrap();

    let dir = cluster_dir();
    let pid_line = std::fs::read_to_string(format!("{dir}/pg-primary/postmaster.pid")).unwrap();
    let pid = pid_line.lines().next().unwrap().trim().to_owned();
    assert!(
        Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    let killed = Instant::now();
    let promoted = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(format!(
            "/usr/lib/postgresql/{}/bin/pg_ctl",
            std::fs::read_to_string(format!("{dir}/pg-standby/PG_VERSION"))
                .unwrap()
                .trim()
        ))
        .args(["promote", "-w", "-D", &format!("{dir}/pg-standby")])
        .status()
        .unwrap();
    assert!(promoted.success(), "pg_ctl promote");
    eprintln!(
        "failover: standby promoted {:?} after the primary died",
        killed.elapsed()
    );
    for side in ["blocking", "async"] {
        let mut refused = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match write(side, 1) {
                Ok(1) => break,
                Ok(n) => panic!("{side}: {n} rows"),
                Err(e) => {
                    assert!(e.is_unreachable(), "{side}: {e:?}");
                    refused += 1;
                    assert!(
                        Instant::now() < deadline,
                        "{side}: no write after failover: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        eprintln!(
            "failover: {side} pool writing to the promoted standby after {refused} refused calls"
        );
        assert!(refused <= 3, "{side}: {refused}");
    }
    let (port,): (i64,) = db
        .fetch_one(&raw(
            "SELECT CAST(current_setting('port') AS BIGINT)",
            vec![],
        ))
        .unwrap();
    assert_eq!(port, 5434, "the pool is on the promoted standby");
}
