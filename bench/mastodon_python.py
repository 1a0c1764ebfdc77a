"""A Python (httpx) SSE consumer catching up through the Mastodon streaming
API and through our own stream beneath it: events/s of a resume from the
start of the history (`last_event_id=0-0`), each the median of `--runs`,
the two alternating.

    python3 bench/mastodon_python.py --base http://127.0.0.1:8244 \
        --mastodon http://127.0.0.1:8245 --token "$TOKEN" --events 20000 --runs 3
"""
import argparse
import statistics
import time

import httpx


def count(lines, event, want):
    """Counts the SSE messages named `event` until `want` have come."""
    n = 0
    for line in lines:
        if line == event:
            n += 1
            if n >= want:
                break
    return n


def catch_up(url, token, event, want):
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    with httpx.Client(timeout=httpx.Timeout(60.0)) as client:
        started = time.perf_counter()
        with client.stream("GET", url, headers=headers) as r:
            r.raise_for_status()
            n = count(r.iter_lines(), event, want)
        return n, time.perf_counter() - started


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--mastodon", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--events", type=int, required=True)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    kinds = {
        "ours": (f"{a.base}/api/v1/stream/sample?rate=1&last_event_id=0-0", "event: status"),
        "mastodon": (f"{a.mastodon}/api/v1/streaming/public?last_event_id=0-0", "event: update"),
    }
    rates = {k: [] for k in kinds}
    for run in range(a.runs):
        order = ["ours", "mastodon"] if run % 2 == 0 else ["mastodon", "ours"]
        for kind in order:
            url, event = kinds[kind]
            n, secs = catch_up(url, a.token, event, a.events)
            if n < a.events:
                print(f"{kind}: only {n} of {a.events} events")
            rates[kind].append(n / secs)
            print(f"run {run + 1} {kind}: {n} events in {secs:.2f}s, {n / secs:,.0f} events/s")
    ours = statistics.median(rates["ours"])
    mastodon = statistics.median(rates["mastodon"])
    print(f"median: ours {ours:,.0f} events/s, Mastodon {mastodon:,.0f} events/s, "
          f"Mastodon / ours {mastodon / ours:.2f}")


if __name__ == "__main__":
    main()
