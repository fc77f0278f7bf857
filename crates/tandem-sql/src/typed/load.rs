//! Typed loads: which Rust types a query's rows may be read into, checked by the compiler. A query's type
//! carries its output as a tuple of [`Cell`]s (kind and nullability of each selected column), or [`All`] for
//! `SELECT *` of one table; [`Load`] says a Rust type matches it. The executors' `load` takes only such a
//! type; untyped `fetch_*` stays for raw SQL.

use super::select::All;
use super::table::Entity;
use crate::kind::{Cell, FitsIn};
use crate::row::FromRow;
use crate::value::SqlValue;

/// `Self` reads a query whose output is `Out`: a tuple whose fields have the selected columns' kinds, in
/// order (a nullable column only into an `Option`), or the entity of a `SELECT *` table.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be loaded from this query's columns",
    label = "the selected columns are `{Out}`",
    note = "load a tuple of the selected columns' own types, in order (`Option` for a column that may be NULL), or the table's entity from `select_all()`"
)]
pub trait Load<Out>: FromRow {}

/// One field of a loaded tuple reads a selected column `C`: same kind, and an `Option` when it may be NULL.
#[diagnostic::on_unimplemented(
    message = "a field of type `{Self}` cannot read the selected column `{C}`",
    label = "kinds differ, or the column may be NULL and the field is not an `Option`"
)]
pub trait LoadCell<C> {}

impl<V, K, N> LoadCell<Cell<K, N>> for V
where
    V: SqlValue<Kind = K>,
    N: FitsIn<V::Null>,
{
}

impl<E: Entity> Load<All<E::Table>> for E {}

macro_rules! load_tuple {
    ($($t:ident $c:ident),+) => {
        impl<$($t, $c),+> Load<($($c,)+)> for ($($t,)+)
        where
            $($t: LoadCell<$c> + SqlValue),+
        {
        }
    };
}
each_pair_tuple!(load_tuple; ; A CA, B CB, C CC, D CD, E CE, F CF, G CG, H CH);
