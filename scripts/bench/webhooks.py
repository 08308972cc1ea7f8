#!/usr/bin/env python3
"""Webhook delivery benchmark (docs/benchmarks.md, "Webhooks").

Starts `herald serve` (SQLite in a temporary folder, pushes to the in-process emulator) and a local receiver
(ThreadingHTTPServer on 127.0.0.1), registers DEVICES devices, registers an endpoint for notification.accepted and
send.completed, and measures:

1. live: one send to every device while the endpoint is active: each notification.accepted event's latency from its
   outcome (`data.at`) to its arrival at the receiver (p50, p99, max), and the events per second received;
2. backlog: the same send again while the endpoint is paused, then resumed: how fast the deliverer drains DEVICES
   waiting events (events per second from the resume to the last arrival).

    scripts/bench/webhooks.py [--herald .build/debug/herald] [--devices 20000] [--batch 100] [--poll-ms 100]
                              [--database-url postgres://…?schema=bench_webhooks]

The receiver verifies every signature (HMAC-SHA256) as it goes, as a real one would.
"""
import argparse, hashlib, hmac, http.client, json, os, secrets, socket, subprocess, sys, tempfile, threading, time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def rfc3339(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Receiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.arrivals = []  # (arrival time, event)
        self.secret = None
        self.bad_signatures = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as a real receiver would: Herald reuses its connections (a 204 needs no length).
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                now = time.time()
                header = self.headers.get("Herald-Signature", "")
                parts = dict(p.split("=", 1) for p in header.split(",") if p.startswith("t="))
                signatures = [p[3:] for p in header.split(",") if p.startswith("v1=")]
                expected = hmac.new(receiver.secret.encode(), parts.get("t", "").encode() + b"." + body,
                                    hashlib.sha256).hexdigest()
                ok = any(hmac.compare_digest(expected, s) for s in signatures)
                with receiver.lock:
                    if not ok:
                        receiver.bad_signatures += 1
                    receiver.arrivals.extend((now, event) for event in json.loads(body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def count(self, kind):
        with self.lock:
            return sum(1 for _, e in self.arrivals if e["type"] == kind)

    def take(self):
        with self.lock:
            taken, self.arrivals = self.arrivals, []
            return taken


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None, key=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    connection.request(method, path, json.dumps(body) if body is not None else None, headers)
    answer = connection.getresponse()
    text = answer.read().decode()
    connection.close()
    if answer.status >= 300:
        raise RuntimeError(f"{method} {path}: {answer.status} {text}")
    return json.loads(text) if text else None


def wait(predicate, what, timeout=600):
    deadline = time.time() + timeout
    while not predicate():
        if time.time() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--herald", default=".build/debug/herald")
    parser.add_argument("--devices", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--poll-ms", type=int, default=100)
    parser.add_argument("--database-url", help="postgres://… (a fresh schema: add ?schema=…); default SQLite")
    args = parser.parse_args()

    receiver = Receiver()
    work = tempfile.mkdtemp(prefix="herald-bench-webhooks-")
    port = free_port()
    key = "bench-" + secrets.token_hex(16)
    env = dict(os.environ, HERALD_LISTEN=f"127.0.0.1:{port}", HERALD_DATABASE_URL=args.database_url or f"sqlite://{work}/herald.sqlite",
               HERALD_API_KEYS=f"bench:send+admin:{key}", HERALD_RATE_LIMIT="0", HERALD_EMULATOR_ADMIN_PORT="off",
               HERALD_EMULATOR_COUNTING="true", HERALD_LOG_LEVEL="warning", HERALD_INLINE_SEND_LIMIT="0",
               HERALD_WEBHOOK_BATCH=str(args.batch), HERALD_WEBHOOK_POLL_INTERVAL_MS=str(args.poll_ms))
    server = subprocess.Popen([os.path.abspath(args.herald), "serve"], env=env, cwd=work, stdout=subprocess.DEVNULL)
    try:
        wait(lambda: _ready(port), "the server", 120)
        print(f"registering {args.devices} devices", file=sys.stderr)
        connection = http.client.HTTPConnection("127.0.0.1", port)
        for n in range(args.devices):
            connection.request("POST", "/api/token", json.dumps({"token": f"{n + 1:064x}", "debug": False}),
                               {"Content-Type": "application/json"})
            connection.getresponse().read()
        connection.close()
        created = call(port, "POST", "/api/webhooks", {"url": receiver.url,
                       "events": ["notification.accepted", "send.completed"]}, key)
        receiver.secret = created["secret"]
        endpoint = created["endpoint"]["id"]

        # 1. Live: outcome-to-delivery latency while the send runs.
        started = time.time()
        live_send = call(port, "POST", "/api/send", {"target": {"topic": "com.example.app"}, "alert": "bench"}, key)
        wait(lambda: receiver.count("send.completed") == 1, "the live send's events")
        record = call(port, "GET", f"/api/sends/{live_send['id']}", None, key)
        send_seconds = rfc3339(record["updatedAt"]) - rfc3339(record["createdAt"])
        live = receiver.take()
        accepted = [(arrival, e) for arrival, e in live if e["type"] == "notification.accepted"]
        latencies = [arrival - rfc3339(e["data"]["at"]) for arrival, e in accepted]
        span = max(a for a, _ in live) - started
        print(f"live: the send took {send_seconds:.2f} s; {len(accepted)} notification.accepted events arrived "
              f"within {span:.2f} s of the send request ({len(accepted) / span:.0f}/s); outcome-to-delivery latency "
              f"p50 {percentile(latencies, 0.5) * 1000:.0f} ms, p99 {percentile(latencies, 0.99) * 1000:.0f} ms, "
              f"max {max(latencies) * 1000:.0f} ms")

        # 2. Backlog: events written while paused, then drained.
        call(port, "PATCH", f"/api/webhooks/{endpoint}", {"paused": True}, key)
        send = call(port, "POST", "/api/send", {"target": {"topic": "com.example.app"}, "alert": "bench 2"}, key)
        wait(lambda: call(port, "GET", f"/api/sends/{send['id']}", None, key)["status"] == "completed", "the send")
        queued = call(port, "GET", f"/api/webhooks/{endpoint}", None, key)["queue"]["pending"]
        resumed = time.time()
        call(port, "PATCH", f"/api/webhooks/{endpoint}", {"paused": False}, key)
        wait(lambda: receiver.count("send.completed") == 1, "the backlog")
        drained = receiver.take()
        last = max(a for a, _ in drained)
        print(f"backlog: {len(drained)} events (of {queued} waiting) drained in {last - resumed:.2f} s: "
              f"{len(drained) / (last - resumed):.0f} events/s in batches of {args.batch}")
        print(f"signatures that did not verify: {receiver.bad_signatures}")
    finally:
        server.terminate()
        server.wait(30)


def _ready(port):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/ready")
        ok = connection.getresponse().status == 200
        connection.close()
        return ok
    except OSError:
        return False


if __name__ == "__main__":
    main()
