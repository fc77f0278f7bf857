// A declared table whose name is not a valid identifier fails the build.
use tandem_sql::prelude::*;

#[derive(Table)]
#[table(name = "users ", module = "users")]
pub struct User {
    #[column(primary_key)]
    pub id: i64,
}

fn main() {}
