//! How a run's statements read: on a Galera cluster, causally.
//!
//! Galera certifies a commit on every node at once but applies it on the others a moment later, so a
//! statement sent to another node right after may not see it — a keyset page that comes back short, a
//! source count that is too small, a table "that doesn't exist" right after it was created elsewhere. A
//! run decides on what it reads (partition bounds, source counts, pages, whether its tables exist, the
//! lease), so on a Galera node every statement it sends outside a transaction waits first until its node
//! has applied every write the cluster certified before it — MariaDB's `SET STATEMENT wsrep_sync_wait = 7
//! FOR …` (reads, UPDATE and DELETE, INSERT and REPLACE), which also holds while the statement is
//! prepared — and every transaction it opens begins with that wait (`SET STATEMENT wsrep_sync_wait = 1
//! FOR START TRANSACTION`): inside a transaction a statement's own wait is skipped, the server taking
//! the transaction's start as the point it reads from. Measured on a node held back on purpose: a
//! prefixed statement inside a plain transaction failed with "table doesn't exist"; after a causal start
//! it waited and found the table. The run
//! finds out from the server ([`crate::lock::server_probe`]), never from the URL, and changes nothing on
//! the pool's sessions: only its own statements wait.

use std::time::Duration;

use tandem_core::Plan;
use tandem_sql::{Dialect, Render, Rendered};

/// How a run's statements read (see the module docs), and how long its bookkeeping waits for a row lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reads {
    /// Every statement waits for its node to apply what the cluster certified before it.
    pub causal: bool,
    /// MySQL servers that take `SET STATEMENT … FOR` (MariaDB, and the Galera builds of MySQL): the run's
    /// statements bound their row-lock waits by the lease there (`innodb_lock_wait_timeout`, whole
    /// seconds), as `SET LOCAL lock_timeout` does on PostgreSQL — a run must not wait 50 s, and again at
    /// each retry, for a row a stopped run holds locked. Elsewhere the server's own bound applies.
    pub per_statement: bool,
}

impl Reads {
    /// What a MySQL server's probe rows (`Variable_name`, `Value`) of `wsrep_on` and `version` say.
    pub(crate) fn of_mysql(rows: &[(String, String)]) -> Reads {
        let value = |name: &str| {
            (rows.iter())
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let causal = value("wsrep_on").is_some_and(|v| v.eq_ignore_ascii_case("ON"));
        Reads {
            causal,
            per_statement: causal || value("version").is_some_and(|v| v.contains("MariaDB")),
        }
    }

    /// The prefix of a statement: causal on a Galera node, and with a lock wait bounded to `lock_wait`
    /// where the server takes per-statement settings.
    fn prefix(self, lock_wait: Option<Duration>) -> Option<String> {
        let mut settings = Vec::new();
        if self.causal {
            settings.push("wsrep_sync_wait = 7".to_owned());
        }
        if let (true, Some(wait)) = (self.per_statement, lock_wait) {
            let secs = wait.as_millis().div_ceil(1000).max(1);
            settings.push(format!("innodb_lock_wait_timeout = {secs}"));
        }
        (!settings.is_empty()).then(|| format!("SET STATEMENT {} FOR ", settings.join(", ")))
    }

    /// The options of a transaction of this run: on a Galera node its start waits until its node has
    /// applied what the cluster committed before it (a statement's own causal wait does not apply inside a
    /// transaction; see [`tandem_core::TxOptions::causal`]).
    pub(crate) fn tx(self, opts: tandem_core::TxOptions) -> tandem_core::TxOptions {
        match self.causal {
            true => opts.causal(),
            false => opts,
        }
    }

    /// `statement`, read as this run reads.
    pub(crate) fn statement<R: Render>(self, statement: R) -> Prefixed<R> {
        Prefixed(statement, self.prefix(None))
    }

    /// `statement` read as this run reads, its row-lock waits bounded by `lease` where the server takes
    /// per-statement settings.
    pub(crate) fn bounded<R: Render>(self, statement: R, lease: Duration) -> Prefixed<R> {
        Prefixed(statement, self.prefix(Some(lease)))
    }

    /// `plan` with each of its statements read as this run reads.
    pub(crate) fn plan<T>(self, plan: Plan<T>) -> Plan<T> {
        prefixed(plan, self.prefix(None))
    }

    /// `plan` with each statement read as this run reads, its row-lock waits bounded by `lease` where the
    /// server takes per-statement settings.
    pub(crate) fn bounded_plan<T>(self, plan: Plan<T>, lease: Duration) -> Plan<T> {
        prefixed(plan, self.prefix(Some(lease)))
    }
}

fn prefixed<T>(plan: Plan<T>, prefix: Option<String>) -> Plan<T> {
    match prefix {
        Some(p) => plan.map_statements(|r| r.sql.insert_str(0, &p)),
        None => plan,
    }
}

/// A statement that renders with the run's prefix, if it has one.
pub(crate) struct Prefixed<R>(R, Option<String>);

impl<R: Render> Render for Prefixed<R> {
    fn render(&self, dialect: Dialect) -> tandem_sql::Result<Rendered> {
        let mut r = self.0.render(dialect)?;
        if let Some(p) = &self.1 {
            r.sql.insert_str(0, p);
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::{Atomicity, Step};

    /// Causal reads prefix every statement, plans included; bookkeeping bounds its lock waits where the
    /// server takes per-statement settings; otherwise nothing changes.
    #[test]
    fn prefixes() {
        let select = tandem_sql::raw("SELECT 1", vec![]);
        let galera = Reads::of_mysql(&[
            ("wsrep_on".into(), "ON".into()),
            ("version".into(), "10.11.19-MariaDB".into()),
        ]);
        let sql = |r: Prefixed<&tandem_sql::RawSql>| r.render(Dialect::MySql).unwrap().sql;
        assert_eq!(
            sql(galera.statement(&select)),
            "SET STATEMENT wsrep_sync_wait = 7 FOR SELECT 1"
        );
        assert_eq!(
            sql(galera.bounded(&select, Duration::from_millis(1_500))),
            "SET STATEMENT wsrep_sync_wait = 7, innodb_lock_wait_timeout = 2 FOR SELECT 1"
        );
        let mariadb = Reads::of_mysql(&[
            ("wsrep_on".into(), "OFF".into()),
            ("version".into(), "10.11.19-MariaDB".into()),
        ]);
        assert_eq!(sql(mariadb.statement(&select)), "SELECT 1");
        assert_eq!(
            sql(mariadb.bounded(&select, Duration::from_secs(30))),
            "SET STATEMENT innodb_lock_wait_timeout = 30 FOR SELECT 1"
        );
        let mysql = Reads::of_mysql(&[("version".into(), "8.0.36".into())]);
        assert_eq!(
            sql(mysql.bounded(&select, Duration::from_secs(30))),
            "SELECT 1"
        );
        let plan = Plan::new(
            vec![Step::Sql(select.render(Dialect::MySql).unwrap())],
            Atomicity::Together,
            |_| Ok(()),
        );
        let Step::Sql(r) = &galera.plan(plan).steps[0] else {
            panic!("a statement step")
        };
        assert!(r.sql.starts_with("SET STATEMENT wsrep_sync_wait = 7 FOR "));
    }
}
