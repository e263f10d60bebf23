#!/usr/bin/env bash
# Checks TroupeObserver's live page in a real browser (headless Chromium), against the shop
# service under load.
#
# Usage: scripts/observer-browser.sh [SHOP_SERVICE_BINARY]   (default: Benchmarks/.build/release/shop-service)
#
# Starts the shop service (127.0.0.1:18090, its observer on 127.0.0.1:18091 with a random token),
# opens a few carts (sessions session-browser-1..3) and keeps the service busy with wrk
# (Examples/ShopService/load.lua) while scripts/observer-browser-test.py drives the page: the
# token is required (401 without it), the page goes live and its numbers move, the sortable
# headers sort the table, the search filters it, the supervisor's table links to its actors, a
# session's test messages change it, a failure made from the page (`fail REASON`) is listed with
# the system's last failures and the session's own, and a row's stop button stops that session.
# A screenshot of the page goes to .build/observer/observer.png, the service's and wrk's output
# to .build/observer/. Finally the service gets SIGTERM and must exit with status 0. Installs
# Chromium and wrk (Debian's packages) when they are missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
binary=${1:-Benchmarks/.build/release/shop-service}
port=18090
observer_port=18091
base="http://127.0.0.1:$port"
observer="http://127.0.0.1:$observer_port"
out=.build/observer

command -v chromium >/dev/null || scripts/install-debian-package.sh chromium
command -v wrk >/dev/null || scripts/install-debian-package.sh wrk
command -v curl >/dev/null || { echo "curl is missing: apt-get install curl" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is missing: apt-get install python3" >&2; exit 1; }
[ -x "$binary" ] || { echo "no shop-service binary at $binary (build it, or pass its path)" >&2; exit 1; }

mkdir -p "$out"
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
echo "# scripts/observer-browser.sh: $binary, $(chromium --version 2>/dev/null)"

pid=""
wrk_pid=""
cleanup() {
    [ -n "$wrk_pid" ] && kill -9 "$wrk_pid" 2>/dev/null || true
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM

SHOP_PORT=$port SHOP_LOG_LEVEL=warning SHOP_OBSERVER_PORT=$observer_port SHOP_OBSERVER_TOKEN=$token \
    "$binary" >"$out/service.log" 2>&1 &
pid=$!
answers() { curl -fs -o /dev/null "$1"; }
for _ in $(seq 1 300); do
    answers "$base/activity" && answers "$observer/?token=$token" && break
    kill -0 $pid 2>/dev/null || { echo "FAILED: the service exited before listening:" >&2; cat "$out/service.log" >&2; exit 1; }
    sleep 0.1
done
answers "$base/activity" || { echo "FAILED: the service did not answer on $base" >&2; exit 1; }
answers "$observer/?token=$token" || { echo "FAILED: the observer did not answer on $observer" >&2; exit 1; }
echo "ok: the service answers on $base, its observer on $observer"

# A few sessions that nothing else touches: the driver stops one of them from the page.
for i in 1 2 3; do
    curl -fs -o /dev/null -X POST "$base/users/browser-$i/cart/tea" \
        || { echo "FAILED: POST $base/users/browser-$i/cart/tea" >&2; exit 1; }
done
echo "ok: opened the carts of browser-1..3"

wrk -t1 -c4 -d40s -s Examples/ShopService/load.lua "$base" >"$out/wrk.log" 2>&1 &
wrk_pid=$!

python3 scripts/observer-browser-test.py --url "$observer" --token "$token" \
    --parent-name sessions --child-prefix session- --supervised-child sessions --stop-match session-browser \
    --screenshot "$out/observer.png"

kill -INT "$wrk_pid" 2>/dev/null || true  # wrk prints its summary on SIGINT
wait "$wrk_pid" 2>/dev/null || true
wrk_pid=""
grep -E '^(wrk:|errors:)' "$out/wrk.log" || true

kill -TERM $pid
status=0
wait $pid || status=$?
pid=""
[ $status = 0 ] || { echo "FAILED: exit status $status after SIGTERM; the service's output:" >&2; tail -20 "$out/service.log" >&2; exit 1; }
echo "ok: SIGTERM: the service stopped with status 0"
