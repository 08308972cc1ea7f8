#!/usr/bin/env python3
"""Open-loop HTTP/1.1 load: POSTs one body at a fixed rate, whatever the server's answers take.

Each request has its scheduled time (start + i / rate); its latency runs from that time to the end of its answer,
so a server that stalls is charged for the requests that queued behind the stall (no coordinated omission). Requests
go over a pool of keep-alive connections; when every connection is busy a request waits for one, and that wait counts.

    open-loop.py URL RATE SECONDS [--connections 64] [--header 'Name: value']... [--body JSON]

Prints one JSON line: requests, ok (2xx), errors, p50_ms, p99_ms, max_ms, achieved_rate.
"""
import argparse
import asyncio
import json
import time
from urllib.parse import urlsplit


async def open_connection(host, port):
    reader, writer = await asyncio.open_connection(host, port)
    return reader, writer


async def read_answer(reader):
    status_line = await reader.readline()
    if not status_line:
        raise ConnectionError("closed")
    status = int(status_line.split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("rate", type=float)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--body", default="")
    args = parser.parse_args()

    parts = urlsplit(args.url)
    host, port, path = parts.hostname, parts.port or 80, parts.path or "/"
    body = args.body.encode()
    head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
    head += "".join(f"{h}\r\n" for h in args.header)
    request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body

    pool = asyncio.Queue()
    for _ in range(args.connections):
        pool.put_nowait(await open_connection(host, port))
    latencies, statuses = [], []
    total = int(args.rate * args.seconds)
    start = time.monotonic() + 0.05

    async def one(scheduled):
        connection = await pool.get()
        try:
            reader, writer = connection
            writer.write(request)
            await writer.drain()
            status = await read_answer(reader)
        except Exception:
            status = 0
            connection = await open_connection(host, port)
        finally:
            pool.put_nowait(connection)
        latencies.append(time.monotonic() - scheduled)
        statuses.append(status)

    tasks = []
    for i in range(total):
        scheduled = start + i / args.rate
        delay = scheduled - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(scheduled)))
    await asyncio.gather(*tasks)
    elapsed = time.monotonic() - start
    latencies.sort()

    def percentile(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000

    ok = sum(1 for s in statuses if 200 <= s < 300)
    print(json.dumps({
        "requests": total, "ok": ok, "errors": total - ok, "p50_ms": round(percentile(0.50), 2),
        "p99_ms": round(percentile(0.99), 2), "max_ms": round(latencies[-1] * 1000, 2),
        "achieved_rate": round(total / elapsed, 1),
    }))


asyncio.run(main())
