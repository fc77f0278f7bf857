# tandem's commands. `just` lists them; `just ci` is the full check CI runs.

set shell := ["bash", "-euo", "pipefail", "-c"]

# List the recipes.
default:
    @just --list

# The main job: a short benchmark matrix on embedded SQLite, every op verified.
main:
    cargo run --release -p tandem-bench

# A tour printing SQL and parameters of a few queries for every dialect.
tour:
    cargo run --example tour

# Every test of the workspace (property, differential and compile-fail tests included), then the
# feature-gated value conversions.
test:
    cargo test
    cargo test -p tandem-sql --features chrono,uuid --lib

# Data under /var/tmp/tandem-cluster; needs root, mariadb-server, galera-4, rsync, PostgreSQL and
# pg_auto_failover (Debian: pg-auto-failover-cli, postgresql-15-auto-failover).
# Start a 3-node Galera cluster on 127.0.0.1:3311-3313 and a PostgreSQL primary (5433) with a standby (5434),
# run by pg_auto_failover (monitor on 5435).
cluster-up:
    .ci/cluster up

# Stop what `cluster-up` started and remove its data (the servers on 3306 and 5432 are not touched).
cluster-down:
    .ci/cluster down

# Which cluster members answer.
cluster-status:
    .ci/cluster status

# tests/cluster/: node deaths, one run across nodes, conflicts, standby reads, failover; then the MySQL
# cases of the repository, async and batch suites on a Galera node.
# The cluster's tests (just cluster-up first).
cluster-test: && galera-suites
    cargo test --test cluster

# The MySQL cases of the repository, async and batch suites on node 1 of the Galera cluster.
galera-suites:
    TANDEM_MYSQL_URL=mysql://root@127.0.0.1:3311/test cargo test --test blocking --test async_exec --test batch -- mysql

# The test files that reach PostgreSQL and MariaDB.
server_suites := "--test blocking --test async_exec --test batch --test connect --test equivalence --test failover --test pool --test stream_memory"

# The suites that run the async executor on the servers, again with sqlx's drivers under it (`?driver=sqlx`
# on every URL the suites open; tests/async_exec and tests/equivalence already run both drivers side by side):
# the local servers, the Galera cluster (just cluster-up first) and the servers the suites start in containers.
sqlx-suites:
    TANDEM_ASYNC_DRIVER=sqlx cargo test --test batch --test failover --test pool --test stream_memory \
        --test observe --test metrics_text --test pool_restart --test server_freeze --test cluster

# The server suites again, on PostgreSQL 15 and MariaDB 10.11 in containers that each test process starts
# (testcontainers, through the engine at DOCKER_HOST; .ci/images makes the images): the local servers unused.
container-suites:
    TANDEM_CONTAINERS=1 cargo test {{server_suites}}

# The suites that exercise what compose.yaml sets up (TLS on PostgreSQL, both engines' types, both
# executors) against it (podman-compose, else docker compose), on ports beside the local servers; its
# containers are removed afterwards.
compose-suites:
    #!/usr/bin/env bash
    set -euo pipefail
    if command -v podman-compose >/dev/null 2>&1; then compose=(podman-compose); engine=podman
    else compose=(docker compose); engine=docker; fi
    project=tandem-compose
    export TANDEM_POSTGRES_PORT=55433 TANDEM_MYSQL_PORT=53307
    down() { "${compose[@]}" -p "$project" down >/dev/null 2>&1 || true; "$engine" network rm -f "${project}_default" >/dev/null 2>&1 || true; }
    down; trap down EXIT
    # podman-compose's own chatter (no systemd here to run health timers) is shown only if `up` fails.
    if ! out=$("${compose[@]}" -p "$project" up -d 2>&1); then echo "$out"; exit 1; fi
    # The services' own health checks (compose.yaml), run until they pass: podman-compose has no --wait.
    for c in $("$engine" ps -q --filter "label=com.docker.compose.project=$project"); do
        for i in $(seq 1 60); do
            "$engine" healthcheck run "$c" >/dev/null 2>&1 && break
            [[ $i -lt 60 ]] || { "$engine" logs "$c"; echo "compose: $c never became healthy"; exit 1; }
            sleep 1
        done
    done
    echo "compose: PostgreSQL on 127.0.0.1:$TANDEM_POSTGRES_PORT, MariaDB on 127.0.0.1:$TANDEM_MYSQL_PORT, healthy"
    TANDEM_POSTGRES_URL=postgres://postgres@127.0.0.1:$TANDEM_POSTGRES_PORT/test \
    TANDEM_MYSQL_URL=mysql://root@127.0.0.1:$TANDEM_MYSQL_PORT/test \
    cargo test --test connect --test blocking --test async_exec

# Formatting and clippy, warnings denied; no import circle between the files of either executor.
lint:
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    .ci/import-cycles crates/tandem-blocking/src crates/tandem-async/src

# The engine features: each executor built with one engine only (no other driver compiled in) passes clippy
# and refuses a URL for a left-out engine with a typed error.
features:
    cargo clippy -p tandem --lib --no-default-features --features sqlite -- -D warnings
    cargo clippy -p tandem-blocking -p tandem-async --lib --no-default-features --features postgres -- -D warnings
    cargo clippy -p tandem-blocking -p tandem-async --lib --no-default-features --features mysql -- -D warnings
    cargo clippy -p tandem-test-support --features testcontainers -- -D warnings
    cargo test -p tandem-blocking --lib --no-default-features --features sqlite
    cargo test -p tandem-async --lib --no-default-features --features sqlite

# tandem-sql must build for the browser.
wasm:
    cargo build -p tandem-sql --target wasm32-unknown-unknown
    cargo build -p tandem-sql --target wasm32-unknown-unknown --features chrono,uuid

# API docs, warnings denied.
doc:
    RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

# The peers' program: `peers/` is a workspace of its own, built into CARGO_TARGET_DIR when that is set.
peers_bin := env("CARGO_TARGET_DIR", justfile_directory() / "peers/target") / "release/tandem-peers"

# The full benchmark matrix on all three engines (PostgreSQL and MariaDB must be running), with the peers
# (sea-query + sqlx 0.8, diesel; diesel's PostgreSQL backend needs libpq-dev) measured in the same run.
bench:
    cd peers && cargo build --release
    cargo run --release -p tandem-bench -- matrix --db sqlite,postgres,mysql --peers "{{peers_bin}}"

# The service scenario alone on all three engines (about half an hour): TechEmpower's database tests over
# HTTP in seven variants, closed loops of 16 to 4,096 connections, open loops with up to ~2,000 requests
# waiting; results, the tables and service.svg under target/tandem-bench/service/.
service:
    cargo run --release -p tandem-bench -- service --db sqlite,postgres,mysql --out target/tandem-bench/service

# Regenerate docs/results.md (and its chart and CSV) from a full run on all engines.
results:
    cd peers && cargo build --release
    cargo run --release -p tandem-bench -- matrix --db sqlite,postgres,mysql --iterations 3 --peers "{{peers_bin}}"
    cp target/tandem-bench/results.md target/tandem-bench/seed.svg target/tandem-bench/e2e.svg target/tandem-bench/service.svg target/tandem-bench/results.csv docs/

# Instructions per op of each e2e and point variant on the servers, client side, counted by callgrind (needs
# valgrind; ~5 min): the figures that do not move with the machine's load. Writes docs/instructions.md.
instructions:
    cargo build --release -p tandem-bench
    cargo run --release -p tandem-bench -- instructions --db postgres,mysql
    cp target/tandem-bench/instructions.md target/tandem-bench/instructions.csv docs/

# A batch job stuck on a row lock, as an operator sees it on each executor: a thread dump of the process (gdb,
# or eu-stack) and a tokio task dump (a build with `--cfg tokio_unstable`, in a target directory of its own),
# each with the spans open and the pool metrics of the same moment. Needs PostgreSQL at `url` and gdb;
# writes target/dumps/{blocking,async}.txt. The book's "Observing both models" shows them, trimmed.
dumps url=env_var_or_default("TANDEM_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"):
    mkdir -p target/dumps
    cargo run --example dumps -- blocking "{{url}}" | tee target/dumps/blocking.txt
    RUSTFLAGS="--cfg tokio_unstable" CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/tokio-unstable" \
        cargo run --example dumps --features taskdump -- async "{{url}}" | tee target/dumps/async.txt

# Point reads with no subscriber and no recorder, before the spans and metrics and after, in one run: the two
# builds take turns (.ci/observe-ab; ~15 min with both servers). Writes docs/observe-ab.md.
observe-ab base="fd839fb" pairs="5":
    .ci/observe-ab {{base}} {{pairs}}

# criterion micro benchmarks (render, bind, decode; the admission gate's cost per acquire).
micro:
    cargo bench --bench render
    cargo bench --bench pool

# The essay's seed workload on every engine: blocking repository vs raw driver, verified.
seed:
    cargo run --release -p tandem-bench -- seed --db sqlite,postgres,mysql --data-size 100000

# The essay's batch job on every engine: both runners at parallelism 1, 4 and 8 against INSERT … SELECT.
e2e:
    cargo run --release -p tandem-bench -- e2e --db sqlite,postgres,mysql --data-size 100000 --parallelism 1,4,8

# The essay job on the standalone MariaDB on 3306 and on node 1 of the Galera cluster (just cluster-up
# first), parallelism 1, 4 and 8, both runners, 100,000 rows; results under target/tandem-bench/.
# The cost of certification: the essay job on one MariaDB and on a Galera node.
bench-galera:
    cargo run --release -p tandem-bench -- e2e --db mysql --data-size 100000 --parallelism 1,4,8 --iterations 3 --out target/tandem-bench/mariadb
    TANDEM_MYSQL_URL=mysql://root@127.0.0.1:3311/test cargo run --release -p tandem-bench -- e2e --db mysql --data-size 100000 --parallelism 1,4,8 --iterations 3 --out target/tandem-bench/galera

# The essay's pool measurements on every engine: acquire/release per preset (hold 0, 1, 5 ms) and 64 workers
# contending for 4, 8 and 16 connections (hold 10, 50 ms), default vs high_throughput.
pool:
    cargo run --release -p tandem-bench -- pool --db sqlite,postgres,mysql

# Where the built playground goes: served by `just playground`, copied into the book.
site := justfile_directory() / "target/playground"
wasm_file := env("CARGO_TARGET_DIR", justfile_directory() / "target") / "wasm32-unknown-unknown/wasm/tandem_playground.wasm"
# SQLite's C source in sqlite-wasm-rs uses C23 `[[noreturn]]`, which Debian's clang 14 reads with this flag.
wasm_cflags := "-fdouble-square-bracket-attributes"

# Build the playground page into target/playground: the crate for wasm32 (opt-level z, LTO), wasm-bindgen,
# the page. No wasm-opt: Debian's binaryen 108 breaks the reference-types table wasm-bindgen emits.
playground-build:
    CFLAGS_wasm32_unknown_unknown="{{wasm_cflags}}" cargo build -p tandem-playground --lib --target wasm32-unknown-unknown --profile wasm
    rm -rf "{{site}}" && mkdir -p "{{site}}/pkg"
    wasm-bindgen --target web --no-typescript --out-dir "{{site}}/pkg" "{{wasm_file}}"
    cp crates/tandem-playground/web/* "{{site}}/"
    @ls -l "{{site}}/pkg/tandem_playground_bg.wasm"

# The playground's WebAssembly weighed with its own parser, and with syn's parser linked in beside it (what
# parsing the input with syn would add at least): raw and gzip sizes, same profile.
wasm-size:
    #!/usr/bin/env bash
    set -euo pipefail
    export CFLAGS_wasm32_unknown_unknown="{{wasm_cflags}}"
    weigh() { printf '%-44s %9d bytes, %8d gzip\n' "$1" "$(stat -c %s "{{wasm_file}}")" "$(gzip -9c "{{wasm_file}}" | wc -c)"; }
    cargo build -q -p tandem-playground --lib --target wasm32-unknown-unknown --profile wasm
    weigh "tandem-playground (hand-written parser)"
    cargo build -q -p tandem-playground --lib --target wasm32-unknown-unknown --profile wasm --features syn-size-probe
    weigh "tandem-playground + syn 2 (full, parsing)"

# The playground's wasm-bindgen tests, in headless Chromium through chromedriver.
playground-wasm-test:
    cd crates/tandem-playground && CFLAGS_wasm32_unknown_unknown="{{wasm_cflags}}" CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" cargo test --target wasm32-unknown-unknown --test web

# Build the playground and serve it on http://127.0.0.1:8000/ (another port: `just playground 8080`).
playground port="8000": playground-build
    cargo run -q -p tandem-playground --bin playground-serve -- "{{site}}" "127.0.0.1:{{port}}"

# The book (mdbook) with the playground inside it, into book/book/. Every `{{{{#include file:anchor}}` must name a
# file and an anchor that exist: mdbook only logs a miss, this recipe fails on it.
book: playground-build book-text
    rm -rf book/book/playground && cp -r "{{site}}" book/book/playground
    @echo "book: book/book/index.html, the playground in book/book/playground/"

# The version of mdbook the book is built with (CI installs this one too).
mdbook_version := "0.5.4"

# The book without building the playground (seconds, where the playground's WebAssembly takes minutes the
# first time): every chapter and its code, the playground's page left out. Installs mdbook when missing.
book-text:
    #!/usr/bin/env bash
    set -euo pipefail
    if ! command -v mdbook >/dev/null 2>&1; then
        echo "book: mdbook is not installed; installing mdbook {{mdbook_version}} with cargo (once: about five minutes on two cores)…"
        cargo install mdbook --version "{{mdbook_version}}" --no-default-features --features search
    fi
    missing=0
    while IFS= read -r inc; do
        spec=${inc#\{\{#include }; spec=${spec%\}\}}
        file=${spec%%:*}; rest=${spec#"$file"}; rest=${rest#:}
        if [[ ! -f "book/src/$file" ]]; then echo "book: missing file $file"; missing=1; continue; fi
        if [[ -n "$rest" && ! "$rest" =~ ^[0-9:]+$ ]] && ! grep -q "ANCHOR: ${rest}\$" "book/src/$file"; then
            echo "book: no anchor '$rest' in $file"; missing=1
        fi
    done < <(grep -ho '{{{{#include [^}]*}}' book/src/*.md)
    [[ $missing -eq 0 ]]
    mkdir -p target
    mdbook build book 2>&1 | tee target/mdbook.log
    if grep -qE "ERROR|WARN" target/mdbook.log; then echo "book: mdbook reported problems"; exit 1; fi
    echo "book: book/book/index.html (text only: \`just book\` adds the playground)"

# The book, to read: the chapters built (mdbook installed the first time) and opened in a browser where one
# can be opened here, else the file to open named.
read: book-text
    #!/usr/bin/env bash
    page="$PWD/book/book/index.html"
    for open in xdg-open open; do
        if command -v "$open" >/dev/null 2>&1 && "$open" "$page" >/dev/null 2>&1; then echo "book: opened $page"; exit 0; fi
    done
    echo "book: open file://$page in a browser"

# The workshop's own program, built by the first `just check` or `just next`.
workshop_bin := env("CARGO_TARGET_DIR", justfile_directory() / "target") / "debug/workshop"

# Runs the workshop's program (built first when its code changed). Not `cargo run -q`: that also hides
# cargo's "Blocking waiting for file lock" (another build holds the target directory), and a check sat
# silent for minutes; here that line is said in plain words and cargo's routine lines are left out.
[private]
[no-exit-message]
_workshop *ARGS:
    #!/usr/bin/env bash
    set -uo pipefail
    [ -x "{{workshop_bin}}" ] || echo "building the workshop's runner first (once: about two minutes on two cores)…"
    cargo run -p workshop-runner -- {{ARGS}} 2> >(sed -u -E \
        -e '/^ +(Compiling|Finished|Running|Fresh|Checking|Locking|Adding|Updating|Downloading|Downloaded) /d' \
        -e 's/^ +Blocking waiting for file lock on (.*)$/   waiting for another cargo on this machine to finish: it holds the lock on the \1 (an editor, another just check, another terminal)…/' >&2)
    status=$?
    # The filter's last lines before the prompt (bash sets $! to it, where it tracks process substitutions).
    [ -z "${!:-}" ] || wait "$!" 2>/dev/null || true
    exit $status

# The workshop: run stage NN's tests on your code (`workshop/NN-*/src/exercise.rs`) with a verdict. By default
# the stage builds on the reference solutions of the stages before it; `just check NN --mine` builds it on
# yours. `--verbose` shows whole failure messages and every compile error.
[no-exit-message]
check NN *FLAGS: (_workshop "check" NN FLAGS)

# The workshop: the first stage whose tests do not pass yet.
[no-exit-message]
next: (_workshop "next")

# The workshop: stage NN's reference solution, and how your code differs from it.
solve NN: (_workshop "solve" NN)

# The workshop: put stage NN's starter back in src/exercise.rs (your file is kept as src/exercise.rs.bak).
[no-exit-message]
reset NN: (_workshop "reset" NN)

# The workshop: remove the server containers `just check` started where PostgreSQL or MariaDB was missing.
workshop-down: (_workshop "down")

# The workshop, for CI: every reference solution passes its tests and every starter fails all of them;
# every mistake planted in a solution (workshop/NN-*/mutants) fails its check; the stages whose checks race
# (threads, tasks, servers) pass TIMES runs in a row (5 in CI, to keep its time; `just workshop-verify 50`
# before changing one of those checks).
workshop-verify TIMES="10":
    cargo test -q -p workshop-harness -p workshop-runner
    cargo run -q -p workshop-runner -- verify
    cargo run -q -p workshop-runner -- repeat {{TIMES}} 04 06 07 08

# Each step of the full check says how long it took, and the end lists them all (CI has a time budget).
# The full check: the playground page (built first: the browser test serves it), tests, the server suites
# on containers and on compose.yaml (a container engine needed), the playground's wasm-bindgen tests in
# Chromium, lints, the wasm build, docs, the book, the workshop's verification, the tour and the main job.
#
# After `just test`, the steps that mostly wait on servers (the sqlx, Galera, container and compose suites:
# node deaths, failovers, containers starting) run beside the steps that mostly compile (lints, feature
# builds, docs, the book, the workshop's planted mistakes), which run at the lowest CPU priority (`nice`) so
# that the timing bounds of the waiting suites see the CPU they would see alone. Each suite isolates itself
# on the servers (a schema or database of its own per test), as it does beside the other tests of its run.
# The lines of the steps beside are marked `[servers]`; a failure there fails the check once both are done.
ci:
    #!/usr/bin/env bash
    set -euo pipefail
    took=()
    step() {
        local started=$SECONDS status=0
        "$@" || status=$?
        took+=("$(printf '%5d s  %s' $((SECONDS - started)) "$*")")
        echo "ci: $* took $((SECONDS - started)) s" >&2
        return $status
    }
    for recipe in playground-build test; do
        step just $recipe
    done
    # The steps beside are those recorded after this many.
    before=${#took[@]}
    beside=$(mktemp -d)
    # A step that fails here still lets the steps beside finish (they are bounded): their servers and
    # containers are stopped by their own suites, never left to the end of a run.
    trap 'wait; rm -rf "$beside"' EXIT
    (
        status=0
        for recipe in sqlx-suites galera-suites container-suites compose-suites; do
            step just $recipe || { status=$?; break; }
        done
        printf '%s  [servers]\n' "${took[@]:before}" > "$beside/took"
        echo "$status" > "$beside/status"
    ) 2>&1 | sed -u 's/^/[servers] /' &
    beside_pid=$!
    for recipe in playground-wasm-test lint features wasm doc book "workshop-verify 5"; do
        # .ci/run may still be installing mdbook in the background (TANDEM_TOOLS_LOCK, held until it ends).
        if [[ "$recipe" == book && -n "${TANDEM_TOOLS_LOCK:-}" ]]; then
            started=$SECONDS
            flock "$TANDEM_TOOLS_LOCK" true
            echo "ci: waited $((SECONDS - started)) s for mdbook's install; its last lines:" >&2
            tail -n 3 "${TANDEM_TOOLS_LOG:-/dev/null}" >&2
        fi
        step nice -n 19 just $recipe
    done
    started=$SECONDS
    wait "$beside_pid" || true
    echo "ci: waited $((SECONDS - started)) s for the server suites beside" >&2
    mapfile -t -O "${#took[@]}" took < "$beside/took"
    status=$(cat "$beside/status")
    if [[ "$status" != 0 ]]; then
        echo "ci: a server suite beside failed (exit $status): see its [servers] lines" >&2
        exit "$status"
    fi
    step cargo run --example tour > /dev/null
    step cargo run --release -p tandem-bench
    # The results parse as what they claim to be: JSON for jq (every record verified), CSV for a CSV reader.
    jq -e '(.records | length) > 0 and all(.records[]; .verified)' target/tandem-bench/results.json > /dev/null
    python3 -c 'import csv, sys; rows = list(csv.DictReader(open(sys.argv[1]))); assert rows and all(r["verified"] == "true" for r in rows), "results.csv"' target/tandem-bench/results.csv
    printf 'ci: the steps and their times (the [servers] steps ran beside the others)\n'
    printf '  %s\n' "${took[@]}"
