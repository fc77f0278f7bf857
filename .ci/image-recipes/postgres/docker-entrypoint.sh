#!/bin/bash
# The entrypoint of tandem's locally built `postgres:15` image: the contract of the official image's
# entrypoint that tandem's suites and testcontainers rely on, written for Debian's postgresql-15 package.
#
#   POSTGRES_USER (postgres), POSTGRES_PASSWORD, POSTGRES_DB (= POSTGRES_USER), POSTGRES_HOST_AUTH_METHOD,
#   POSTGRES_INITDB_ARGS, /docker-entrypoint-initdb.d/*.sql and *.sh, arguments starting with `-` passed to
#   `postgres`, the data in $PGDATA.
#
# As in the official image, a first start initialises the cluster, runs a temporary server for the set-up
# (its log goes to stdout), stops it and then runs the real server (its log on stderr): testcontainers waits
# for "database system is ready to accept connections" on both streams.
set -Eeuo pipefail

if [[ "${1:0:1}" == '-' ]]; then
    set -- postgres "$@"
fi

if [[ "$1" != postgres ]]; then
    exec "$@"
fi

if [[ "$(id -u)" == 0 ]]; then
    mkdir -p "$PGDATA" /var/run/postgresql
    chown postgres:postgres "$PGDATA" /var/run/postgresql
    chmod 700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "${BASH_SOURCE[0]}" "$@"
fi

if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
    user=${POSTGRES_USER:-postgres}
    db=${POSTGRES_DB:-$user}
    auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
    if [[ -z "${POSTGRES_PASSWORD:-}" && "$auth" != trust ]]; then
        echo "error: the database is uninitialized and no password was given:" \
             "set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust to allow every connection without one" >&2
        exit 1
    fi
    pwfile=()
    if [[ -n "${POSTGRES_PASSWORD:-}" ]]; then
        printf '%s\n' "$POSTGRES_PASSWORD" > /tmp/pgpass
        pwfile=(--pwfile=/tmp/pgpass)
    fi
    # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of words, as in the official image
    initdb --username="$user" "${pwfile[@]}" --encoding=UTF8 --locale=C.UTF-8 \
        --auth-local=trust --auth-host="$auth" ${POSTGRES_INITDB_ARGS:-} -D "$PGDATA"
    rm -f /tmp/pgpass
    echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
    echo "host all all all $auth" >> "$PGDATA/pg_hba.conf"

    # The set-up server: no TCP, log to stdout (pg_ctl's own output).
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
    if [[ "$db" != postgres ]]; then
        psql -v ON_ERROR_STOP=1 --username "$user" --dbname postgres -q \
            -c "CREATE DATABASE \"$db\""
    fi
    for f in /docker-entrypoint-initdb.d/*; do
        case "$f" in
            *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 --username "$user" --dbname "$db" -q -f "$f" ;;
            *.sh) echo "running $f"; . "$f" ;;
            *) [[ -e "$f" ]] && echo "ignoring $f" ;;
        esac
    done
    pg_ctl -D "$PGDATA" -m fast -w stop
    echo
    echo "PostgreSQL init process complete; ready for start up."
    echo
fi

exec "$@"
