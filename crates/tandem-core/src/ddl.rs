//! What `create_table` needs to know about the server: on MySQL/MariaDB, which byte-wise NO PAD collation
//! it has ([`MySqlCollation`]). Both executors ask once per pool with [`mysql_collations`] and render with
//! [`for_server`].

use tandem_sql::ast::{CreateTable, MySqlCollation};
use tandem_sql::{RawSql, raw};

/// The NO PAD binary collations the server knows, one name per row.
pub fn mysql_collations() -> RawSql {
    let names: Vec<String> = MySqlCollation::PREFERENCE
        .iter()
        .map(|c| format!("'{}'", c.name()))
        .collect();
    raw(
        format!(
            "SELECT COLLATION_NAME FROM information_schema.COLLATIONS WHERE COLLATION_NAME IN ({})",
            names.join(", ")
        ),
        vec![],
    )
}

/// `table` with the collation chosen from the names the server listed.
pub fn for_server(table: &CreateTable, collation: MySqlCollation) -> CreateTable {
    CreateTable {
        mysql_collation: collation,
        ..table.clone()
    }
}

/// The collation to use, from [`mysql_collations`]'s rows.
pub fn choose(rows: &[(String,)]) -> MySqlCollation {
    MySqlCollation::choose(rows.iter().map(|(n,)| n.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NO PAD first (MariaDB's, then MySQL 8's); PAD SPACE only when the server has neither.
    #[test]
    fn prefers_no_pad() {
        let rows = |names: &[&str]| -> Vec<(String,)> {
            names.iter().map(|n| ((*n).to_owned(),)).collect()
        };
        assert_eq!(
            choose(&rows(&["utf8mb4_bin", "utf8mb4_nopad_bin"])),
            MySqlCollation::NoPadBin
        );
        assert_eq!(
            choose(&rows(&["utf8mb4_0900_bin"])),
            MySqlCollation::Bin0900
        );
        assert_eq!(choose(&rows(&[])), MySqlCollation::PadBin);
    }
}
