#!/usr/bin/env bash
# Instructions per TroupeCluster remote call, from valgrind's callgrind: a figure that does not
# drift with this VM's load, unlike calls per second (which moved ±30 % and more between runs).
#
# Usage: scripts/cluster-instructions.sh [--global-executor] [--in-flight N] [--raw-nio] [TROUPE_BENCH]
#   TROUPE_BENCH: a troupe-bench binary to measure (default: build Benchmarks' release one).
#   --global-executor: the calling tasks run on Swift's global executor (default: on the calling
#   node's Troupe task executor, as a ClusterActor's calls do).
#   --in-flight N: calls in flight (default 64; `--global-executor --in-flight 1` is the form of
#   the latency rows' 64 B remote call).
#   --raw-nio: the latency rows' baseline instead, an awaited raw NIO round trip of 64 B from a
#   task on the global executor (the 64 B call's bound, 1.1x, is against its time).
#
# Runs `troupe-bench cluster --profile-calls N` (two nodes in one process over loopback TCP, 64
# calls in flight from tasks on the calling node's task executor) under callgrind at two counts.
# The marginal cost, (Ir at the larger − Ir at the smaller) ÷ (difference in calls), cancels
# start-up, the handshake and the warm-up, leaving one call: both nodes' work, the caller's and
# the callee's, user space only (the kernel's socket work is not counted). Under valgrind the
# threads take turns on one core, so the batching differs from a real run: compare builds with
# this, not with a run's wall time. The binary is a release build with its debug info stripped
# (`strip -g`): valgrind 3.19 cannot read Swift 6.3's debug info. Prints the command, the
# machine and the date.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }

flags=()
unit="remote call"
while [ $# -gt 0 ]; do
    case "$1" in
        --global-executor) flags+=(--profile-global-executor); shift ;;
        --in-flight) flags+=(--profile-in-flight "$2"); shift 2 ;;
        --raw-nio) flags+=(--profile-raw-nio); unit="awaited raw NIO round trip"; shift ;;
        *) break ;;
    esac
done
bench=${1:-}
if [ -z "$bench" ]; then
    swift build --package-path Benchmarks -c release --product troupe-bench >&2
    bench=Benchmarks/.build/release/troupe-bench
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
strip -g -o "$work/troupe-bench" "$bench"

small=1280
large=9600
declare -A total
for calls in $small $large; do
    SWIFT_BACKTRACE=enable=no valgrind --tool=callgrind --callgrind-out-file="$work/$calls.out" \
        "$work/troupe-bench" cluster --profile-calls "$calls" "${flags[@]}" </dev/null >"$work/$calls.log" 2>&1 || {
        echo "valgrind failed at $calls calls; its log:" >&2
        tail -20 "$work/$calls.log" >&2
        exit 1
    }
    total[$calls]=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$work/$calls.out")
done
per_call=$(((total[$large] - total[$small]) / (large - small)))
echo "# scripts/cluster-instructions.sh: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo "# troupe-bench cluster --profile-calls $small and $large ${flags[*]} under callgrind"
echo "instructions at $small calls: ${total[$small]}"
echo "instructions at $large calls: ${total[$large]}"
echo "instructions per $unit (both ends, user space): $per_call"
