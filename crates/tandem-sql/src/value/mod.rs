//! Bound parameter values, the SQL column types they belong to, and conversion to and from Rust types.
//!
//! A [`Value`] is what travels next to the SQL text: statements never splice values into their text. NULL is
//! typed ([`Value::Null`] carries the [`SqlType`]) because PostgreSQL wants a type for every parameter.

use std::fmt;

use crate::error::ValueError;
use crate::kind;

/// The SQL types a column can be declared with; each dialect names them in its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SqlType {
    /// `BOOLEAN` (an integer 0/1 on SQLite and MySQL).
    Bool,
    /// 16-bit integer.
    SmallInt,
    /// 32-bit integer.
    Int,
    /// 64-bit integer.
    BigInt,
    /// 32-bit float.
    Real,
    /// 64-bit float.
    Double,
    /// Unbounded text (not indexable on MySQL: use `VarChar` for keys).
    Text,
    /// Text of at most this many characters.
    VarChar(u32),
    /// Bytes.
    Blob,
    /// Calendar date.
    Date,
    /// Time of day.
    Time,
    /// Date and time without time zone.
    Timestamp,
    /// Instant in time (stored as UTC).
    TimestampTz,
    /// UUID.
    Uuid,
}

impl SqlType {
    /// The family this type belongs to: values of one family are interchangeable in comparisons (all integers
    /// are, all floats are, all text is).
    pub fn family(self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::SmallInt | SqlType::Int | SqlType::BigInt => "integer",
            SqlType::Real | SqlType::Double => "float",
            SqlType::Text | SqlType::VarChar(_) => "text",
            SqlType::Blob => "bytes",
            SqlType::Date => "date",
            SqlType::Time => "time",
            SqlType::Timestamp => "timestamp",
            SqlType::TimestampTz => "timestamptz",
            SqlType::Uuid => "uuid",
        }
    }

    /// Whether a value of this run-time kind may be stored in a column of this type.
    pub fn accepts(self, value: &Value) -> bool {
        match value {
            Value::Null(_) => true,
            // Integers widen into floats; everything else must match its family.
            Value::I16(_) | Value::I32(_) | Value::I64(_) => {
                matches!(self.family(), "integer" | "float")
            }
            other => other.sql_type().family() == self.family(),
        }
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::VarChar(n) => write!(f, "varchar({n})"),
            other => f.write_str(other.family_name()),
        }
    }
}

impl SqlType {
    fn family_name(self) -> &'static str {
        match self {
            SqlType::Bool => "bool",
            SqlType::SmallInt => "smallint",
            SqlType::Int => "int",
            SqlType::BigInt => "bigint",
            SqlType::Real => "real",
            SqlType::Double => "double",
            SqlType::Text => "text",
            SqlType::VarChar(_) => "varchar",
            SqlType::Blob => "blob",
            SqlType::Date => "date",
            SqlType::Time => "time",
            SqlType::Timestamp => "timestamp",
            SqlType::TimestampTz => "timestamptz",
            SqlType::Uuid => "uuid",
        }
    }
}

/// A bound parameter or a decoded cell.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value {
    /// NULL of a given type.
    Null(SqlType),
    /// Boolean.
    Bool(bool),
    /// 16-bit integer.
    I16(i16),
    /// 32-bit integer.
    I32(i32),
    /// 64-bit integer.
    I64(i64),
    /// 32-bit float.
    F32(f32),
    /// 64-bit float.
    F64(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Bytes(Vec<u8>),
    /// Calendar date.
    #[cfg(feature = "chrono")]
    Date(chrono::NaiveDate),
    /// Time of day.
    #[cfg(feature = "chrono")]
    Time(chrono::NaiveTime),
    /// Date and time without zone.
    #[cfg(feature = "chrono")]
    Timestamp(chrono::NaiveDateTime),
    /// Instant, UTC.
    #[cfg(feature = "chrono")]
    TimestampTz(chrono::DateTime<chrono::Utc>),
    /// UUID.
    #[cfg(feature = "uuid")]
    Uuid(uuid::Uuid),
}

impl Value {
    /// The SQL type this value binds as.
    pub fn sql_type(&self) -> SqlType {
        match self {
            Value::Null(t) => *t,
            Value::Bool(_) => SqlType::Bool,
            Value::I16(_) => SqlType::SmallInt,
            Value::I32(_) => SqlType::Int,
            Value::I64(_) => SqlType::BigInt,
            Value::F32(_) => SqlType::Real,
            Value::F64(_) => SqlType::Double,
            Value::Text(_) => SqlType::Text,
            Value::Bytes(_) => SqlType::Blob,
            #[cfg(feature = "chrono")]
            Value::Date(_) => SqlType::Date,
            #[cfg(feature = "chrono")]
            Value::Time(_) => SqlType::Time,
            #[cfg(feature = "chrono")]
            Value::Timestamp(_) => SqlType::Timestamp,
            #[cfg(feature = "chrono")]
            Value::TimestampTz(_) => SqlType::TimestampTz,
            #[cfg(feature = "uuid")]
            Value::Uuid(_) => SqlType::Uuid,
        }
    }

    /// A date or time as the text SQLite stores and MySQL parses, the same from every driver so that the
    /// stored values compare in order: `2024-02-29`, `13:45:00.000001`, `2024-02-29 13:45:00.000001`; a
    /// `TimestampTz` as its UTC time in the timestamp form. `None` for other values.
    #[cfg(feature = "chrono")]
    pub fn portable_text(&self) -> Option<String> {
        Some(match self {
            Value::Date(d) => d.format("%Y-%m-%d").to_string(),
            Value::Time(t) => t.format("%H:%M:%S%.6f").to_string(),
            Value::Timestamp(t) => t.format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
            Value::TimestampTz(t) => t.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string(),
            _ => return None,
        })
    }

    /// A short name of what kind of value this is, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null(_) => "NULL",
            other => other.sql_type().family_name(),
        }
    }

    /// Whether this is a NULL.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null(_))
    }

    /// The value as an `i64`, if it is any integer (or a boolean).
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::I16(v) => Some(v.into()),
            Value::I32(v) => Some(v.into()),
            Value::I64(v) => Some(v),
            Value::Bool(v) => Some(v.into()),
            _ => None,
        }
    }
}

/// A Rust type that is stored in one SQL column: how it binds and how it decodes.
///
/// Decoding is lenient where engines differ but meaning does not: an `i64` decodes from any integer that fits,
/// a `bool` from the 0/1 integers SQLite and MySQL return, an `f64` from any number.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in an SQL column",
    label = "tandem-sql has no column mapping for this type",
    note = "supported: bool, i16, i32, i64, f32, f64, String, Vec<u8>, Option<T> of those, and chrono/uuid types behind features"
)]
pub trait SqlValue: Sized + Clone {
    /// The SQL kind marker the typed layer checks comparisons against.
    type Kind: kind::Kind;
    /// The column type a table declaration uses for this Rust type.
    const SQL_TYPE: SqlType;
    /// Whether the column may hold NULL (true only for `Option<T>`).
    const NULLABLE: bool = false;
    /// The same, at compile time: [`kind::Nullable`] for `Option<T>`, [`kind::NotNull`] otherwise.
    type Null: kind::Nullability;
    /// Converts into a bound value.
    fn into_value(self) -> Value;
    /// Converts a decoded cell back.
    fn from_value(value: Value) -> Result<Self, ValueError>;
    /// The value to bind, borrowing text and bytes instead of copying them (see [`ValueRef`]).
    fn to_value_ref(&self) -> ValueRef<'_> {
        ValueRef::Value(self.clone().into_value())
    }
}

/// A value to bind that borrows its text or bytes from the caller's data, so that a driver that binds in
/// place (SQLite, from a blocking thread) copies nothing per cell; everything else is small and held by
/// value. What an executor that must own its parameters (the async one) binds is the owned [`Value`].
#[derive(Clone, Debug, PartialEq)]
pub enum ValueRef<'a> {
    /// Borrowed text.
    Text(&'a str),
    /// Borrowed bytes.
    Bytes(&'a [u8]),
    /// Any other value.
    Value(Value),
}

impl ValueRef<'_> {
    /// The owned value.
    pub fn to_value(&self) -> Value {
        match self {
            ValueRef::Text(s) => Value::Text((*s).to_owned()),
            ValueRef::Bytes(b) => Value::Bytes(b.to_vec()),
            ValueRef::Value(v) => v.clone(),
        }
    }
}

fn wrong(expected: &'static str, found: &Value) -> ValueError {
    if found.is_null() {
        ValueError::UnexpectedNull
    } else {
        ValueError::WrongType {
            expected,
            found: found.kind_name(),
        }
    }
}

/// The `SqlValue` of a type that is never NULL and becomes one [`Value`] variant, and its
/// `From<$t> for Value`: `$t => Variant, Kind` (the kind and the SQL type share a name), optionally
/// `ref Variant` for a type a driver can bind where it is ([`SqlValue::to_value_ref`]), then how a `Value`
/// reads back as `$t` (the body of `from_value`, the value bound to the name given).
macro_rules! plain_value {
    ($t:ty => $variant:ident, $kind:ident $(, ref $by_ref:ident)?; |$value:ident| $from:expr) => {
        impl SqlValue for $t {
            type Kind = kind::$kind;
            type Null = kind::NotNull;
            const SQL_TYPE: SqlType = SqlType::$kind;
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
            $(fn to_value_ref(&self) -> ValueRef<'_> {
                ValueRef::$by_ref(self)
            })?
            fn from_value($value: Value) -> Result<Self, ValueError> {
                $from
            }
        }
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(v)
            }
        }
    };
}

macro_rules! integer_value {
    ($t:ty, $variant:ident, $kind:ident, $name:literal) => {
        plain_value!($t => $variant, $kind; |value| {
            let wide = value.as_i64().ok_or_else(|| wrong($name, &value))?;
            <$t>::try_from(wide).map_err(|_| ValueError::OutOfRange {
                value: wide.to_string(),
                target: $name,
            })
        });
    };
}

integer_value!(i16, I16, SmallInt, "i16");
integer_value!(i32, I32, Int, "i32");
integer_value!(i64, I64, BigInt, "i64");

plain_value!(bool => Bool, Bool; |value| match value {
    Value::Bool(b) => Ok(b),
    ref v => match v.as_i64() {
        Some(0) => Ok(false),
        Some(1) => Ok(true),
        Some(other) => Err(ValueError::OutOfRange {
            value: other.to_string(),
            target: "bool",
        }),
        None => Err(wrong("bool", v)),
    },
});

plain_value!(f64 => F64, Double; |value| match value {
    Value::F64(v) => Ok(v),
    Value::F32(v) => Ok(v.into()),
    // Integers read back from SQLite's REAL affinity or an AVG over integers.
    ref v => v.as_i64().map(|i| i as f64).ok_or_else(|| wrong("f64", v)),
});

plain_value!(f32 => F32, Real; |value| match value {
    Value::F32(v) => Ok(v),
    // SQLite and some drivers widen REAL to double on the way out.
    Value::F64(v) => Ok(v as f32),
    ref v => v.as_i64().map(|i| i as f32).ok_or_else(|| wrong("f32", v)),
});

plain_value!(String => Text, Text, ref Text; |value| match value {
    Value::Text(s) => Ok(s),
    // Drivers that cannot tell text from bytes (MySQL's binary collations) hand over bytes.
    Value::Bytes(b) => String::from_utf8(b).map_err(|e| ValueError::Parse {
        text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        target: "String (the bytes are not UTF-8)",
    }),
    ref v => Err(wrong("String", v)),
});

plain_value!(Vec<u8> => Bytes, Blob, ref Bytes; |value| match value {
    Value::Bytes(b) => Ok(b),
    Value::Text(s) => Ok(s.into_bytes()),
    ref v => Err(wrong("Vec<u8>", v)),
});

impl<T: SqlValue> SqlValue for Option<T> {
    type Kind = T::Kind;
    type Null = kind::Nullable;
    const SQL_TYPE: SqlType = T::SQL_TYPE;
    const NULLABLE: bool = true;
    fn into_value(self) -> Value {
        match self {
            Some(v) => v.into_value(),
            None => Value::Null(T::SQL_TYPE),
        }
    }
    fn to_value_ref(&self) -> ValueRef<'_> {
        match self {
            Some(v) => v.to_value_ref(),
            None => ValueRef::Value(Value::Null(T::SQL_TYPE)),
        }
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Null(_) => Ok(None),
            v => T::from_value(v).map(Some),
        }
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::Text(v.to_owned())
    }
}
impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Value {
        Value::Bytes(v.to_vec())
    }
}
impl<T: SqlValue> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.into_value()
    }
}

#[cfg(feature = "chrono")]
mod chrono_values;

#[cfg(feature = "uuid")]
mod uuid_values;

#[cfg(test)]
mod tests {
    use super::*;

    /// Date-time values round-trip and decode from the ISO-8601 text SQLite stores.
    #[cfg(feature = "chrono")]
    #[test]
    fn chrono_values() {
        use chrono::{NaiveDate, NaiveDateTime};
        let d = NaiveDate::from_ymd_opt(2026, 12, 2).unwrap();
        assert_eq!(NaiveDate::from_value(d.into_value()), Ok(d));
        assert_eq!(
            NaiveDate::from_value(Value::Text("2026-12-02".into())),
            Ok(d)
        );
        let ts = d.and_hms_opt(17, 39, 0).unwrap();
        assert_eq!(
            NaiveDateTime::from_value(Value::Text("2026-12-02 17:39:00".into())),
            Ok(ts)
        );
        assert!(matches!(
            NaiveDate::from_value(Value::Text("yesterday".into())),
            Err(ValueError::Parse { .. })
        ));
        assert_eq!(
            chrono::DateTime::<chrono::Utc>::from_value(Value::Timestamp(ts)),
            Ok(ts.and_utc())
        );
    }

    /// UUIDs round-trip and decode from 16 bytes (SQLite, MySQL) and from text.
    #[cfg(feature = "uuid")]
    #[test]
    fn uuid_values() {
        let u = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        assert_eq!(uuid::Uuid::from_value(u.into_value()), Ok(u));
        assert_eq!(
            uuid::Uuid::from_value(Value::Bytes(u.as_bytes().to_vec())),
            Ok(u)
        );
        assert_eq!(uuid::Uuid::from_value(Value::Text(u.to_string())), Ok(u));
        assert!(uuid::Uuid::from_value(Value::Bytes(vec![1, 2])).is_err());
    }

    /// Every Rust type round-trips through `Value`, and lenient decoding accepts only what keeps the meaning.
    #[test]
    fn conversions() {
        assert_eq!(i64::from_value(Value::I32(7)), Ok(7));
        assert_eq!(
            i16::from_value(Value::I64(70_000)),
            Err(ValueError::OutOfRange {
                value: "70000".into(),
                target: "i16"
            })
        );
        assert_eq!(bool::from_value(Value::I64(1)), Ok(true));
        assert!(bool::from_value(Value::I64(2)).is_err());
        assert_eq!(
            String::from_value(Value::Null(SqlType::Text)),
            Err(ValueError::UnexpectedNull)
        );
        assert_eq!(
            Option::<String>::from_value(Value::Null(SqlType::Text)),
            Ok(None)
        );
        assert_eq!(None::<i32>.into_value(), Value::Null(SqlType::Int));
        assert!(matches!(
            i32::from_value(Value::Text("1".into())),
            Err(ValueError::WrongType { .. })
        ));
        assert_eq!(f64::from_value(Value::I64(3)), Ok(3.0));
        assert!(SqlType::Int.accepts(&Value::I64(1)));
        assert!(!SqlType::Int.accepts(&Value::Text("1".into())));
        assert!(SqlType::VarChar(3).accepts(&Value::Text("abc".into())));
    }
}
