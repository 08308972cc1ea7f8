#!/usr/bin/env python3
"""SQLite's own limit for Herald's registrations: the ceiling of `bench-server.sh register sqlite`, as pgbench is
PostgreSQL's.

Writes COUNT new registrations into DATABASE, a file whose schema `herald` made (`herald keys list --database-url
sqlite://DATABASE` migrates it), with the statements the server's SQLite store runs for a registration of the
benchmark's body (no tags, no installation id): the read of the token's state, then the upsert that returns
`created_at`, each registration in its own savepoint, BATCH registrations per transaction, WAL, `synchronous = FULL`
and the server's other pragmas. Tokens are random, as wrk's are spread across the key space, and the rows are made
before the clock starts.

Prints one line, "registrations/s cpu_micros_per_registration system_micros_per_registration", and with --table
the devices-table variants that say what each index costs (a copy of the schema in a file of its own per variant).

    scripts/bench/sqlite-registrations.py DATABASE [--count 100000] [--batch 32] [--table]
"""
import argparse
import os
import resource
import sqlite3
import time


def connect(path, schema=None):
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("PRAGMA temp_store = MEMORY")
    db.execute("PRAGMA foreign_keys = ON")
    for statement in schema or []:
        db.execute(statement)
    return db


def upsert_statement(db):
    # The columns of the table in their order, as the server's upsert names them (StoreSQL.upsertDeviceSQL).
    # The push-to-start check's columns (migration 32) are the check's, not a registration's.
    stamps = {"registered_at", "created_at", "updated_at", "invalidated_at", "invalidation_reason", "apns_timestamp",
              "start_misses", "stale_at"}
    columns = [row[1] for row in db.execute("PRAGMA table_info(devices)") if row[1] not in stamps]
    now = f"${len(columns) + 1}"
    placeholders = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in columns[1:])
    sql = (
        f"INSERT INTO devices ({', '.join(columns)}, registered_at, created_at, updated_at) "
        f"VALUES ({placeholders}, {now}, {now}, {now}) ON CONFLICT (token) DO UPDATE SET {updates}, "
        "registered_at = excluded.registered_at, updated_at = excluded.updated_at, invalidated_at = NULL, "
        "invalidation_reason = NULL, apns_timestamp = NULL RETURNING created_at"
    )
    # sqlite3 binds "$1" by name; "?NNN" is the same numbered parameter.
    return sql.replace("$", "?"), columns


def row(columns, token, now):
    values = {"token": token, "topic": "com.example.app", "environment": "development", "token_kind": "device",
              "preferred_languages": "[]", "tags": "[]"}
    return tuple(values.get(c) for c in columns) + (now,)


def measure(db, count, batch):
    upsert, columns = upsert_statement(db)
    start_ms = int(time.time() * 1000)
    rows = [row(columns, os.urandom(32).hex(), start_ms + i) for i in range(count)]
    select = "SELECT tags, invalidated_at, registered_at FROM devices WHERE token = ?1"
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.monotonic()
    for first in range(0, count, batch):
        db.execute("BEGIN IMMEDIATE")
        for values in rows[first:first + batch]:
            db.execute("SAVEPOINT registration")
            db.execute(select, (values[0],)).fetchall()
            db.execute(upsert, values).fetchall()
            db.execute("RELEASE registration")
        db.execute("COMMIT")
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    user = (after.ru_utime - before.ru_utime) * 1e6 / count
    system = (after.ru_stime - before.ru_stime) * 1e6 / count
    return count / elapsed, user + system, system


def fresh(path):
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("database")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--table", action="store_true")
    arguments = parser.parse_args()

    db = connect(arguments.database)
    if not arguments.table:
        rate, cpu, system = measure(db, arguments.count, arguments.batch)
        print(f"{rate:.0f} {cpu:.1f} {system:.1f}")
        return

    schema = [sql for (sql,) in db.execute(
        "SELECT sql FROM sqlite_master WHERE tbl_name = 'devices' AND sql IS NOT NULL ORDER BY type DESC")]
    table, indexes = schema[0], schema[1:]
    db.close()
    without_rowid = table.rstrip().rstrip(";") + " WITHOUT ROWID"
    variants = [
        ("the devices table as migrated", [table] + indexes),
        ("without the token-suffix index", [table] + [i for i in indexes if "token_suffix" not in i]),
        ("`WITHOUT ROWID`", [without_rowid] + indexes),
        ("only the primary key", [table]),
    ]
    scratch = arguments.database + ".variant"
    print("| Devices table | Registrations/s | µs of CPU per registration | of which system |")
    print("| --- | ---: | ---: | ---: |")
    for name, statements in variants:
        fresh(scratch)
        rate, cpu, system = measure(connect(scratch, statements), arguments.count, arguments.batch)
        print(f"| {name} | {rate:,.0f} | {cpu:.1f} | {system:.1f} |", flush=True)
    fresh(scratch)


if __name__ == "__main__":
    main()
