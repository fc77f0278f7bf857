#!/bin/bash
# The official image's `healthcheck.sh`, for the two checks compose.yaml uses: `--connect` (the server
# answers over TCP) and `--innodb_initialized` (InnoDB has started).
set -eu
for check in "$@"; do
    case "$check" in
        --connect) mariadb -h 127.0.0.1 -uroot ${MARIADB_ROOT_PASSWORD:+-p"$MARIADB_ROOT_PASSWORD"} -e 'SELECT 1' > /dev/null ;;
        --innodb_initialized)
            [[ "$(mariadb -h 127.0.0.1 -uroot ${MARIADB_ROOT_PASSWORD:+-p"$MARIADB_ROOT_PASSWORD"} -N -e \
                "SELECT 1 FROM information_schema.ENGINES WHERE engine = 'InnoDB' AND support IN ('YES', 'DEFAULT')")" == 1 ]] ;;
        *) echo "healthcheck.sh: $check is not a check this image knows" >&2; exit 2 ;;
    esac
done
