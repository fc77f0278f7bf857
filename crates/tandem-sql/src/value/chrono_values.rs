//! `chrono` types as SQL values (feature `chrono`): dates, times and timestamps, bound as values and read
//! back from text where a driver returns them so.

use super::*;
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

fn parse<T: std::str::FromStr>(text: String, target: &'static str) -> Result<T, ValueError> {
    text.parse().map_err(|_| ValueError::Parse { text, target })
}

plain_value!(NaiveDate => Date, Date; |value| match value {
    Value::Date(d) => Ok(d),
    // SQLite keeps dates as ISO-8601 text.
    Value::Text(s) => parse(s, "NaiveDate"),
    ref v => Err(wrong("NaiveDate", v)),
});

plain_value!(NaiveTime => Time, Time; |value| match value {
    Value::Time(t) => Ok(t),
    Value::Text(s) => parse(s, "NaiveTime"),
    ref v => Err(wrong("NaiveTime", v)),
});

plain_value!(NaiveDateTime => Timestamp, Timestamp; |value| match value {
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
});

plain_value!(DateTime<Utc> => TimestampTz, TimestampTz; |value| match value {
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
});
