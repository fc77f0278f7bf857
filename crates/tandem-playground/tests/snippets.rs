//! The playground against the compiled DSL: every example of `snippets/queries.rs`, compiled here by rustc
//! with the real `#[derive(Table)]` schema of `snippets/schema.rs`, must come out of the playground (which
//! reads the same text) as the very same statement, and render the same SQL in every dialect.
#![allow(missing_docs)] // the included schema is the playground's default text, kept short for learners

use tandem_sql::ast::Statement;

include!("../snippets/schema.rs");

/// Turns any statement builder into its statement.
trait IntoStatement {
    fn statement(self) -> Statement;
}

impl<QS, O, U> IntoStatement for tandem_sql::typed::SelectQuery<QS, O, U> {
    fn statement(self) -> Statement {
        Statement::Select(self.into_ast().expect("a valid query"))
    }
}
impl<T: tandem_sql::Table, K> IntoStatement for tandem_sql::typed::InsertQuery<T, K> {
    fn statement(self) -> Statement {
        Statement::Insert(self.into_ast().expect("a valid statement"))
    }
}
impl<T: tandem_sql::Table> IntoStatement for tandem_sql::typed::UpdateQuery<T> {
    fn statement(self) -> Statement {
        Statement::Update(self.into_ast().expect("a valid statement"))
    }
}
impl<T: tandem_sql::Table> IntoStatement for tandem_sql::typed::DeleteQuery<T> {
    fn statement(self) -> Statement {
        Statement::Delete(self.into_ast().expect("a valid statement"))
    }
}
impl IntoStatement for tandem_sql::ast::CreateTable {
    fn statement(self) -> Statement {
        Statement::CreateTable(self)
    }
}

fn stmt(q: impl IntoStatement) -> Statement {
    q.statement()
}

include!("../snippets/queries.rs");

/// Each example: the playground's statement equals the compiled one, and so does every dialect's SQL.
#[test]
fn examples_match_the_compiled_dsl() {
    let compiled = examples();
    let menu = tandem_playground::samples::examples();
    assert_eq!(menu.len(), compiled.len(), "every example is in the menu");
    let schema =
        tandem_playground::schema::Schema::parse(tandem_playground::samples::DEFAULT_SCHEMA)
            .unwrap();
    for (id, expected) in compiled {
        let entry = menu
            .iter()
            .find(|e| e.id == id)
            .unwrap_or_else(|| panic!("{id} is not in the menu"));
        let report =
            tandem_playground::run(tandem_playground::samples::DEFAULT_SCHEMA, &entry.query);
        assert!(report.error.is_none(), "{id}: {:?}", report.error);
        let built = report.statement.clone().unwrap();
        assert_eq!(
            built, expected,
            "{id}: the playground built another statement"
        );
        for d in &report.sql {
            let direct = match &expected {
                Statement::CreateTable(c) => c.render_all(d.dialect).map_err(|e| e.to_string()),
                other => tandem_sql::Render::render(other, d.dialect)
                    .map(|r| vec![r])
                    .map_err(|e| e.to_string()),
            };
            assert_eq!(d.rendered, direct, "{id} on {}", d.dialect);
        }
        // And it runs on SQLite.
        match &report.execution {
            Some(Ok(_)) => {}
            other => panic!("{id}: {other:?}"),
        }
        let _ = &schema;
    }
}

/// The default schema the playground shows is the one compiled above: the same table declarations.
#[test]
fn default_schema_matches_the_derive() {
    let schema =
        tandem_playground::schema::Schema::parse(tandem_playground::samples::DEFAULT_SCHEMA)
            .unwrap();
    assert_eq!(
        schema.tables[0].schema,
        *<users::table as tandem_sql::Table>::schema()
    );
    assert_eq!(
        schema.tables[1].schema,
        *<orders::table as tandem_sql::Table>::schema()
    );
}
