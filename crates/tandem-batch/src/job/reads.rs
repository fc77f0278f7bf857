//! How a run's statements read: on a Galera cluster, causally.
//!
//! Galera certifies a commit on every node at once but applies it on the others a moment later, so a
//! statement sent to another node right after may not see it — a keyset page that comes back short, a
//! source count that is too small, a table "that doesn't exist" right after it was created elsewhere. A
//! run decides on what it reads (partition bounds, source counts, pages, whether its tables exist, the
//! lease), so on a Galera node every statement it sends waits first until its node has applied every
//! write the cluster certified before it: MariaDB's `SET STATEMENT wsrep_sync_wait = 7 FOR …` (reads,
//! UPDATE and DELETE, INSERT and REPLACE), which also holds while the statement is prepared. The run
//! finds out from the server ([`crate::lock::galera_probe`]), never from the URL, and changes nothing on
//! the pool's sessions: only its own statements wait.

use tandem_core::Plan;
use tandem_sql::{Dialect, Render, Rendered};

/// The prefix that makes a statement a causal read on a Galera node.
const CAUSAL: &str = "SET STATEMENT wsrep_sync_wait = 7 FOR ";

/// How a run's statements read (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reads {
    /// Every statement waits for its node to apply what the cluster certified before it.
    pub causal: bool,
}

impl Reads {
    /// `statement`, read as this run reads.
    pub(crate) fn statement<R: Render>(self, statement: R) -> Causal<R> {
        Causal(statement, self.causal)
    }

    /// `plan` with each of its statements read as this run reads.
    pub(crate) fn plan<T>(self, plan: Plan<T>) -> Plan<T> {
        match self.causal {
            true => plan.map_statements(|r| r.sql.insert_str(0, CAUSAL)),
            false => plan,
        }
    }
}

/// A statement that renders with the causal prefix when the run reads causally.
pub(crate) struct Causal<R>(R, bool);

impl<R: Render> Render for Causal<R> {
    fn render(&self, dialect: Dialect) -> tandem_sql::Result<Rendered> {
        let mut r = self.0.render(dialect)?;
        if self.1 {
            r.sql.insert_str(0, CAUSAL);
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_core::{Atomicity, Step};

    /// Causal reads prefix every statement, plans included; otherwise nothing changes.
    #[test]
    fn causal_prefix() {
        let select = tandem_sql::raw("SELECT 1", vec![]);
        let on = Reads { causal: true };
        assert_eq!(
            on.statement(&select).render(Dialect::MySql).unwrap().sql,
            "SET STATEMENT wsrep_sync_wait = 7 FOR SELECT 1"
        );
        assert_eq!(
            Reads::default()
                .statement(&select)
                .render(Dialect::MySql)
                .unwrap()
                .sql,
            "SELECT 1"
        );
        let plan = Plan::new(
            vec![Step::Sql(select.render(Dialect::MySql).unwrap())],
            Atomicity::Together,
            |_| Ok(()),
        );
        let Step::Sql(r) = &on.plan(plan).steps[0] else {
            panic!("a statement step")
        };
        assert!(r.sql.starts_with(CAUSAL));
    }
}
