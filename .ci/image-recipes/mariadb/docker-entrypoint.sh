#!/bin/bash
# The entrypoint of tandem's locally built `mariadb:10.11` image: the contract of the official image's
# entrypoint that tandem's suites and testcontainers rely on, written for Debian's mariadb-server package.
#
#   MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_ROOT_HOST (%), MARIADB_DATABASE,
#   MARIADB_USER / MARIADB_PASSWORD (the MYSQL_* spellings too), /docker-entrypoint-initdb.d/*.sql and *.sh,
#   arguments starting with `-` passed to `mariadbd` (to the initialisation and the set-up server too, so a
#   setting such as --innodb-log-file-size holds from the first start), the data in /var/lib/mysql.
#
# As in the official image, a first start initialises the data directory, runs a temporary server without
# networking for the set-up (it reports `port: 0`), stops it and then runs the real server: testcontainers
# waits for "mariadbd: ready for connections." and then "port: 3306" on stderr.
set -Eeuo pipefail

if [[ "${1:0:1}" == '-' ]]; then
    set -- mariadbd "$@"
fi

if [[ "$1" != mariadbd && "$1" != mysqld ]]; then
    exec "$@"
fi

datadir=/var/lib/mysql
socket=/run/mysqld/mysqld.sock

if [[ "$(id -u)" == 0 ]]; then
    mkdir -p "$datadir" /run/mysqld
    chown mysql:mysql "$datadir" /run/mysqld
    exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
fi

var() { # the MARIADB_ spelling of a setting, else the MYSQL_ one
    local m="MARIADB_$1" y="MYSQL_$1"
    printf '%s' "${!m:-${!y:-}}"
}

if [[ ! -d "$datadir/mysql" ]]; then
    root_password=$(var ROOT_PASSWORD)
    allow_empty=$(var ALLOW_EMPTY_ROOT_PASSWORD)
    if [[ -z "$root_password" && -z "$allow_empty" ]]; then
        echo "error: the database is uninitialized and no root password was given:" \
             "set MARIADB_ROOT_PASSWORD, or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1" >&2
        exit 1
    fi
    root_host=$(var ROOT_HOST); root_host=${root_host:-%}
    database=$(var DATABASE)
    user=$(var USER)
    password=$(var PASSWORD)

    mariadb-install-db "${@:2}" --datadir="$datadir" --skip-test-db --auth-root-authentication-method=normal \
        --skip-name-resolve --rpm > /dev/null
    # The set-up server: no networking.
    "$@" --skip-networking --socket="$socket" --datadir="$datadir" &
    pid=$!
    for _ in $(seq 1 60); do
        mariadb --protocol=socket --socket="$socket" -uroot -e 'SELECT 1' > /dev/null 2>&1 && break
        sleep 0.5
    done
    quote() { printf "'%s'" "${1//\'/\'\'}"; }
    {
        echo "SET @@SESSION.SQL_LOG_BIN=0;"
        echo "DELETE FROM mysql.global_priv WHERE user = '';"
        if [[ "$root_host" != localhost ]]; then
            echo "CREATE USER 'root'@$(quote "$root_host") IDENTIFIED BY $(quote "$root_password");"
            echo "GRANT ALL ON *.* TO 'root'@$(quote "$root_host") WITH GRANT OPTION;"
        fi
        echo "ALTER USER 'root'@'localhost' IDENTIFIED BY $(quote "$root_password");"
        if [[ -n "$database" ]]; then
            echo "CREATE DATABASE IF NOT EXISTS \`$database\`;"
        fi
        if [[ -n "$user" ]]; then
            echo "CREATE USER $(quote "$user")@'%' IDENTIFIED BY $(quote "$password");"
            [[ -n "$database" ]] && echo "GRANT ALL ON \`$database\`.* TO $(quote "$user")@'%';"
        fi
    } | mariadb --protocol=socket --socket="$socket" -uroot
    for f in /docker-entrypoint-initdb.d/*; do
        case "$f" in
            *.sql) echo "running $f"; mariadb --protocol=socket --socket="$socket" -uroot \
                       ${root_password:+-p"$root_password"} ${database:+"$database"} < "$f" ;;
            *.sh) echo "running $f"; . "$f" ;;
            *) [[ -e "$f" ]] && echo "ignoring $f" ;;
        esac
    done
    kill "$pid"
    wait "$pid" || true
    echo "MariaDB init process done. Ready for start up."
fi

exec "$@"
