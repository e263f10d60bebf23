#!/usr/bin/env bash
# Loads the shop service on loopback with wrk and prints requests/s and latency percentiles.
#
# Usage: Examples/ShopService/load.sh [SECONDS] [CONNECTIONS]     (defaults: 30 s, 64)
#
# Builds the service (release), starts it on 127.0.0.1:$SHOP_PORT (18080), checks every route
# once with curl (and fails if one answers wrong), runs wrk with load.lua's request mix, then
# sends SIGTERM and checks that the service shuts down cleanly (the server first, then the
# actors) with exit status 0. wrk and the service share the machine's cores: on a 2-core VM the
# figures are the system's, not the service's alone.
set -euo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
seconds=${1:-30}
connections=${2:-64}
port=${SHOP_PORT:-18080}
base="http://127.0.0.1:$port"

command -v wrk >/dev/null || "$dir/../../scripts/install-debian-package.sh" wrk
command -v curl >/dev/null || { echo "curl is missing: apt-get install curl" >&2; exit 1; }

# SHOP_SERVICE_BINARY: a shop-service already built (CI passes the one `swift test -c release`
# built, instead of building every module again without testability); built here otherwise.
binary=${SHOP_SERVICE_BINARY:-}
if [ -z "$binary" ] || [ ! -x "$binary" ]; then
    swift build --package-path "$dir" -c release --product shop-service >&2
    binary="$dir/.build/release/shop-service"
fi

echo "# Examples/ShopService/load.sh $seconds $connections"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(swift --version 2>/dev/null | head -1)"

SHOP_PORT=$port SHOP_OBSERVER_PORT=${SHOP_OBSERVER_PORT:-0} SHOP_LOG_LEVEL=warning "$binary" &
pid=$!
trap 'kill -9 $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    curl -fs "$base/activity" >/dev/null 2>&1 && break
    kill -0 $pid 2>/dev/null || { echo "the service exited before listening" >&2; exit 1; }
    sleep 0.1
done
curl -fs "$base/activity" >/dev/null || { echo "the service did not answer on $base" >&2; exit 1; }

# Each route once, checking the answers.
expect() {  # expect NAME PATTERN COMMAND...
    local name=$1 pattern=$2
    shift 2
    local body
    body=$("$@") || { echo "FAILED: $name: the request failed" >&2; exit 1; }
    grep -q -- "$pattern" <<<"$body" || { echo "FAILED: $name: '$pattern' not in: $body" >&2; exit 1; }
    echo "ok: $name"
}
expect "add to cart" '"items":\["tea"\]' curl -fs -X POST "$base/users/smoke/cart/tea"
expect "add another" '"items":\["tea","jam"\]' curl -fs -X POST "$base/users/smoke/cart/jam"
expect "read the cart" '"items":\["tea","jam"\]' curl -fs "$base/users/smoke/cart"
expect "checkout" '"totalCents"' curl -fs -X POST "$base/users/smoke/checkout"
expect "cart empty after checkout" '"items":\[\]' curl -fs "$base/users/smoke/cart"
expect "a price" '"cents"' curl -fs "$base/prices/tea"
expect "activity feed" '"checkedOut":1' curl -fs "$base/activity"
expect "prometheus metrics" 'troupe_live_actors' curl -fs "$base/metrics"
expect "actor snapshot" 'session-smoke' curl -fs "$base/debug/actors"
expect "unknown route is a 404" '404' curl -s -o /dev/null -w '%{http_code}' "$base/nothing"

echo "wrk: 2 threads, $connections connections, $seconds s"
output=$(wrk -t2 -c"$connections" -d"${seconds}s" --timeout 5s -s "$dir/load.lua" "$base")
echo "$output" | grep -E '^(wrk:|latency:|errors:)'
errors=$(echo "$output" | sed -n 's/^errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\), non-2xx\/3xx \([0-9]*\)$/\1 \2 \3 \4 \5/p')
for count in $errors; do
    [ "$count" = 0 ] || { echo "FAILED: wrk saw errors ($errors)" >&2; exit 1; }
done
curl -fs "$base/metrics" | grep -E '^troupe_(live_actors|dead_letters_total|busy_workers)' | head -5 || true

started=$(date +%s%N)
kill -TERM $pid
status=0
wait $pid || status=$?
trap - EXIT
echo "SIGTERM: the service stopped in $(( ($(date +%s%N) - started) / 1000000 )) ms with status $status"
[ $status = 0 ] || { echo "FAILED: exit status $status after SIGTERM" >&2; exit 1; }
