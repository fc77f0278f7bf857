//! Values across the wire: a tandem [`Value`] bound as the type the server inferred for its placeholder
//! ([`Bind`]), and a cell decoded back into a [`Value`] ([`decode`]).

use std::error::Error as StdError;

use bytes::BytesMut;
use tandem_core::{Error, Result};
use tandem_sql::{Dialect, SqlType, Value};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A tandem value bound as whatever integer, float or text type the server inferred for its placeholder, with
/// range checks: PostgreSQL will not take an `i64` for an `INT4` on its own.
#[derive(Debug)]
pub struct Bind<'a>(pub &'a Value);

type BoxError = Box<dyn StdError + Sync + Send>;

fn narrow<T: TryFrom<i64>>(v: i64, ty: &Type) -> Result<T, BoxError> {
    T::try_from(v).map_err(|_| format!("{v} does not fit in {ty}").into())
}

impl ToSql for Bind<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let v = self.0;
        if v.is_null() {
            return Ok(IsNull::Yes);
        }
        if let Some(i) = v.as_i64().filter(|_| !matches!(v, Value::Bool(_))) {
            return match *ty {
                Type::INT2 => narrow::<i16>(i, ty)?.to_sql(ty, out),
                Type::INT4 => narrow::<i32>(i, ty)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                Type::FLOAT4 => (i as f32).to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                _ => Err(format!("cannot bind an integer as {ty}").into()),
            };
        }
        match v {
            Value::Bool(b) => b.to_sql(ty, out),
            Value::F32(f) if *ty == Type::FLOAT8 => f64::from(*f).to_sql(ty, out),
            Value::F32(f) => f.to_sql(ty, out),
            Value::F64(f) if *ty == Type::FLOAT4 => (*f as f32).to_sql(ty, out),
            Value::F64(f) => f.to_sql(ty, out),
            Value::Text(s) => s.as_str().to_sql(ty, out),
            Value::Bytes(b) => b.as_slice().to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Date(d) => d.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Time(t) => t.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Timestamp(t) => t.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::TimestampTz(t) => t.to_sql(ty, out),
            #[cfg(feature = "uuid")]
            Value::Uuid(u) => u.to_sql(ty, out),
            other => Err(Error::Unsupported {
                dialect: Dialect::Postgres,
                what: format!("{} values", other.kind_name()),
            }
            .to_string()
            .into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Cell `i` of a received row as a tandem value, by the column's PostgreSQL type.
pub fn decode(row: &tokio_postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_().clone();
    let get_err = |e: tokio_postgres::Error| Error::decode(Dialect::Postgres, ty.to_string(), e);
    macro_rules! get {
        ($t:ty, $variant:ident) => {
            row.try_get::<_, Option<$t>>(i)
                .map_err(get_err)?
                .map_or(Value::Null(SqlType::$variant), Into::into)
        };
    }
    Ok(match ty {
        Type::BOOL => get!(bool, Bool),
        Type::INT2 => get!(i16, SmallInt),
        Type::INT4 => get!(i32, Int),
        Type::INT8 => get!(i64, BigInt),
        Type::FLOAT4 => get!(f32, Real),
        Type::FLOAT8 => get!(f64, Double),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get!(String, Text)
        }
        Type::BYTEA => get!(Vec<u8>, Blob),
        #[cfg(feature = "chrono")]
        Type::DATE => get!(chrono::NaiveDate, Date),
        #[cfg(feature = "chrono")]
        Type::TIME => get!(chrono::NaiveTime, Time),
        #[cfg(feature = "chrono")]
        Type::TIMESTAMP => get!(chrono::NaiveDateTime, Timestamp),
        #[cfg(feature = "chrono")]
        Type::TIMESTAMPTZ => get!(chrono::DateTime<chrono::Utc>, TimestampTz),
        #[cfg(feature = "uuid")]
        Type::UUID => get!(uuid::Uuid, Uuid),
        Type::OID => row
            .try_get::<_, Option<u32>>(i)
            .map_err(get_err)?
            .map_or(Value::Null(SqlType::BigInt), |v| Value::I64(v.into())),
        other => {
            return Err(Error::Unsupported {
                dialect: Dialect::Postgres,
                what: format!("the column type {other}"),
            });
        }
    })
}
