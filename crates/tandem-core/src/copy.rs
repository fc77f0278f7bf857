//! PostgreSQL's binary COPY format, encoded without I/O so both executors send the same bytes
//! (<https://www.postgresql.org/docs/current/sql-copy.html>, "Binary Format").

use tandem_sql::ast::TableSchema;
use tandem_sql::{Ident, SqlType, Value};

use crate::error::{Error, Result};

/// The `COPY … FROM STDIN (FORMAT binary)` statement for these columns of the table.
pub fn copy_statement(schema: &TableSchema, columns: &[Ident]) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let cols: Vec<String> = columns.iter().map(|c| quote(c.as_str())).collect();
    format!(
        "COPY {} ({}) FROM STDIN (FORMAT binary)",
        quote(schema.name.as_str()),
        cols.join(", ")
    )
}

fn mismatch(column: &Ident, ty: SqlType, v: &Value) -> Error {
    Error::Sql(tandem_sql::Error::TypeMismatch {
        column: column.to_string(),
        expected: ty,
        found: v.kind_name(),
    })
}

fn narrow<T: TryFrom<i64>>(column: &Ident, ty: SqlType, v: &Value, i: i64) -> Result<T> {
    T::try_from(i).map_err(|_| mismatch(column, ty, v))
}

/// The whole COPY payload: header, one tuple per row typed by the schema, trailer.
pub fn encode_binary(
    schema: &TableSchema,
    columns: &[Ident],
    rows: &[Vec<Value>],
) -> Result<Vec<u8>> {
    let types: Vec<SqlType> = columns
        .iter()
        .map(|c| schema.column(c.as_str()).map(|d| d.ty))
        .collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::with_capacity(19 + rows.len() * (2 + columns.len() * 12));
    out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    out.extend_from_slice(&0i32.to_be_bytes()); // flags
    out.extend_from_slice(&0i32.to_be_bytes()); // header extension length
    let field_count = i16::try_from(columns.len()).map_err(|_| Error::Unsupported {
        dialect: tandem_sql::Dialect::Postgres,
        what: "COPY of more than 32,767 columns".into(),
    })?;
    for row in rows {
        if row.len() != columns.len() {
            return Err(tandem_sql::Error::RowWidth {
                row: 0,
                expected: columns.len(),
                found: row.len(),
            }
            .into());
        }
        out.extend_from_slice(&field_count.to_be_bytes());
        for ((v, &ty), col) in row.iter().zip(&types).zip(columns) {
            if v.is_null() {
                out.extend_from_slice(&(-1i32).to_be_bytes());
                continue;
            }
            let start = out.len();
            out.extend_from_slice(&0i32.to_be_bytes()); // length, patched below
            match (ty, v) {
                (SqlType::Bool, Value::Bool(b)) => out.push(u8::from(*b)),
                (SqlType::SmallInt, _) if v.as_i64().is_some() => {
                    let i: i16 = narrow(col, ty, v, v.as_i64().unwrap_or_default())?;
                    out.extend_from_slice(&i.to_be_bytes());
                }
                (SqlType::Int, _) if v.as_i64().is_some() && !matches!(v, Value::Bool(_)) => {
                    let i: i32 = narrow(col, ty, v, v.as_i64().unwrap_or_default())?;
                    out.extend_from_slice(&i.to_be_bytes());
                }
                (SqlType::BigInt, _) if v.as_i64().is_some() && !matches!(v, Value::Bool(_)) => {
                    out.extend_from_slice(&v.as_i64().unwrap_or_default().to_be_bytes());
                }
                (SqlType::Real, Value::F32(f)) => out.extend_from_slice(&f.to_bits().to_be_bytes()),
                (SqlType::Real, Value::F64(f)) => {
                    out.extend_from_slice(&(*f as f32).to_bits().to_be_bytes())
                }
                (SqlType::Double, Value::F64(f)) => {
                    out.extend_from_slice(&f.to_bits().to_be_bytes())
                }
                (SqlType::Double, Value::F32(f)) => {
                    out.extend_from_slice(&f64::from(*f).to_bits().to_be_bytes())
                }
                (SqlType::Text | SqlType::VarChar(_), Value::Text(s)) => {
                    out.extend_from_slice(s.as_bytes())
                }
                (SqlType::Blob, Value::Bytes(b)) => out.extend_from_slice(b),
                _ => return Err(mismatch(col, ty, v)),
            }
            let len = i32::try_from(out.len() - start - 4).map_err(|_| Error::Unsupported {
                dialect: tandem_sql::Dialect::Postgres,
                what: "a COPY field over 2 GiB".into(),
            })?;
            out[start..start + 4].copy_from_slice(&len.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_sql::ast::ColumnDef;

    /// The payload has PostgreSQL's header, a tuple with typed, length-prefixed fields, and the trailer;
    /// a value of the wrong type is a typed error.
    #[test]
    fn encoding() {
        let id = |s: &str| Ident::new(s.to_owned()).unwrap();
        let mut t = TableSchema::new(id("t"));
        t.columns.push(ColumnDef::new(id("n"), SqlType::Int));
        t.columns.push(ColumnDef::new(id("s"), SqlType::Text));
        let cols = [id("n"), id("s")];
        let bytes = encode_binary(
            &t,
            &cols,
            &[vec![Value::I64(7), Value::Null(SqlType::Text)]],
        )
        .unwrap();
        let mut expected = b"PGCOPY\n\xff\r\n\0".to_vec();
        expected.extend([
            0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 7, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff,
        ]);
        assert_eq!(bytes, expected);
        assert!(
            encode_binary(
                &t,
                &cols,
                &[vec![Value::Text("x".into()), Value::Null(SqlType::Text)]]
            )
            .is_err()
        );
        assert!(
            encode_binary(
                &t,
                &cols,
                &[vec![Value::I64(1 << 40), Value::Null(SqlType::Text)]]
            )
            .is_err()
        );
        assert_eq!(
            copy_statement(&t, &cols),
            r#"COPY "t" ("n", "s") FROM STDIN (FORMAT binary)"#
        );
    }
}
