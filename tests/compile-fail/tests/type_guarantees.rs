//! Compile-fail tests: each file under `tests/compile-fail/` breaks one type guarantee of the DSL and must
//! not compile, with the error recorded next to it.

/// Every guarantee in `tests/compile-fail/` holds: none of those programs compiles.
#[test]
fn type_guarantees() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile-fail/*.rs");
}
