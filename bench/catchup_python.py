"""A Python analytics consumer catching up: the events/s an httpx NDJSON
reader gets from a `since=0` replay, beside what the same line loop reads
from a file holding the same bytes (the client's own ceiling).

    python3 bench/catchup_python.py --url 'http://127.0.0.1:8244/api/v1/stream/filter?track=replayed&since=0' \
        --token "$TOKEN" --events 60000 --file /tmp/replay.ndjson --runs 3
"""
import argparse
import statistics
import time

import httpx


def consume(lines, want):
    """The loop under test: count the events among the lines until `want`
    have come (keep-alive `position` lines and blank lines pass by)."""
    n = 0
    for line in lines:
        if line and '"type":"position"' not in line:
            n += 1
            if n >= want:
                break
    return n


def from_stream(url, token, want, identity=False):
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/x-ndjson"}
    if identity:
        headers["Accept-Encoding"] = "identity"
    with httpx.Client(timeout=httpx.Timeout(30.0)) as client:
        started = time.perf_counter()
        with client.stream("GET", url, headers=headers) as r:
            r.raise_for_status()
            n = consume(r.iter_lines(), want)
        return n, time.perf_counter() - started


def from_file(path, want):
    started = time.perf_counter()
    with open(path, encoding="utf-8") as f:
        n = consume((line.rstrip("\n") for line in f), want)
    return n, time.perf_counter() - started


def median_rate(runs, measure):
    rates, n = [], 0
    for _ in range(runs):
        n, secs = measure()
        rates.append(n / secs)
    return n, statistics.median(rates)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--events", type=int, required=True)
    p.add_argument("--file", required=True, help="the same replay's bytes, saved")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    n, stream = median_rate(a.runs, lambda: from_stream(a.url, a.token, a.events))
    _, plain = median_rate(a.runs, lambda: from_stream(a.url, a.token, a.events, True))
    m, static = median_rate(a.runs, lambda: from_file(a.file, a.events))
    print(f"httpx NDJSON catch-up (httpx's default: gzip): {n} events, median {stream:,.0f} events/s")
    print(f"httpx NDJSON catch-up, Accept-Encoding: identity: median {plain:,.0f} events/s")
    print(f"same loop over a file: {m} lines, median {static:,.0f} lines/s")
    print(f"catch-up / file: {stream / static:.2f} (gzip), {plain / static:.2f} (identity)")


if __name__ == "__main__":
    main()
