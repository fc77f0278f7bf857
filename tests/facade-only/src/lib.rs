//! A user crate with only `tandem` in its dependencies: `#[derive(Table)]` needs no `#[table(crate = …)]`,
//! the derive finds tandem-sql through the facade.

use tandem::prelude::*;

/// A note, declared through the facade alone.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "notes")]
pub struct Note {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// The text.
    pub body: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_derive_works_through_the_facade() {
        let q = notes::table.select(notes::body).filter(notes::id.eq(7));
        let r = q.render(tandem::sql::Dialect::Postgres).unwrap();
        assert_eq!(
            r.sql,
            r#"SELECT "notes"."body" FROM "notes" WHERE "notes"."id" = $1"#
        );
    }
}
