//! A table of every date, time and UUID type, for the round-trip tests of both executors.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use tandem_sql::prelude::*;

/// An event with every temporal type and a UUID, each once required and once optional.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "events")]
pub struct Event {
    #[column(primary_key, auto_increment)]
    pub id: i64,
    pub uid: uuid::Uuid,
    pub day: NaiveDate,
    pub at: NaiveTime,
    pub local: NaiveDateTime,
    pub utc: DateTime<Utc>,
    pub maybe_uid: Option<uuid::Uuid>,
    pub maybe_utc: Option<DateTime<Utc>>,
}

/// Three events a day apart, with microseconds (the finest precision every engine keeps), one with the
/// optional columns NULL.
pub fn events() -> Vec<Event> {
    (0..3)
        .map(|i: i64| {
            let day = NaiveDate::from_ymd_opt(2024, 2, 28).unwrap() + chrono::Days::new(i as u64);
            let at = NaiveTime::from_hms_micro_opt(23, 59, 58, 123_456 + i as u32).unwrap();
            let local = day.and_time(at);
            Event {
                id: 0,
                uid: uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0011_2233_4455_6677 + i as u128),
                day,
                at,
                local,
                utc: local.and_utc(),
                maybe_uid: (i != 1).then(|| uuid::Uuid::from_u128(i as u128 + 1)),
                maybe_utc: (i != 1).then(|| local.and_utc()),
            }
        })
        .collect()
}
