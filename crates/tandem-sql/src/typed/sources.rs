//! Type-level lists of tables: what an expression reads and what a query has.
//!
//! A list is `()` or `(Table, Rest)`. `HasTable<T, I>` holds when `T` is in the list at position `I`
//! (`Here`, `There<Here>`, …); the position is inferred, which is why there is no overlap between the two
//! impls. `AllIn<QS, I>` holds when every table of a list is in `QS`.

use std::marker::PhantomData;

use crate::kind::{NotNull, Nullability, Nullable};

/// Position zero of a type-level list.
pub struct Here;
/// Position zero of a type-level list, where the table was LEFT JOINed: its columns may read NULL.
pub struct HereOuter;
/// A table joined with LEFT JOIN, in a query's list of tables.
pub struct LeftJoined<T>(PhantomData<T>);
/// One position further than `I`.
pub struct There<I>(PhantomData<I>);

// ANCHOR: has_table
/// The list `Self` contains table `T` (at position `I`, inferred).
#[diagnostic::on_unimplemented(
    message = "table `{T}` is not part of this query",
    label = "a column of `{T}` is used here, but the query selects FROM and JOINs other tables",
    note = "join `{T}` first, or use a column of a table the query already has"
)]
pub trait HasTable<T, I> {}

impl<T, Rest> HasTable<T, Here> for (T, Rest) {}
impl<T, Rest> HasTable<T, HereOuter> for (LeftJoined<T>, Rest) {}
impl<H, Rest, T, I> HasTable<T, There<I>> for (H, Rest) where Rest: HasTable<T, I> {}
// ANCHOR_END: has_table

/// Every table of the list `Self` is in `QS` (positions `I`, inferred).
#[diagnostic::on_unimplemented(
    message = "this expression uses a table that is not part of the query",
    label = "a column of a table missing from FROM/JOIN is used here",
    note = "the tables this expression reads: `{Self}`; the tables of the query: `{QS}`"
)]
pub trait AllIn<QS, I> {}

impl<QS> AllIn<QS, ()> for () {}
impl<QS, T, Rest, I, Is> AllIn<QS, (I, Is)> for (T, Rest)
where
    QS: HasTable<T, I>,
    Rest: AllIn<QS, Is>,
{
}

/// Appends two lists (`Self` then `Rhs`): the tables read by `a = b` are those of `a` and those of `b`.
pub trait Concat<Rhs> {
    /// The joined list.
    type Out;
}

impl<Rhs> Concat<Rhs> for () {
    type Out = Rhs;
}
impl<H, T: Concat<Rhs>, Rhs> Concat<Rhs> for (H, T) {
    type Out = (H, T::Out);
}

/// Whether a table found at a position was LEFT JOINed (its columns then may be NULL).
#[doc(hidden)]
pub trait PathNull {
    type Null: Nullability;
}
impl PathNull for Here {
    type Null = NotNull;
}
impl PathNull for HereOuter {
    type Null = Nullable;
}
impl<I: PathNull> PathNull for There<I> {
    type Null = I::Null;
}
impl PathNull for () {
    type Null = NotNull;
}
impl<I: PathNull, Is: PathNull> PathNull for (I, Is) {
    type Null = <I::Null as Nullability>::Or<Is::Null>;
}
