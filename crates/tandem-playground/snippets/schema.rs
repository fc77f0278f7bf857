use tandem_sql::prelude::*;

/// A user.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "users", index(age))]
pub struct User {
    #[column(primary_key, auto_increment)]
    pub id: i64,
    #[column(varchar = 100, unique)]
    pub name: String,
    pub age: i32,
    pub email: Option<String>,
}

/// An order placed by a user.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "orders", unique_index(user_id, code))]
pub struct Order {
    #[column(primary_key, auto_increment)]
    pub id: i64,
    pub user_id: i64,
    #[column(varchar = 20)]
    pub code: String,
    pub total: f64,
    #[column(default = false)]
    pub shipped: bool,
}
