#!/usr/bin/env bash
# Checks TroupeObserver's page against a running cluster, in a real browser (headless Chromium):
# three troupe-cluster-node processes on loopback with fast SWIM timings, the first serving its
# observer, each holding the durable entity kind "demo" (TroupeClusterEntities, a journal in
# memory per node), whose 30 entities the third node activates. The page's `members` table must
# show the two peers alive with measured round trips, and its `nodes` table the three nodes'
# entities (30 in all) and, for each node holding some, its journal's queue and write p99; then the third node
# is killed (SIGKILL) and the page must show it down, the other alive, and the third node gone
# from the `nodes` table. A screenshot goes to .build/observer/cluster.png, the nodes' output to
# .build/observer/.
#
# Usage: scripts/observer-cluster-browser.sh [TROUPE_CLUSTER_NODE_BINARY]   (default: .build/debug/troupe-cluster-node)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
binary=${1:-.build/debug/troupe-cluster-node}
out=.build/observer
command -v chromium >/dev/null || scripts/install-debian-package.sh chromium
[ -x "$binary" ] || { echo "no troupe-cluster-node binary at $binary (swift build --product troupe-cluster-node)" >&2; exit 1; }
mkdir -p "$out"
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
timings=(--probe-ms 200 --suspicion-ms 600 --down-ms 1500)
echo "# scripts/observer-cluster-browser.sh: $binary, $(chromium --version 2>/dev/null)"

pids=()
cleanup() { for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
trap 'exit 1' INT TERM

# Starts a node; its output goes to $out/node-$1.log. Sets `pid` and `address` (HOST:PORT).
start_node() {
    local name=$1
    shift
    "$binary" --secret "$secret" "${timings[@]}" "$@" >"$out/node-$name.log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 300); do
        grep -q '^READY ' "$out/node-$name.log" && break
        kill -0 "$pid" 2>/dev/null || { echo "FAILED: node $name exited:" >&2; cat "$out/node-$name.log" >&2; exit 1; }
        sleep 0.1
    done
    local ready
    ready=$(grep -m1 '^READY ' "$out/node-$name.log") || { echo "FAILED: node $name never got READY" >&2; exit 1; }
    address=${ready#READY }
    address=${address%%#*}
}

start_node a --observer-port 0 --observer-token "$token" --entities
seed=$address
observer=$(grep -m1 '^OBSERVER ' "$out/node-a.log" | sed -e 's/^OBSERVER //' -e 's/\/?token=.*//')
[ -n "$observer" ] || { echo "FAILED: node a printed no OBSERVER line" >&2; exit 1; }
start_node b --seed "$seed" --entities
peer_b=$address
start_node c --seed "$seed" --entities --activate 30 --entity-members 3
peer_c=$address
pid_c=$pid
for _ in $(seq 1 600); do
    grep -q '^ENTITIES ' "$out/node-c.log" && break
    sleep 0.1
done
grep -q '^ENTITIES 30' "$out/node-c.log" || { echo "FAILED: node c never activated its entities:" >&2; cat "$out/node-c.log" >&2; exit 1; }
disown "$pid_c"  # the check kills it: no "Killed" report from bash for that
echo "ok: nodes $seed (observer $observer), $peer_b and $peer_c are up"

python3 scripts/observer-browser-test.py --url "$observer" --token "$token" \
    --cluster-peers "$peer_b,$peer_c" --kill-pid "$pid_c" --killed-member "$peer_c" --entity-total 30 \
    --screenshot "$out/cluster.png"

# The two left leave cleanly (SIGTERM), the observer's node included.
for pid in "${pids[@]:0:2}"; do
    kill -TERM "$pid"
    status=0
    wait "$pid" || status=$?
    [ $status = 0 ] || { echo "FAILED: a node exited with status $status after SIGTERM" >&2; exit 1; }
done
echo "ok: SIGTERM: the observer's node and its peer stopped with status 0"
