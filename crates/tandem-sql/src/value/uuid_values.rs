//! `uuid::Uuid` as a SQL value (feature `uuid`).

use super::*;

impl SqlValue for uuid::Uuid {
    type Kind = kind::Uuid;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::Uuid;
    fn into_value(self) -> Value {
        Value::Uuid(self)
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Uuid(u) => Ok(u),
            // SQLite and MySQL keep UUIDs as 16 bytes.
            Value::Bytes(b) => uuid::Uuid::from_slice(&b).map_err(|_| ValueError::Parse {
                text: format!("{b:?}"),
                target: "Uuid",
            }),
            // 16 bytes that happen to be UTF-8 (a MySQL BINARY(16) read by a driver that cannot tell).
            Value::Text(s) if s.len() == 16 => {
                uuid::Uuid::from_slice(s.as_bytes()).map_err(|_| ValueError::Parse {
                    text: s,
                    target: "Uuid",
                })
            }
            Value::Text(s) => s.parse().map_err(|_| ValueError::Parse {
                text: s,
                target: "Uuid",
            }),
            ref v => Err(wrong("Uuid", v)),
        }
    }
}

impl From<uuid::Uuid> for Value {
    fn from(v: uuid::Uuid) -> Value {
        Value::Uuid(v)
    }
}
