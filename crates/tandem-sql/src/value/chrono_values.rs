//! `chrono` types as SQL values (feature `chrono`): dates, times and timestamps, bound as values and read
//! back from text where a driver returns them so.

use super::*;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

fn parse<T: std::str::FromStr>(text: String, target: &'static str) -> Result<T, ValueError> {
    text.parse().map_err(|_| ValueError::Parse { text, target })
}

impl SqlValue for NaiveDate {
    type Kind = kind::Date;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::Date;
    fn into_value(self) -> Value {
        Value::Date(self)
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Date(d) => Ok(d),
            // SQLite keeps dates as ISO-8601 text.
            Value::Text(s) => parse(s, "NaiveDate"),
            ref v => Err(wrong("NaiveDate", v)),
        }
    }
}

impl SqlValue for NaiveTime {
    type Kind = kind::Time;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::Time;
    fn into_value(self) -> Value {
        Value::Time(self)
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Time(t) => Ok(t),
            Value::Text(s) => parse(s, "NaiveTime"),
            ref v => Err(wrong("NaiveTime", v)),
        }
    }
}

impl SqlValue for NaiveDateTime {
    type Kind = kind::Timestamp;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::Timestamp;
    fn into_value(self) -> Value {
        Value::Timestamp(self)
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Timestamp(t) => Ok(t),
            Value::Text(s) => {
                // SQLite text uses a space or a `T` between date and time.
                let normalized = s.replacen(' ', "T", 1);
                normalized.parse().map_err(|_| ValueError::Parse {
                    text: s,
                    target: "NaiveDateTime",
                })
            }
            ref v => Err(wrong("NaiveDateTime", v)),
        }
    }
}

impl SqlValue for DateTime<Utc> {
    type Kind = kind::TimestampTz;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::TimestampTz;
    fn into_value(self) -> Value {
        Value::TimestampTz(self)
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::TimestampTz(t) => Ok(t),
            // MySQL DATETIME has no zone: tandem stores UTC there.
            Value::Timestamp(t) => Ok(t.and_utc()),
            // With a zone (RFC 3339), or the portable text of its UTC time.
            Value::Text(s) => match s.parse() {
                Ok(t) => Ok(t),
                Err(_) => s
                    .replacen(' ', "T", 1)
                    .parse::<NaiveDateTime>()
                    .map(|t| t.and_utc())
                    .map_err(|_| ValueError::Parse {
                        text: s,
                        target: "DateTime<Utc>",
                    }),
            },
            ref v => Err(wrong("DateTime<Utc>", v)),
        }
    }
}

macro_rules! from_chrono {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$v(v)
            }
        }
    )*};
}
from_chrono!(NaiveDate => Date, NaiveTime => Time, NaiveDateTime => Timestamp, DateTime<Utc> => TimestampTz);
