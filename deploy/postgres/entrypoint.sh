#!/bin/bash
# Makes the cluster on the first start (POSTGRES_USER, POSTGRES_PASSWORD, POSTGRES_DB as the registry's postgres
# image reads them), then runs the server in the foreground.
set -euo pipefail
: "${PGDATA:=/var/lib/postgresql/data}"
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "postgres-entrypoint: set POSTGRES_PASSWORD: the database accepts connections from the network" >&2
        exit 1
    fi
    password_file=$(mktemp)
    trap 'rm -f "$password_file"' EXIT
    printf '%s' "$POSTGRES_PASSWORD" > "$password_file"
    initdb -D "$PGDATA" -U "$user" --pwfile="$password_file" --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$password_file"
    # Other containers connect over the compose network; each needs the password.
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    if [ "$database" != postgres ]; then
        pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
        psql -v ON_ERROR_STOP=1 -q -U "$user" -d postgres --set=db="$database" <<<'CREATE DATABASE :"db";'
        pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    fi
    echo "postgres-entrypoint: made the cluster in $PGDATA with database $database"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
