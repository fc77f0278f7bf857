//! The DSL's type guarantees, as programs that must not compile: `cases/*.rs`, each beside the compiler's
//! error (`.stderr`), checked by `tests/type_guarantees.rs` (trybuild; `TRYBUILD=overwrite` records a
//! changed error after reading it). Nothing here is a library: this crate only holds the cases.
