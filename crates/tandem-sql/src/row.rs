//! Rows as both executors hand them out: decoded [`Value`]s with their column names, and [`FromRow`] for
//! turning one into a tuple or an entity. Errors name the column.

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::value::{SqlValue, Value};

/// One result row: its values in select-list order and the shared list of column names.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    columns: Arc<[String]>,
    values: Vec<Value>,
}

impl Row {
    /// A row; `columns` is shared by all rows of one result.
    pub fn new(columns: Arc<[String]>, values: Vec<Value>) -> Self {
        Row { columns, values }
    }

    /// The column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The values.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Number of columns.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the row has no columns.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value of the column named `name`, decoded.
    pub fn get<T: SqlValue>(&self, name: &str) -> Result<T> {
        let i =
            self.columns
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| Error::MissingColumn {
                    column: name.to_owned(),
                    len: self.values.len(),
                })?;
        decode(self.values[i].clone(), name)
    }

    /// A reader that takes the values in order, moving them out.
    pub fn reader(self) -> RowReader {
        RowReader {
            columns: self.columns,
            values: self.values.into_iter(),
            next: 0,
        }
    }
}

fn decode<T: SqlValue>(v: Value, column: &str) -> Result<T> {
    T::from_value(v).map_err(|source| Error::Decode {
        column: column.to_owned(),
        source,
    })
}

/// Takes a row's values one by one, in order.
pub struct RowReader {
    columns: Arc<[String]>,
    values: std::vec::IntoIter<Value>,
    next: usize,
}

impl RowReader {
    /// The next value, decoded as `T`; `name` is used in errors when the row has no name for it.
    pub fn take<T: SqlValue>(&mut self, name: &str) -> Result<T> {
        self.take_with(|| name.to_owned())
    }

    /// The next value, decoded as `T`, named by its position in errors when the row has no name for it.
    pub fn next_value<T: SqlValue>(&mut self) -> Result<T> {
        let i = self.next;
        self.take_with(|| format!("#{i}"))
    }

    /// The shared step; the fallback name is only built when an error needs it.
    fn take_with<T: SqlValue>(&mut self, fallback: impl FnOnce() -> String) -> Result<T> {
        let i = self.next;
        self.next += 1;
        let name = |columns: &[String]| columns.get(i).cloned().unwrap_or_else(fallback);
        match self.values.next() {
            Some(v) => T::from_value(v).map_err(|source| Error::Decode {
                column: name(&self.columns),
                source,
            }),
            None => Err(Error::MissingColumn {
                column: name(&self.columns),
                len: i,
            }),
        }
    }
}

/// A type one result row decodes into: tuples of [`SqlValue`]s (by position) and entities.
pub trait FromRow: Sized {
    /// Decodes the row.
    fn from_row(row: Row) -> Result<Self>;
}

impl FromRow for Row {
    fn from_row(row: Row) -> Result<Self> {
        Ok(row)
    }
}

macro_rules! tuple_from_row {
    ($($t:ident),+) => {
        impl<$($t: SqlValue),+> FromRow for ($($t,)+) {
            fn from_row(row: Row) -> Result<Self> {
                let mut r = row.reader();
                Ok(($(r.next_value::<$t>()?,)+))
            }
        }
    };
}
each_tuple!(tuple_from_row; ; A, B, C, D, E, F, G, H, I, J, K, L);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ValueError;
    use crate::value::SqlType;

    fn row(values: Vec<Value>) -> Row {
        Row::new(Arc::from(vec!["id".to_owned(), "name".to_owned()]), values)
    }

    /// A NULL into a non-Option, a wrong type and a missing column each name the column.
    #[test]
    fn errors_name_the_column() {
        let r = row(vec![Value::I64(1), Value::Null(SqlType::Text)]);
        assert_eq!(
            <(i64, Option<String>)>::from_row(r.clone()).unwrap(),
            (1, None)
        );
        assert_eq!(
            <(i64, String)>::from_row(r.clone()),
            Err(Error::Decode {
                column: "name".into(),
                source: ValueError::UnexpectedNull
            })
        );
        assert!(matches!(
            <(String, Option<String>)>::from_row(r.clone()),
            Err(Error::Decode { column, .. }) if column == "id"
        ));
        assert!(matches!(
            <(i64, Option<String>, i32)>::from_row(r.clone()),
            Err(Error::MissingColumn { len: 2, .. })
        ));
        assert_eq!(r.get::<i64>("id"), Ok(1));
        assert!(matches!(
            r.get::<i64>("nope"),
            Err(Error::MissingColumn { .. })
        ));
    }
}
