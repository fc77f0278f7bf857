//! SQL kind markers: zero-sized types the typed layer uses to decide, at compile time, what may be compared,
//! assigned or aggregated. A column of `i32` has kind [`Int`]; comparing it with a `&str` (kind [`Text`]) does
//! not compile.

use crate::value::SqlType;

/// A kind marker. Implemented only by the unit structs of this module.
pub trait Kind: 'static {
    /// The SQL type values of this kind bind as.
    const SQL_TYPE: SqlType;
}

/// Kinds that arithmetic and `SUM`/`AVG` apply to.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a numeric SQL kind",
    label = "arithmetic, SUM and AVG need an integer or float expression"
)]
pub trait Numeric: Kind {
    /// The kind `SUM` returns: integers widen to `BigInt` (rendered with a cast so every engine agrees).
    type Sum: Kind;
}

/// Kinds that have an order (`<`, `BETWEEN`, `MIN`, `MAX`, `ORDER BY`): all but booleans and bytes in tandem.
#[diagnostic::on_unimplemented(
    message = "`{Self}` values cannot be ordered in tandem-sql",
    label = "use an orderable expression here"
)]
pub trait Ordered: Kind {}

macro_rules! kinds {
    ($($(#[$doc:meta])* $name:ident => $sql:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $name;
        impl Kind for $name {
            const SQL_TYPE: SqlType = $sql;
        }
    )*};
}

kinds! {
    /// `BOOLEAN`.
    Bool => SqlType::Bool;
    /// 16-bit integer.
    SmallInt => SqlType::SmallInt;
    /// 32-bit integer.
    Int => SqlType::Int;
    /// 64-bit integer.
    BigInt => SqlType::BigInt;
    /// 32-bit float.
    Real => SqlType::Real;
    /// 64-bit float.
    Double => SqlType::Double;
    /// Text of any length.
    Text => SqlType::Text;
    /// Bytes.
    Blob => SqlType::Blob;
    /// Calendar date.
    Date => SqlType::Date;
    /// Time of day.
    Time => SqlType::Time;
    /// Timestamp without zone.
    Timestamp => SqlType::Timestamp;
    /// Timestamp in UTC.
    TimestampTz => SqlType::TimestampTz;
    /// UUID.
    Uuid => SqlType::Uuid;
}

impl Numeric for SmallInt {
    type Sum = BigInt;
}
impl Numeric for Int {
    type Sum = BigInt;
}
impl Numeric for BigInt {
    type Sum = BigInt;
}
impl Numeric for Real {
    type Sum = Double;
}
impl Numeric for Double {
    type Sum = Double;
}

macro_rules! ordered {
    ($($k:ident),*) => {$(impl Ordered for $k {})*};
}
ordered!(
    SmallInt,
    Int,
    BigInt,
    Real,
    Double,
    Text,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Uuid
);

/// Whether an expression can be NULL, at compile time: [`NotNull`] or [`Nullable`]. A column is nullable when
/// its field is an `Option`, and every column of a LEFT JOINed table is (it reads NULL where nothing matched);
/// computed expressions are nullable except `COUNT`.
pub trait Nullability: 'static {
    /// Nullable when either is.
    type Or<N: Nullability>: Nullability;
}

/// Never NULL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotNull;
/// May be NULL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nullable;

impl Nullability for NotNull {
    type Or<N: Nullability> = N;
}
impl Nullability for Nullable {
    type Or<N: Nullability> = Nullable;
}

/// A value of nullability `Self` may be read into a Rust type of nullability `Target`: a nullable one only
/// into an `Option`.
#[diagnostic::on_unimplemented(
    message = "a column that may be NULL cannot be read into a non-`Option` type",
    label = "this selected column may be NULL (an `Option` field, or a LEFT JOINed table)",
    note = "read it into an `Option<_>`"
)]
pub trait FitsIn<Target> {}
impl FitsIn<NotNull> for NotNull {}
impl FitsIn<Nullable> for NotNull {}
impl FitsIn<Nullable> for Nullable {}

/// One column of a query's output, as the typed layer knows it: its kind `K` and nullability `N`.
pub struct Cell<K, N>(std::marker::PhantomData<fn() -> (K, N)>);
