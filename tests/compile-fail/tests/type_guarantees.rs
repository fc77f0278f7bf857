//! Compile-fail tests: each file under `cases/` breaks one type guarantee of the DSL and must not compile,
//! with the error recorded next to it.

/// Every guarantee in `cases/` holds: none of those programs compiles.
#[test]
fn type_guarantees() {
    let t = trybuild::TestCases::new();
    t.compile_fail("cases/*.rs");
}
