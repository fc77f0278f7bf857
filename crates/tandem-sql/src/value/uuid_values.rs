//! `uuid::Uuid` as a SQL value (feature `uuid`).

use super::*;

plain_value!(uuid::Uuid => Uuid, Uuid; |value| match value {
    Value::Uuid(u) => Ok(u),
    // SQLite and MySQL keep UUIDs as 16 bytes.
    Value::Bytes(b) => uuid::Uuid::from_slice(&b).map_err(|_| ValueError::Parse {
        text: format!("{b:?}"),
        target: "Uuid",
    }),
    // 16 bytes that happen to be UTF-8 (a MySQL BINARY(16) read by a driver that cannot tell).
    Value::Text(s) if s.len() == 16 => uuid::Uuid::from_slice(s.as_bytes()).map_err(|_| {
        ValueError::Parse {
            text: s,
            target: "Uuid",
        }
    }),
    Value::Text(s) => s.parse().map_err(|_| ValueError::Parse {
        text: s,
        target: "Uuid",
    }),
    ref v => Err(wrong("Uuid", v)),
});
