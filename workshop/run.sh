#!/usr/bin/env bash
# The workshop's commands (the justfile calls them):
#   check NN   run stage NN's tests on your code, with a readable verdict
#   next       name the first stage whose tests do not pass yet
#   solve NN   show the reference solution of stage NN (and how it differs from your file)
#   verify     for CI: every reference solution passes its tests (and clippy), every starter fails all of them
set -uo pipefail
cd "$(dirname "$0")/.."

stage_dir() {
    local d
    d=$(ls -d workshop/"$1"-* 2>/dev/null | head -n 1)
    if [[ -z "$d" ]]; then
        echo "no stage $1: the stages are $(ls -d workshop/[0-9][0-9]-* | sed 's|workshop/||' | tr '\n' ' ')" >&2
        exit 2
    fi
    echo "$d"
}

package() { sed -n 's/^name = "\(.*\)"/\1/p' "$1/Cargo.toml" | head -n 1; }
chapter() { echo "book/src/$(basename "$1").md"; }
title() { sed -n 's/^description = "\(.*\)"/\1/p' "$1/Cargo.toml" | head -n 1; }

# Runs a stage's tests; leaves the output in $out and the exit code in $rc.
run_tests() {
    local dir=$1 features=${2:-}
    out=$(cargo test -p "$(package "$dir")" $features --color never 2>&1)
    rc=$?
}

verdict() {
    local dir=$1 num
    num=$(basename "$dir" | cut -c1-2)
    echo "== stage $num · $(title "$dir")"
    echo "   chapter: $(chapter "$dir") · your code: $dir/src/lib.rs"
    run_tests "$dir"
    if ! grep -q "^test result:" <<<"$out"; then
        echo "$out" | grep -v "^\s*Compiling\|^\s*Finished\|^\s*Running" | head -n 60
        echo "   ✗ your code does not compile yet (the compiler's words are above)."
        return 1
    fi
    local passed failed
    passed=$(grep -c "^test .* ok$" <<<"$out")
    failed=$(grep -c "^test .* FAILED$" <<<"$out")
    if [[ $rc -eq 0 ]]; then
        echo "   ✓ all $passed tests pass. On to the next stage: just next"
        return 0
    fi
    echo "   $((passed + failed)) tests: $passed pass, $failed to go"
    # Each failing test with the first line of what it said.
    awk '
        /^---- .* stdout ----$/ { name = $2; getline; want = 1; next }
        want && /panicked at/ { getline; printf "   ✗ %s — %s\n", name, $0; want = 0 }
    ' <<<"$out" | head -n 20
    echo "   Read the test in $dir/tests/check.rs for the whole specification; stuck? just solve $num"
    return 1
}

case "${1:-}" in
check)
    [[ -n "${2:-}" ]] || { echo "usage: just check NN" >&2; exit 2; }
    verdict "$(stage_dir "$2")"
    ;;
next)
    for dir in workshop/[0-9][0-9]-*; do
        run_tests "$dir"
        if [[ $rc -ne 0 ]]; then
            num=$(basename "$dir" | cut -c1-2)
            echo "next: stage $num · $(title "$dir") — read $(chapter "$dir"), then: just check $num"
            exit 0
        fi
        echo "✓ stage $(basename "$dir")"
    done
    echo "every stage passes: the workshop is done. The book's last chapter has the measured results."
    ;;
solve)
    [[ -n "${2:-}" ]] || { echo "usage: just solve NN" >&2; exit 2; }
    dir=$(stage_dir "$2")
    echo "== the reference solution of stage $2: $dir/solution/lib.rs"
    cat "$dir/solution/lib.rs"
    if ! diff -q "$dir/src/lib.rs" "$dir/solution/lib.rs" >/dev/null; then
        echo
        echo "== how your $dir/src/lib.rs differs from it"
        diff -u "$dir/src/lib.rs" "$dir/solution/lib.rs"
    fi
    ;;
verify)
    status=0
    # The reference solutions are code learners read: lint them as the project's own code.
    packages=() features=()
    for dir in workshop/[0-9][0-9]-*; do
        packages+=(-p "$(package "$dir")")
        features+=("$(package "$dir")/solution")
    done
    if ! cargo clippy "${packages[@]}" --all-targets --features "$(IFS=,; echo "${features[*]}")" -- -D warnings; then
        echo "✗ the reference solutions do not pass clippy"
        status=1
    fi
    for dir in workshop/[0-9][0-9]-*; do
        name=$(basename "$dir")
        run_tests "$dir" "--features solution"
        if [[ $rc -ne 0 ]]; then
            echo "$out" | tail -n 40
            echo "✗ $name: the reference solution fails its tests"
            status=1
            continue
        fi
        solved=$(grep -c "^test .* ok$" <<<"$out")
        run_tests "$dir"
        passed=$(grep -c "^test .* ok$" <<<"$out")
        failed=$(grep -c "^test .* FAILED$" <<<"$out")
        if ! grep -q "^test result:" <<<"$out"; then
            echo "$out" | tail -n 40
            echo "✗ $name: the starter does not compile"
            status=1
        elif [[ $solved -eq 0 ]]; then
            echo "✗ $name: no test ran"
            status=1
        elif [[ $passed -ne 0 || $failed -ne $solved ]]; then
            echo "✗ $name: the starter passes $passed of $solved tests (every test must fail until the learner works)"
            status=1
        else
            echo "✓ $name: the solution passes $solved tests, the starter fails all $failed"
        fi
    done
    stages=$(ls -d workshop/[0-9][0-9]-* | wc -l)
    if [[ $status -eq 0 ]]; then
        echo "workshop: $stages passed, 0 failed"
    else
        echo "workshop: verification failed"
    fi
    exit $status
    ;;
*)
    echo "usage: workshop/run.sh check NN | next | solve NN | verify" >&2
    exit 2
    ;;
esac
