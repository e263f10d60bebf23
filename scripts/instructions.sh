#!/usr/bin/env bash
# Instructions and locked operations per unit of work, from valgrind's callgrind: numbers that do
# not drift with the machine's load, unlike wall time on a shared VM.
#
# Usage: scripts/instructions.sh [--systems REGEX] WORKLOAD...
#   e.g. scripts/instructions.sh PingPong Counting ThreadRing
#
# For each workload and each selected row (default: "Troupe", "Troupe (actor producer)",
# "Troupe (actor ask)" and "Swift native"; the native forms that park threads crawl under valgrind),
# troupe-bench runs under callgrind twice on one worker: at its --quick size and at its full
# size. The marginal cost, (full − quick) ÷ (units full − units quick), cancels start-up and
# set-up, leaving the cost of one unit (a message, a round trip, a hop, a spawn...).
#   instr/unit   instructions executed, every thread of the process
#   locked/unit  of those, locked read-modify-writes (lock-prefixed instructions and xchg with
#                memory): the atomic operations that cost 5-12 ns each on this kind of VM
# The binary is a release build with its debug info stripped (`strip -g`), as users run it.
# Needs valgrind and binutils (objdump); prints the command, the machine and the date. The
# measuring is scripts/callgrind_units.py's (shared with scripts/instruction-guard.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

systems='^(Troupe|Swift native|Troupe \((actor producer|actor ask)\))$'
if [ "${1:-}" = "--systems" ]; then
    systems=$2
    shift 2
fi
[ $# -gt 0 ] || { sed -n '5,18p' "$0"; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 1; }
command -v objdump >/dev/null || { echo "objdump is missing: apt-get install binutils" >&2; exit 1; }

swift build --package-path Benchmarks -c release --product troupe-bench >&2
work=$(mktemp -d /tmp/troupe-instructions-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp Benchmarks/.build/release/troupe-bench "$work/troupe-bench"
strip -g "$work/troupe-bench"

echo "# scripts/instructions.sh $*"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(swift --version 2>/dev/null | head -1)"
printf '%-12s %-32s %12s %12s %11s %12s\n' workload system "units full" "units quick" "instr/unit" "locked/unit"

for workload in "$@"; do
    # (The measuring is scripts/callgrind_units.py's, shared with scripts/instruction-guard.sh.)
    rows=$(python3 scripts/callgrind_units.py rows "$work/troupe-bench" "$workload" "$systems")
    while IFS= read -r system; do
        [ -n "$system" ] || continue
        python3 scripts/callgrind_units.py measure "$work/troupe-bench" "$workload" "$system" </dev/null
    done <<<"$rows"
done
