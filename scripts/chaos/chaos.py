#!/usr/bin/env python3
"""Herald's database fault runs (docs/reliability.md, "Database faults, measured"): scripts/chaos.sh calls this.

Each run: a PostgreSQL cluster of its own on 127.0.0.1 (and a streaming standby for the failover), `herald emulator
--counting-only`, one `herald serve` whose database connections go through a TCP proxy in this script, DEVICES devices,
one background send to all of them paced at RATE a second. At FAULT_AT of it the fault starts; while it lasts a prober
registers a new device and reads the send every 200 ms (the slowest answer, and which registrations were answered 201).
After the send ends: lost (devices the emulator never accepted), duplicates (apns-ids it got twice), time to resume
(from the database's return to the next notification the emulator accepts), acknowledged registrations missing from
the database that survived; then the fault again and SIGTERM: how long the server takes to stop.

Scenarios:
  restart    pg_ctl restart -m immediate (a crash and restart, about half a second)
  outage     pg_ctl stop -m immediate, 30 s, start
  failover   the primary crashes; its synchronous standby is promoted 15 s later; Herald has both hosts in its URL
  partition  the proxy holds every byte for 30 s, then delivers them
  silent     the proxy drops every open connection's bytes for good (a NAT that lost its state); new ones work

Servers bind to 127.0.0.1 only, on free ports, and every process is stopped at the end.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TOPIC = "com.example.app"
SECRET = "chaos-secret-0123456789abcdef0123456789abcdef"


def log(message):
    print(f"==> {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, timeout=10.0):
    """(status, parsed JSON or text, seconds); status 0 when no answer came within `timeout`."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {SECRET}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, text = answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    except (urllib.error.URLError, TimeoutError, ConnectionError, socket.timeout):
        status, text = 0, ""
    seconds = time.monotonic() - started
    try:
        return status, json.loads(text), seconds
    except ValueError:
        return status, text, seconds


class FaultProxy:
    """A TCP proxy from a local port to PostgreSQL that breaks the path as a network does."""

    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.mode = "pass"  # pass | refuse | blackhole | silent
        self.lock = threading.Lock()
        self.condition = threading.Condition(self.lock)
        self.pairs = []  # (client, upstream, generation)
        self.generation = 0
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def set_mode(self, mode):
        with self.condition:
            self.mode = mode
            if mode == "refuse":
                for client, upstream, _ in self.pairs:
                    for s in (client, upstream):
                        try:
                            s.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                        s.close()
                self.pairs = []
            if mode == "silent":
                # The connections open now go silent for good; new ones pass.
                self.generation += 1
                self.mode = "pass"
            self.condition.notify_all()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.mode == "refuse":
                    client.close()
                    continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                generation = self.generation
                self.pairs.append((client, upstream, generation))
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target, generation), daemon=True).start()

    def _pump(self, source, target, generation):
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                for s in (source, target):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                return
            with self.condition:
                # Held (not lost) while the path is blackholed: delivered when it heals.
                while self.mode == "blackhole":
                    self.condition.wait()
                silenced = self.generation != generation
            if silenced:
                continue  # dropped: this connection's path is gone for good
            try:
                target.sendall(data)
            except OSError:
                return


class Postgres:
    """Throwaway clusters run as the postgres user (PostgreSQL refuses root)."""

    def __init__(self, work):
        versions = sorted(os.listdir("/usr/lib/postgresql"), key=lambda v: int(v) if v.isdigit() else 0)
        self.bin = f"/usr/lib/postgresql/{versions[-1]}/bin"
        self.work = work
        self.as_pg = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if os.getuid() == 0:
            shutil.chown(work, "postgres", "postgres")

    def run(self, *args, check=True):
        return subprocess.run(self.as_pg + [f"{self.bin}/{args[0]}", *args[1:]], check=check,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def start(self, name, port):
        data = f"{self.work}/{name}"
        self.run("pg_ctl", "-D", data, "-l", f"{data}.log", "-w", "-t", "60", "-o",
                 f"-c listen_addresses=127.0.0.1 -p {port} -k {self.work} -c max_connections=200 "
                 "-c shared_buffers=256MB", "start")

    def stop(self, name, mode="immediate", check=True):
        self.run("pg_ctl", "-D", f"{self.work}/{name}", "-m", mode, "-w", "stop", check=check)

    def make_primary(self, port):
        self.run("initdb", "-D", f"{self.work}/primary", "-U", "postgres", "--auth-local=trust", "--auth-host=trust")
        self.start("primary", port)
        self.psql(port, "CREATE ROLE herald LOGIN", "CREATE DATABASE herald OWNER herald", database="postgres")

    def make_standby(self, primary_port, port):
        self.run("pg_basebackup", "-h", "127.0.0.1", "-p", str(primary_port), "-U", "postgres",
                 "-D", f"{self.work}/standby", "-R", "-X", "stream", "--checkpoint=fast")
        self.start("standby", port)
        # Synchronous replication: a commit is answered once the standby has its WAL, so "acknowledged and missing
        # after the failover" measures Herald (an answer before its commit), not asynchronous replication's window.
        # Asynchronously, a registration answered a few milliseconds before the crash was lost in one run of four.
        self.psql(primary_port, "ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()",
                  database="postgres")

    def psql(self, port, *statements, database="herald"):
        args = ["psql", "-qAt", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                "-d", database]
        for statement in statements:
            args += ["-c", statement]
        return self.run(*args).stdout

    def stop_all(self):
        for name in ("primary", "standby"):
            if os.path.exists(f"{self.work}/{name}/postmaster.pid"):
                self.stop(name, check=False)


class Run:
    def __init__(self, options, scenario, herald, work):
        self.options, self.scenario, self.herald, self.work = options, scenario, herald, work
        self.processes = []
        self.pg = Postgres(work)

    # -- setup ---------------------------------------------------------------------------------------------------
    def start(self):
        self.primary_port, self.standby_port = free_port(), free_port()
        self.pg.make_primary(self.primary_port)
        if self.scenario == "failover":
            self.pg.make_standby(self.primary_port, self.standby_port)
            url = (f"postgres://herald:x@127.0.0.1:{self.primary_port},127.0.0.1:{self.standby_port}/herald"
                   "?sslmode=disable&target_session_attrs=read-write")
        else:
            self.proxy = FaultProxy(self.primary_port)
            url = f"postgres://herald:x@127.0.0.1:{self.proxy.port}/herald?sslmode=disable"
        self.url = url
        self.production, self.development, self.admin = free_port(), free_port(), free_port()
        self.spawn("emulator", [self.herald, "emulator", "--production-port", str(self.production),
                                "--development-port", str(self.development), "--admin-port", str(self.admin),
                                "--ca-file", f"{self.work}/ca.pem", "--counting-only"])
        self.wait_for(f"http://127.0.0.1:{self.admin}/health")
        # Migrates, then the devices in one statement (half each environment).
        token = "ff" * 32
        for command in (["tokens", "add", token, "--debug"], ["tokens", "remove", token]):
            subprocess.run([self.herald, *command, "--database-url", url], check=True, stdout=subprocess.DEVNULL)
        now = int(time.time() * 1e6) - 10_000_000
        self.pg.psql(self.primary_port, f"""
            INSERT INTO devices (token, topic, environment, token_kind, registered_at, created_at, updated_at)
            SELECT lpad(to_hex(i), 64, '0'), '{TOPIC}', CASE WHEN i % 2 = 1 THEN 'development' ELSE 'production' END,
                   'device', {now}, {now}, {now} FROM generate_series(1, {self.options.devices}) AS i""",
                     "VACUUM ANALYZE devices")
        if self.scenario == "failover":
            self.pg.psql(self.primary_port, "SELECT 1")  # the standby replays the rows before the send starts
            time.sleep(1)
        self.port = free_port()
        self.start_server()

    def start_server(self):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("HERALD_")}
        environment.update({
            "HERALD_LISTEN": f"127.0.0.1:{self.port}", "HERALD_DATABASE_URL": self.url, "HERALD_RATE_LIMIT": "0",
            "HERALD_LOG_LEVEL": os.environ.get("CHAOS_LOG_LEVEL", "notice"), "HERALD_APNS": "custom",
            "HERALD_APNS_PRODUCTION_PORT": str(self.production), "HERALD_APNS_DEVELOPMENT_PORT": str(self.development),
            "HERALD_APNS_CA_FILE": f"{self.work}/ca.pem", "HERALD_KEY_FILE": f"{self.work}/AuthKey_EMULATOR01.p8",
            "HERALD_TEAM_ID": "EMULATORTM", "HERALD_TOPIC": TOPIC, "HERALD_API_KEYS": f"chaos:send:{SECRET}",
            "HERALD_INSTANCE_ID": "chaos-1",
        })
        self.server_log = open(f"{self.work}/serve.log", "w")
        self.server = subprocess.Popen([self.herald, "serve"], env=environment, cwd=self.work,
                                       stdout=self.server_log, stderr=subprocess.STDOUT)
        self.processes.append(self.server)
        self.wait_for(f"http://127.0.0.1:{self.port}/ready")

    def spawn(self, name, arguments):
        process = subprocess.Popen(arguments, cwd=self.work, stdout=open(f"{self.work}/{name}.log", "w"),
                                   stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    @staticmethod
    def wait_for(url, seconds=120):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status, _, _ = http("GET", url, timeout=2)
            if status == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{url} did not answer 200 within {seconds} s")

    def counters(self):
        _, body, _ = http("GET", f"http://127.0.0.1:{self.admin}/counters", timeout=5)
        return body if isinstance(body, dict) else {"accepted": 0, "duplicateApnsIds": 0}

    # -- the fault -----------------------------------------------------------------------------------------------
    def fault(self):
        """Starts the fault; returns the function that ends it (None when it ends by itself)."""
        if self.scenario == "restart":
            # With its log file: a server started by pg_ctl would otherwise hold this script's pipe open for good.
            self.pg.run("pg_ctl", "-D", f"{self.work}/primary", "-l", f"{self.work}/primary.log", "-m", "immediate",
                        "-w", "restart", "-o",
                        f"-c listen_addresses=127.0.0.1 -p {self.primary_port} -k {self.work}")
            return None
        if self.scenario == "outage":
            self.pg.stop("primary")
            return lambda: self.pg.start("primary", self.primary_port)
        if self.scenario == "failover":
            self.pg.stop("primary")
            return lambda: self.pg.run("pg_ctl", "-D", f"{self.work}/standby", "-w", "-t", "60", "promote")
        if self.scenario == "partition":
            self.proxy.set_mode("blackhole")
            return lambda: self.proxy.set_mode("pass")
        if self.scenario == "silent":
            self.proxy.set_mode("silent")
            return None
        raise ValueError(self.scenario)

    @property
    def fault_seconds(self):
        return {"restart": 0, "outage": 30, "failover": 15, "partition": 30, "silent": 0}[self.scenario]

    def probe(self, stop, results, send_id):
        """Every 200 ms: a new registration and a read of the send; the slowest answer, and tokens answered 201."""
        n = 0
        while not stop.is_set():
            n += 1
            token = f"c4a0{n:060x}"
            started = time.monotonic()
            status, _, seconds = http("POST", f"http://127.0.0.1:{self.port}/api/token",
                                      {"token": token, "debug": False}, timeout=60)
            results["slowest"] = max(results["slowest"], seconds)
            results["log"].append(f"{started:.3f} POST /api/token {status} {seconds:.3f}")
            results["answers"].append(status)
            if status == 201:
                results["acknowledged"].append(token)
            started = time.monotonic()
            status, _, seconds = http("GET", f"http://127.0.0.1:{self.port}/api/sends/{send_id}?limit=1", timeout=60)
            results["slowest"] = max(results["slowest"], seconds)
            results["log"].append(f"{started:.3f} GET /api/sends/{{id}} {status} {seconds:.3f}")
            stop.wait(0.2)

    def measure(self):
        devices = self.options.devices
        status, send, _ = http("POST", f"http://127.0.0.1:{self.port}/api/send",
                               {"target": {"topic": TOPIC}, "alert": "chaos", "rate": self.options.rate})
        if status != 202:
            raise RuntimeError(f"the send was not queued: {status} {send}")
        send_id = send["id"]
        while self.counters()["accepted"] < devices * self.options.fault_at:
            time.sleep(0.05)
        stop_probe = threading.Event()
        probe = {"slowest": 0.0, "answers": [], "acknowledged": [], "log": []}
        prober = threading.Thread(target=self.probe, args=(stop_probe, probe, send_id), daemon=True)
        prober.start()
        heal = self.fault()
        if heal is not None:
            time.sleep(self.fault_seconds)
            heal()
        healed_at = time.monotonic()
        accepted_at_heal = self.counters()["accepted"]
        resumed = None
        record = None
        deadline = time.monotonic() + devices / self.options.rate * 4 + 300
        while time.monotonic() < deadline:
            accepted = self.counters()["accepted"]
            if resumed is None and accepted > accepted_at_heal:
                resumed = time.monotonic() - healed_at
            status, record, _ = http("GET", f"http://127.0.0.1:{self.port}/api/sends/{send_id}?limit=1", timeout=5)
            if status == 200 and record.get("status") in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.1)
        if resumed is None and accepted_at_heal >= devices:
            resumed = 0.0
        stop_probe.set()
        prober.join()
        with open(f"{self.work}/probe.log", "w") as file:
            file.write(f"fault started before {healed_at - self.fault_seconds:.3f}, ended {healed_at:.3f}\n")
            file.write("\n".join(probe["log"]) + "\n")
        counters = self.counters()
        duplicates = counters["duplicateApnsIds"]
        unique = counters["accepted"] - duplicates
        surviving = self.standby_port if self.scenario == "failover" else self.primary_port
        acknowledged = probe["acknowledged"]
        stored = set(self.pg.psql(surviving, "SELECT token FROM devices WHERE token LIKE 'c4a0%'").split())
        missing = [t for t in acknowledged if t not in stored]
        return {
            "status": (record or {}).get("status"), "lost": devices - unique, "duplicates": duplicates,
            "resume": resumed, "slowest": probe["slowest"], "registrations": len(probe["answers"]),
            "acknowledged": len(acknowledged), "missing": len(missing),
        }

    def stop_time(self):
        """The fault again (the database away), SIGTERM, and how long the server takes to exit (60 s at most)."""
        if self.scenario == "failover":
            self.pg.stop("standby")
        elif self.scenario in ("restart", "outage"):
            self.pg.stop("primary")
        elif self.scenario == "partition":
            self.proxy.set_mode("blackhole")
        else:
            self.proxy.set_mode("silent")
        time.sleep(2)
        started = time.monotonic()
        self.server.send_signal(signal.SIGTERM)
        try:
            self.server.wait(timeout=60)
            return time.monotonic() - started
        except subprocess.TimeoutExpired:
            self.server.kill()
            return None
        finally:
            if self.scenario == "partition":
                self.proxy.set_mode("pass")

    def close(self):
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            process.wait()
        self.pg.stop_all()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--herald", help="the herald binary (a release build)")
    parser.add_argument("--devices", type=int, default=50_000)
    parser.add_argument("--rate", type=int, default=2_500, help="the send's notifications per second")
    parser.add_argument("--runs", type=int, default=10, help="runs of each scenario")
    parser.add_argument("--fault-at", type=float, default=0.25, help="the share of the send sent when the fault starts")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder (logs) under /tmp")
    parser.add_argument("--table-from", nargs="+", metavar="LOG",
                        help="run nothing: print the table of the runs these earlier outputs logged (runs split "
                             "over several invocations; give them the same --devices and --rate)")
    parser.add_argument("scenarios", nargs="*", default=["restart", "outage", "failover", "partition", "silent"])
    options = parser.parse_args()
    if options.table_from:
        rows = rows_logged(options.table_from)
        print_table(rows, options)
        return 0 if all(good(row) for row in rows) else 1
    if not options.herald:
        parser.error("--herald is required to run the scenarios")
    options.herald = os.path.abspath(options.herald)
    rows = []
    for scenario in options.scenarios:
        for number in range(1, options.runs + 1):
            work = tempfile.mkdtemp(prefix=f"herald-chaos-{scenario}-")
            log(f"{scenario} {number}/{options.runs}: {options.devices} devices at {options.rate}/s ({work})")
            run = Run(options, scenario, options.herald, work)
            try:
                run.start()
                result = run.measure()
                result["stop"] = run.stop_time()
            except Exception as error:  # noqa: BLE001 - a run that breaks is a row that says so
                result = {"status": f"error: {error}"}
            finally:
                run.close()
                if not options.keep:
                    shutil.rmtree(work, ignore_errors=True)
            result["scenario"] = scenario
            log(json.dumps(result))
            rows.append(result)
    print_table(rows, options)
    return 0 if all(good(row) for row in rows) else 1


def rows_logged(paths):
    """The result of every run that earlier outputs of this script logged (`==> {...}` lines), in order."""
    rows = []
    for path in paths:
        with open(path) as file:
            for line in file:
                if line.startswith("==> {"):
                    rows.append(json.loads(line[len("==> "):]))
    return rows


def good(row):
    return (row.get("status") == "completed" and row.get("lost") == 0 and row.get("duplicates") == 0
            and row.get("missing") == 0 and row.get("stop") is not None)


def print_table(rows, options):
    def seconds(values):
        values = [v for v in values if v is not None]
        if not values:
            return "-"
        return f"{statistics.median(values):.2f} / {max(values):.2f}"

    print(f"\n{options.devices} devices per run, paced at {options.rate}/s, the fault at "
          f"{int(options.fault_at * 100)} %; seconds as median / worst\n")
    print("| scenario | runs | completed | lost | duplicates | resumed after the database's return (s) "
          "| slowest API answer during the fault (s) | registrations answered 201 / missing afterwards "
          "| stop with the database away (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scenario in dict.fromkeys(row["scenario"] for row in rows):
        mine = [row for row in rows if row["scenario"] == scenario]
        completed = sum(row.get("status") == "completed" for row in mine)
        stops = [row.get("stop") for row in mine]
        hung = sum(1 for row in mine if "stop" in row and row["stop"] is None)
        print(f"| {scenario} | {len(mine)} | {completed} | {sum(row.get('lost', 0) for row in mine)} "
              f"| {sum(row.get('duplicates', 0) for row in mine)} | {seconds(row.get('resume') for row in mine)} "
              f"| {seconds(row.get('slowest') for row in mine)} "
              f"| {sum(row.get('acknowledged', 0) for row in mine)} / {sum(row.get('missing', 0) for row in mine)} "
              f"| {seconds(stops)}{f' ({hung} did not stop in 60 s)' if hung else ''} |")


if __name__ == "__main__":
    sys.exit(main())
