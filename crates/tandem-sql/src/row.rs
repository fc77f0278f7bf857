//! Rows as both executors hand them out: [`Cells`], a driver's row read one cell at a time, and [`Row`],
//! decoded [`Value`]s with their column names for a caller that keeps rows; [`FromRow`] turns either into a
//! tuple or an entity. Errors name the column.

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

    /// A reader that takes the values in order, moving them out (for a hand-written [`FromRow::from_row`]).
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

/// A result row as a driver holds it, read one cell at a time: what [`FromRow::from_cells`] decodes a
/// tuple or an entity from, field by field, without building a [`Row`] (a `Vec` of values and the shared
/// name list) first. Each executor hands its drivers' rows to its sinks this way; a [`Row`] is one too.
pub trait Cells {
    /// What a failed cell gives: the driver's decoding error, or this crate's (a wrong type, a NULL, a
    /// missing column).
    type Error: From<Error>;
    /// The column names, in select-list order, shared by every row of the result.
    fn columns(&self) -> &Arc<[String]>;
    /// How many cells the row has.
    fn len(&self) -> usize;
    /// Whether the row has no cells.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Cell `i`'s value, moved out: each cell is taken at most once.
    fn take(&mut self, i: usize) -> Result<Value, Self::Error>;
    /// The whole row, for a caller that keeps rows (a plan's outcome, a stream's batch).
    fn row(&mut self) -> Result<Row, Self::Error> {
        let values = (0..self.len())
            .map(|i| self.take(i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Row::new(self.columns().clone(), values))
    }
}

impl Cells for Row {
    type Error = Error;
    fn columns(&self) -> &Arc<[String]> {
        &self.columns
    }
    fn len(&self) -> usize {
        self.values.len()
    }
    fn take(&mut self, i: usize) -> Result<Value> {
        let len = self.values.len();
        let cell = self.values.get_mut(i).ok_or_else(|| Error::MissingColumn {
            column: self
                .columns
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("#{i}")),
            len,
        })?;
        Ok(std::mem::replace(cell, Value::Null(crate::SqlType::Text)))
    }
    fn row(&mut self) -> Result<Row> {
        Ok(Row::new(
            self.columns.clone(),
            std::mem::take(&mut self.values),
        ))
    }
}

/// A driver's row whose cells one function decodes by index (`decode(row, i)`), as [`Cells`]: what the
/// drivers whose rows decode in place share (tokio-postgres', sqlx's).
pub struct Decoded<'r, R, E> {
    columns: &'r Arc<[String]>,
    row: &'r R,
    width: usize,
    decode: fn(&R, usize) -> Result<Value, E>,
}

impl<'r, R, E> Decoded<'r, R, E> {
    /// Row `row`, `width` cells wide, of a result whose column names are `columns`.
    pub fn new(
        columns: &'r Arc<[String]>,
        row: &'r R,
        width: usize,
        decode: fn(&R, usize) -> Result<Value, E>,
    ) -> Self {
        Decoded {
            columns,
            row,
            width,
            decode,
        }
    }
}

impl<R, E: From<Error>> Cells for Decoded<'_, R, E> {
    type Error = E;
    fn columns(&self) -> &Arc<[String]> {
        self.columns
    }
    fn len(&self) -> usize {
        self.width
    }
    fn take(&mut self, i: usize) -> Result<Value, E> {
        if i >= self.width {
            return Err(past_the_end(i, self.width).into());
        }
        (self.decode)(self.row, i)
    }
}

/// The error of a [`Cells::take`] past the row's last cell: cell `#i` of a row of `len`.
pub fn past_the_end(i: usize, len: usize) -> Error {
    Error::MissingColumn {
        column: format!("#{i}"),
        len,
    }
}

/// Cell `i` decoded as `T`, for [`FromRow::from_cells`]: `name` names it in errors when the result has no
/// name for it (an entity's field gives its column).
pub fn cell<T: SqlValue, C: Cells + ?Sized>(
    cells: &mut C,
    i: usize,
    name: &str,
) -> Result<T, C::Error> {
    cell_or(cells, i, || name.to_owned())
}

/// [`cell`], with the fallback name built only when an error needs it (tuples name cells `#i`).
fn cell_or<T: SqlValue, C: Cells + ?Sized>(
    cells: &mut C,
    i: usize,
    fallback: impl FnOnce() -> String,
) -> Result<T, C::Error> {
    let named = |cells: &C| cells.columns().get(i).cloned().unwrap_or_else(fallback);
    if i >= cells.len() {
        return Err(Error::MissingColumn {
            column: named(cells),
            len: cells.len(),
        }
        .into());
    }
    let value = cells.take(i)?;
    T::from_value(value).map_err(|source| {
        Error::Decode {
            column: named(cells),
            source,
        }
        .into()
    })
}

/// A type one result row decodes into: tuples of [`SqlValue`]s (by position) and entities.
pub trait FromRow: Sized {
    /// Decodes a kept row.
    fn from_row(row: Row) -> Result<Self>;

    /// Decodes a row straight from a driver's cells, as the executors do. By default through a [`Row`];
    /// tuples and entities read each cell into its field instead.
    fn from_cells<C: Cells + ?Sized>(cells: &mut C) -> Result<Self, C::Error> {
        Ok(Self::from_row(cells.row()?)?)
    }
}

impl FromRow for Row {
    fn from_row(row: Row) -> Result<Self> {
        Ok(row)
    }
}

macro_rules! tuple_from_row {
    ($($t:ident),+) => {
        impl<$($t: SqlValue),+> FromRow for ($($t,)+) {
            fn from_row(mut row: Row) -> Result<Self> {
                Self::from_cells(&mut row)
            }
            #[allow(unused_assignments)]
            fn from_cells<CELLS: Cells + ?Sized>(cells: &mut CELLS) -> Result<Self, CELLS::Error> {
                let mut i = 0;
                Ok(($({
                    let v = cell_or::<$t, CELLS>(cells, i, || format!("#{i}"))?;
                    i += 1;
                    v
                },)+))
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

    /// A driver's row as a test holds it: its values, which of them were taken, and whether anyone asked
    /// for the whole row; `broken` is a cell whose decoding fails in the driver.
    struct Held {
        columns: Arc<[String]>,
        values: Vec<Value>,
        taken: Vec<usize>,
        whole: bool,
        broken: Option<usize>,
    }

    #[derive(Debug, PartialEq)]
    enum HeldError {
        Driver(usize),
        Sql(Error),
    }

    impl From<Error> for HeldError {
        fn from(e: Error) -> Self {
            HeldError::Sql(e)
        }
    }

    impl Cells for Held {
        type Error = HeldError;
        fn columns(&self) -> &Arc<[String]> {
            &self.columns
        }
        fn len(&self) -> usize {
            self.values.len()
        }
        fn take(&mut self, i: usize) -> Result<Value, HeldError> {
            self.taken.push(i);
            match self.broken == Some(i) {
                true => Err(HeldError::Driver(i)),
                false => Ok(self.values[i].clone()),
            }
        }
        fn row(&mut self) -> Result<Row, HeldError> {
            self.whole = true;
            Ok(Row::new(self.columns.clone(), self.values.clone()))
        }
    }

    fn held(broken: Option<usize>) -> Held {
        Held {
            columns: Arc::from(vec!["id".to_owned(), "name".to_owned()]),
            values: vec![Value::I64(7), Value::Text("ada".into())],
            taken: Vec::new(),
            whole: false,
            broken,
        }
    }

    /// A tuple reads each cell once, in order, straight from the driver's row: no `Row` is built; a type
    /// with only `from_row` (here `Row` itself) gets the whole row. The driver's own error comes through
    /// as it is, and this crate's errors still name the column.
    #[test]
    fn tuples_decode_cell_by_cell() {
        let mut h = held(None);
        let got = <(i64, String)>::from_cells(&mut h).unwrap();
        assert_eq!(got, (7, "ada".to_owned()));
        assert_eq!((h.taken.as_slice(), h.whole), (&[0, 1][..], false));

        let mut h = held(None);
        let row = Row::from_cells(&mut h).unwrap();
        assert_eq!((row.len(), h.whole), (2, true));

        let mut h = held(Some(1));
        assert_eq!(
            <(i64, String)>::from_cells(&mut h),
            Err(HeldError::Driver(1))
        );

        let mut h = held(None);
        assert!(matches!(
            <(i64, i64)>::from_cells(&mut h),
            Err(HeldError::Sql(Error::Decode { column, .. })) if column == "name"
        ));
        let mut h = held(None);
        assert!(matches!(
            <(i64, String, i64)>::from_cells(&mut h),
            Err(HeldError::Sql(Error::MissingColumn { column, len: 2 })) if column == "#2"
        ));
        assert_eq!(h.taken, [0, 1], "the missing cell is not asked for");
    }

    /// A kept `Row` is a `Cells` too: its values move out, and `row()` hands the row over whole.
    #[test]
    fn a_row_is_cells() {
        let mut r = row(vec![Value::I64(1), Value::Text("x".into())]);
        assert_eq!(cell::<String, _>(&mut r, 1, "name"), Ok("x".to_owned()));
        assert!(matches!(
            r.take(2),
            Err(Error::MissingColumn { len: 2, .. })
        ));
        let whole = r.row().unwrap();
        assert_eq!(whole.values()[0], Value::I64(1));
        assert!(r.is_empty());
    }
}
