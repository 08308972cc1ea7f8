#!/usr/bin/env python3
"""The console's page times with a million registered devices and a thousand sends (issue 10).

Starts `herald serve` on a fresh SQLite database (or a PostgreSQL schema: --postgres URL) so it migrates it, stops
it, fills the tables straight through SQL (far faster than the API, and the pages only read), starts it again, signs
in with an admin key and fetches every console page over loopback, timing each request from the first byte sent to
the last byte read. /health, in the same run, is the floor: what a request costs with no page behind it.

    python3 scripts/bench-console.py --binary .build/release/herald [--devices 1000000] [--sends 1000]
        [--postgres 'postgres://herald:secret@127.0.0.1:5432/herald?sslmode=disable'] [--rounds 15]

Prints one line per page: median and 95th percentile in milliseconds, and the page's size.
"""
import argparse
import http.client
import os
import random
import re
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid

TOPIC = "com.example.app"
SECRET = "bench-console-admin-secret-0123456789abcdef"
MICRO = 1_000_000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, env, port, log):
    process = subprocess.Popen([binary, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 120
    while time.time() < deadline:
        if process.poll() is not None:
            sys.exit(f"herald serve exited with {process.returncode}: see {log.name}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return process
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    sys.exit("herald serve did not answer /health within 2 minutes")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def rows(devices, sends, now):
    """The devices, sends, outcomes and tags to insert, as plain tuples (the same on both backends)."""
    rng = random.Random(7)
    kinds = ["device"] * 90 + ["voip"] * 5 + ["liveactivity-start"] * 5
    platforms = ["iOS"] * 80 + ["macOS"] * 10 + ["watchOS"] * 5 + [None] * 5
    device_rows, tag_rows, tokens = [], [], []
    for n in range(devices):
        token = "%064x" % rng.getrandbits(256)
        tokens.append(token)
        kind = rng.choice(kinds)
        created = now - rng.randrange(30 * 86_400) * MICRO
        tags = ["beta"] if n % 10 == 0 else []
        device_rows.append((
            token, TOPIC, "production" if n % 4 else "development", kind, f"user-{n // 2}",
            str(uuid.UUID(int=rng.getrandbits(128))), '["en"]', "2.1", rng.choice(platforms),
            '["beta"]' if tags else "[]", created, created, created,
            "DeliveryAttributes" if kind == "liveactivity-start" else None,
        ))
        for tag in tags:
            tag_rows.append((tag, token))
    send_rows, outcome_rows = [], []
    reasons = ["Unregistered", "BadDeviceToken", "TopicDisallowed"]
    for n in range(sends):
        send_id = str(uuid.UUID(int=rng.getrandbits(128)))
        created = now - (sends - n) * 600 * MICRO
        # One send to a hundred thousand devices; the others to a hundred.
        count = 100_000 if n == sends - 1 else 100
        accepted = rejected = 0
        for seq in range(1, count + 1):
            token = tokens[(n * 7919 + seq * 104_729) % len(tokens)]
            if seq % 20 == 0:
                rejected += 1
                outcome_rows.append((n + 1, seq, token, "production", "rejected", None, 410, rng.choice(reasons),
                                     created, None, created, "removed"))
            else:
                accepted += 1
                outcome_rows.append((n + 1, seq, token, "production", "accepted", str(uuid.uuid4()), None, None,
                                     None, None, created, None))
        # Outcomes name their send by its ref (migration 27): numbered here as the sends are.
        send_rows.append((send_id, created, created, "every device", "alert push", None, count, accepted, rejected, 0,
                          "completed", n + 1))
    return device_rows, tag_rows, send_rows, outcome_rows, tokens


DEVICE_INSERT = (
    "INSERT INTO devices (token, topic, environment, token_kind, user_id, installation_id, preferred_languages, "
    "app_version, platform, tags, registered_at, created_at, updated_at, activity_type) VALUES ({})"
)
TAG_INSERT = "INSERT INTO device_tags (tag, token) VALUES ({})"
SEND_INSERT = (
    "INSERT INTO sends (id, created_at, updated_at, target, summary, job, target_count, accepted, rejected, failed, "
    "status, ref) VALUES ({})"
)
OUTCOME_INSERT = (
    "INSERT INTO send_outcomes (send_ref, seq, token, environment, outcome, apns_id, status, reason, apns_timestamp, "
    "message, at, action) VALUES ({})"
)


def seed_sqlite(path, data):
    database = sqlite3.connect(path)
    database.execute("PRAGMA journal_mode=WAL")
    devices, tags, sends, outcomes = data
    # The outcomes' tokens are stored as their bytes (migration 27).
    outcomes = [row[:2] + (bytes.fromhex(row[2]),) + row[3:] for row in outcomes]
    for statement, values in zip([DEVICE_INSERT, TAG_INSERT, SEND_INSERT, OUTCOME_INSERT], [devices, tags, sends, outcomes]):
        width = len(values[0]) if values else 0
        if width:
            database.executemany(statement.format(", ".join("?" * width)), values)
    database.commit()
    database.execute("ANALYZE")
    database.close()


def seed_postgres(url, schema, data):
    """COPY through psql: one stream per table."""
    parsed = urllib.parse.urlparse(url)
    env = dict(os.environ, PGPASSWORD=urllib.parse.unquote(parsed.password or ""))
    base = ["psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", parsed.hostname, "-p", str(parsed.port or 5432),
            "-U", urllib.parse.unquote(parsed.username), "-d", parsed.path.lstrip("/")]
    columns = [
        "devices (token, topic, environment, token_kind, user_id, installation_id, preferred_languages, app_version, "
        "platform, tags, registered_at, created_at, updated_at, activity_type)",
        "device_tags (tag, token)",
        "sends (id, created_at, updated_at, target, summary, job, target_count, accepted, rejected, failed, status, ref)",
        "send_outcomes (send_ref, seq, token, environment, outcome, apns_id, status, reason, apns_timestamp, message, "
        "at, action)",
    ]
    devices, tags, sends, outcomes = data
    # The outcomes' tokens are stored as their bytes (migration 27): bytea's hex input.
    outcomes = [row[:2] + ("\\x" + row[2],) + row[3:] for row in outcomes]
    for table, values in zip(columns, [devices, tags, sends, outcomes]):
        def field(value):
            return "\\N" if value is None else str(value).replace("\\", "\\\\").replace("\t", "\\t")
        text = "\n".join("\t".join(field(v) for v in row) for row in values) + "\n"
        subprocess.run(base + ["-c", f"SET search_path TO {schema}; COPY {table} FROM STDIN"], input=text.encode(),
                       env=env, check=True)
    analyze = "; ".join(f"ANALYZE {table}" for table in ["devices", "device_tags", "sends", "send_outcomes"])
    # The refs were given: the sends the server makes next are numbered after them.
    renumber = "SELECT setval(pg_get_serial_sequence('sends', 'ref'), (SELECT max(ref) FROM sends))"
    subprocess.run(base + ["-c", f"SET search_path TO {schema}; {analyze}; {renumber}"], env=env, check=True)


class Browser:
    """A signed-in console session over one keep-alive connection."""

    def __init__(self, port):
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.cookies = {}

    def call(self, method, path, form=None):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = urllib.parse.urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        started = time.perf_counter()
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        elapsed = time.perf_counter() - started
        for name, value in response.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        return response.status, data, elapsed

    def sign_in(self):
        _, form, _ = self.call("GET", "/console/sign-in")
        token = re.search(rb'name="_csrf" value="([^"]+)"', form).group(1).decode()
        status, _, _ = self.call("POST", "/console/sign-in", {"_csrf": token, "key": SECRET})
        if status != 303:
            sys.exit(f"signing in answered {status}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=".build/release/herald")
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--postgres", help="a PostgreSQL URL: measure a fresh schema there instead of SQLite")
    arguments = parser.parse_args()

    work = tempfile.mkdtemp(prefix="herald-bench-console-")
    port = free_port()
    env = dict(os.environ, HERALD_LISTEN=f"127.0.0.1:{port}", HERALD_LOG_LEVEL="warning",
               HERALD_EMULATOR_ADMIN_PORT="off", HERALD_EMULATOR_CA_FILE=f"{work}/ca.pem",
               HERALD_API_KEYS=f"bench:admin+send:{SECRET}")
    schema = None
    if arguments.postgres:
        schema = "bench_console_" + uuid.uuid4().hex[:12]
        separator = "&" if "?" in arguments.postgres else "?"
        env["HERALD_DATABASE_URL"] = f"{arguments.postgres}{separator}schema={schema}"
    else:
        env["HERALD_DATABASE_URL"] = f"sqlite://{work}/herald.sqlite"
    log = open(f"{work}/serve.log", "w")
    print(f"# migrating a fresh {'PostgreSQL schema' if schema else 'SQLite database'} ({work})", flush=True)
    stop(start(arguments.binary, env, port, log))

    now = int(time.time()) * MICRO
    began = time.time()
    *data, tokens = rows(arguments.devices, arguments.sends, now)
    print(f"# generated {len(data[0]):,} devices, {len(data[2]):,} sends, {len(data[3]):,} outcomes "
          f"in {time.time() - began:.0f} s; seeding", flush=True)
    began = time.time()
    if schema:
        seed_postgres(arguments.postgres, schema, data)
    else:
        seed_sqlite(f"{work}/herald.sqlite", data)
    print(f"# seeded in {time.time() - began:.0f} s", flush=True)

    server = start(arguments.binary, env, port, log)
    try:
        browser = Browser(port)
        browser.sign_in()
        small_send = data[2][0][0]
        big_send = data[2][-1][0]
        token = tokens[len(tokens) // 3]
        pages = [
            ("/health (floor)", "/health"),
            ("overview", "/console"),
            ("sends, first page", "/console/sends"),
            ("a send of 100 devices", f"/console/sends/{small_send}"),
            ("a send of 100,000 devices", f"/console/sends/{big_send}"),
            ("devices: last 8 hex digits", f"/console/devices?q={token[-8:]}"),
            ("devices: whole token", f"/console/devices?q={token}"),
            ("devices: by user", "/console/devices?user=user-4242"),
            ("devices: by tag", "/console/devices?tag=beta"),
            ("a device", f"/console/devices/{token}"),
            ("compose", "/console/compose"),
            ("API keys", "/console/keys"),
        ]
        print(f"| page ({arguments.devices:,} devices, {arguments.sends:,} sends) | median ms | p95 ms | bytes |")
        print("|---|---:|---:|---:|")
        for name, path in pages:
            times, size = [], 0
            for round_ in range(arguments.rounds + 2):
                status, body, elapsed = browser.call("GET", path)
                if status != 200:
                    sys.exit(f"{path} answered {status}: {body[:300]!r}")
                size = len(body)
                if round_ >= 2:
                    times.append(elapsed * 1000)
            times.sort()
            p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
            print(f"| {name} | {statistics.median(times):.1f} | {p95:.1f} | {size:,} |", flush=True)
    finally:
        stop(server)


if __name__ == "__main__":
    main()
