#!/usr/bin/env bash
# A curl walkthrough: register two users, log in, open a live stream with
# curl -N, post from "another shell", and watch the post arrive.
#
#   cargo run --release -- serve          # in one shell
#   bash examples/walkthrough.sh          # in another (BASE=http://host:port to point elsewhere)
set -euo pipefail
BASE=${BASE:-http://127.0.0.1:8080}
tag=$RANDOM$RANDOM
JSON="Content-Type: application/json"
json() { sed -n "s/.*\"$1\":\"\\([^\"]*\\)\".*/\\1/p"; }

echo "== register alice_$tag and bob_$tag"
alice=$(curl -sf -X POST -H "$JSON" "$BASE/api/v1/users" -d "{\"login\":\"alice_$tag\",\"name\":\"Alice\",\"email\":\"alice_$tag@example.com\",\"password\":\"password123\"}" | json id)
curl -sf -X POST -H "$JSON" "$BASE/api/v1/users" -d "{\"login\":\"bob_$tag\",\"name\":\"Bob\",\"email\":\"bob_$tag@example.com\",\"password\":\"password123\"}" >/dev/null

echo "== log in (by login for alice, by email for bob)"
ALICE=$(curl -sf -X POST -H "$JSON" "$BASE/api/v1/sessions" -d "{\"identifier\":\"alice_$tag\",\"password\":\"password123\"}" | json token)
BOB=$(curl -sf -X POST -H "$JSON" "$BASE/api/v1/sessions" -d "{\"identifier\":\"BOB_$tag@example.com\",\"password\":\"password123\"}" | json token)

echo "== bob follows alice"
curl -sf -X POST -H "Authorization: Bearer $BOB" "$BASE/api/v1/users/$alice/follow"; echo

echo "== bob opens his user stream: curl -N $BASE/api/v1/stream/user"
out=$(mktemp)
curl -sN -H "Authorization: Bearer $BOB" "$BASE/api/v1/stream/user" >"$out" &
stream=$!
trap 'kill $stream 2>/dev/null || true; rm -f "$out"' EXIT
sleep 0.5

echo "== alice posts (as if from another shell)"
curl -sf -X POST -H "$JSON" -H "Authorization: Bearer $ALICE" "$BASE/api/v1/statuses" -d "{\"message\":\"hello from the walkthrough $tag #firehose\"}"; echo

for _ in $(seq 1 100); do
  if grep -q "walkthrough $tag" "$out"; then
    echo "== bob's stream received:"
    grep -A2 '^event: status' "$out" | head -3
    echo "== bob's home timeline:"
    curl -sf -H "Authorization: Bearer $BOB" "$BASE/api/v1/timelines/home?count=1"; echo
    exit 0
  fi
  sleep 0.1
done
echo "the post did not arrive on the stream" >&2
exit 1
