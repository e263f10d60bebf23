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
# Needs valgrind and binutils (objdump); prints the command, the machine and the date.
set -euo pipefail
cd "$(dirname "$0")/.."

systems='^(Troupe|Swift native|Troupe \((actor producer|actor ask)\))$'
if [ "${1:-}" = "--systems" ]; then
    systems=$2
    shift 2
fi
[ $# -gt 0 ] || { sed -n '5,17p' "$0"; exit 2; }
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
    rows=$("$work/troupe-bench" --filter "$workload" --quick --no-warmup --json 2>/dev/null |
        python3 -c 'import json, re, sys
for row in json.load(sys.stdin):
    if row["workload"] == sys.argv[1] and re.search(sys.argv[2], row["system"]): print(row["system"])' \
        "$workload" "$systems")
    while IFS= read -r system; do
        [ -n "$system" ] || continue
        for size in quick full; do
            flag=$([ $size = quick ] && echo --quick || true)
            TROUPE_BENCH_WORKERS=1 valgrind --tool=callgrind --dump-instr=yes \
                --callgrind-out-file="$work/$size.out" \
                "$work/troupe-bench" --filter "=$workload/$system" --no-warmup --json $flag \
                </dev/null >"$work/$size.json" 2>"$work/$size.log" || {
                echo "valgrind failed on $workload / $system ($size); its log:" >&2
                tail -20 "$work/$size.log" >&2
                exit 1
            }
        done
        # (stdin is the here-document; the loop's list of rows must not be read by it.)
        python3 - "$work" "$workload" "$system" <<'PY'
import json, os, re, subprocess, sys

work, workload, system = sys.argv[1:4]

def parse(path):
    """Self cost (Ir) per (object, instruction address) from a callgrind file written with
    --dump-instr=yes. Addresses are relative to each object's load address, as in objdump."""
    objects, costs, total = {}, {}, 0
    ob = None
    address = 0
    skip_next = False  # the line after `calls=` is inclusive cost of a call, not self cost
    for line in open(path, errors="replace"):
        if line.startswith("ob=") or line.startswith("cob="):
            # An object's name is given where its id first appears, in ob= or in cob=.
            m = re.match(r"c?ob=\((\d+)\)(?: (.*))?", line.strip())
            if m.group(2):
                objects[m.group(1)] = m.group(2)
            if line.startswith("ob="):
                ob = m.group(1)
            continue
        if line.startswith("calls="):
            skip_next = True
            continue
        c = line[0]
        if not (c.isdigit() or c in "+-*"):
            continue
        fields = line.split()
        if len(fields) < 3:
            continue
        position = fields[0]
        if position.startswith("0x"):
            address = int(position, 16)
        elif position[0] in "+-":
            address += int(position)
        elif position != "*":
            address = int(position)
        if skip_next:
            skip_next = False
            continue
        ir = int(fields[2])
        total += ir
        key = (objects.get(ob, "?"), address)
        costs[key] = costs.get(key, 0) + ir
    return total, costs

locked_cache = {}
def locked_addresses(obj):
    """Addresses of locked read-modify-write instructions in an object file."""
    if obj in locked_cache:
        return locked_cache[obj]
    found = set()
    if os.path.exists(obj):
        out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*([0-9a-f]+):\s+(.*)", line)
            if not m:
                continue
            text = m.group(2)
            if text.startswith("lock ") or (text.startswith("xchg") and "(" in text):
                found.add(int(m.group(1), 16))
    locked_cache[obj] = found
    return found

def locked(costs):
    return sum(ir for (obj, address), ir in costs.items() if address in locked_addresses(obj))

def units(path):
    rows = [r for r in json.load(open(path)) if r["workload"] == workload and r["system"] == system]
    return rows[0]["messages"]

quick_total, quick_costs = parse(f"{work}/quick.out")
full_total, full_costs = parse(f"{work}/full.out")
quick_units, full_units = units(f"{work}/quick.json"), units(f"{work}/full.json")
span = full_units - quick_units
instr = (full_total - quick_total) / span
lock = (locked(full_costs) - locked(quick_costs)) / span
print(f"{workload:<12} {system:<32} {full_units:>12,} {quick_units:>12,} {instr:>11,.0f} {lock:>12.1f}")
PY
    done <<<"$rows"
done
