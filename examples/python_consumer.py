"""A Python consumer of a filter stream, with resume.

Reads Server-Sent Events with httpx, prints each status, and when the
connection drops reconnects with Last-Event-ID (keep-alive positions
included), so nothing is missed or repeated across a restart.

    python3 -m pip install httpx
    python3 examples/python_consumer.py --token "$TOKEN" --track rust,redis

One of N partitioned consumers of the firehose (a token with the firehose
scope; run k = 1..N: together they get every event once, each resuming its
own partition after a restart):

    python3 examples/python_consumer.py --token "$TOKEN" --stream firehose --partition 2/4
"""

import argparse
import json
import sys
import time

import httpx


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8080")
    p.add_argument("--token", required=True)
    p.add_argument("--track", default="")
    p.add_argument("--stream", default="filter", choices=["filter", "firehose", "sample", "search"])
    p.add_argument("--partition", default="", help="k/N: this consumer's share of N")
    p.add_argument("--max-events", type=int, default=0, help="exit after N statuses (0: never)")
    a = p.parse_args()
    params = {"track": a.track} if a.stream == "filter" else {}
    if a.partition:
        k, _, n = a.partition.partition("/")
        params.update(partition=k, partitions=n)
    last_id = None
    seen = 0
    while True:
        headers = {"Authorization": f"Bearer {a.token}", "Accept": "text/event-stream"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        try:
            with httpx.stream(
                "GET",
                f"{a.url}/api/v1/stream/{a.stream}",
                params=params,
                headers=headers,
                timeout=httpx.Timeout(10.0, read=60.0),
            ) as r:
                r.raise_for_status()
                event: dict = {}
                for line in r.iter_lines():
                    if line == "":
                        # An id with no data is a keep-alive's position.
                        if "id" in event:
                            last_id = event["id"]
                        kind = event.get("event", "message")
                        if "data" in event and kind == "status":
                            status = json.loads(event["data"])["status"]
                            print(f"@{status['login']}: {status['message']}", flush=True)
                            seen += 1
                            if a.max_events and seen >= a.max_events:
                                return 0
                        elif "data" in event and kind in ("warning", "disconnect"):
                            print(f"-- {kind}: {event['data']}", file=sys.stderr, flush=True)
                        event = {}
                        continue
                    if line.startswith(":"):
                        continue
                    key, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if key == "data":
                        event["data"] = event.get("data", "") + value
                    else:
                        event[key] = value
        except httpx.HTTPStatusError as e:
            print(f"refused: {e.response.status_code} {e.response.text}", file=sys.stderr)
            return 1
        except httpx.TransportError as e:
            print(f"-- connection lost ({e}); resuming after {last_id}", file=sys.stderr, flush=True)
            time.sleep(1)


if __name__ == "__main__":
    sys.exit(main())
