#!/usr/bin/env bash
# The instruction guard: instructions per unit of work of Troupe's hot paths, counted by valgrind's
# callgrind, against committed thresholds. Counts, not time: they do not drift with the VM's load.
#
# Usage: scripts/instruction-guard.sh [--check FILE | --record FILE] [--binary PATH] [--repeat N]
#                                     [--row WORKLOAD/SYSTEM]...
#   --check FILE    compare with FILE (default: Benchmarks/Thresholds/instructions.json); exit 1
#                   when a row costs more than its threshold × (1 + tolerance)
#   --record FILE   measure and write FILE (machine, date, Swift, valgrind, commit, command);
#                   an existing FILE's per-row "tolerance" and "why" are kept
#   --binary PATH   measure this troupe-bench (default: build Benchmarks' release product)
#   --repeat N      measure each row N times, compare (or record) the mean and print the spread
#                   (default: 1 for --check, 2 for --record)
#   --row W/S       only this row (repeatable; default: every row of the file, or for --record
#                   the rows below)
#   --jobs N        --check measures N rows at a time (default: the CPU count; callgrind runs a
#                   program on one CPU, and counts instructions, not time, so rows measured side
#                   by side count what they count alone). --record measures one at a time.
#
# Rows: Counting/Troupe, Counting/Troupe (actor producer), PingPong/Troupe, ThreadRing/Troupe,
# Spawn/Troupe, Spawn/Troupe (spawn + ask from a task on its executor), AskLatency/Troupe (actor ask),
# AskLatency/Troupe (ask from a task on its executor).
# Each is measured as scripts/instructions.sh measures it (scripts/callgrind_units.py): under
# callgrind on one worker, stripped binary, at the --quick size and at a larger size; the marginal
# cost (large − quick) ÷ (units large − units quick) is the cost of one unit. The larger size is
# `--size N` (the MEDIUM table below) when troupe-bench has that option, else the full size.
# The file records the troupe-bench arguments of each row's larger size, and --check uses
# exactly those, so a check measures what was recorded.
# Verdicts: a rise beyond the row's tolerance fails (the row and both counts are printed, also
# as an `error:` line); a fall beyond it passes and asks for the thresholds to be re-recorded.
# Needs valgrind and binutils (objdump). See "The instruction guard" in Benchmarks/README.md.
set -euo pipefail
caller=$PWD
absolute() { case "$1" in /*) echo "$1" ;; *) echo "$caller/$1" ;; esac; }
cd "$(dirname "$0")/.."

mode=check
file=Benchmarks/Thresholds/instructions.json
binary=
repeat=
rows=()
jobs=$(nproc)
command_line="scripts/instruction-guard.sh $*"
usage() { sed -n '5,21p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --check) mode=check; file=$(absolute "${2:?--check needs a file}"); shift 2 ;;
        --record) mode=record; file=$(absolute "${2:?--record needs a file}"); shift 2 ;;
        --binary) binary=$(absolute "${2:?--binary needs a path}"); shift 2 ;;
        --repeat) repeat=${2:?--repeat needs a count}; shift 2 ;;
        --row) rows+=("${2:?--row needs WORKLOAD/SYSTEM}"); shift 2 ;;
        --jobs) jobs=${2:?--jobs needs a count}; shift 2 ;;
        -h | --help) usage ;;
        *) echo "instruction-guard.sh: unknown argument $1" >&2; usage ;;
    esac
done
[ -n "$repeat" ] || repeat=$([ $mode = record ] && echo 2 || echo 1)
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 2; }
command -v objdump >/dev/null || { echo "objdump is missing: apt-get install binutils" >&2; exit 2; }

if [ -z "$binary" ]; then
    swift build --package-path Benchmarks -c release --product troupe-bench >&2
    binary=Benchmarks/.build/release/troupe-bench
fi
[ -x "$binary" ] || { echo "instruction-guard.sh: no executable at $binary" >&2; exit 2; }
work=$(mktemp -d /tmp/troupe-instruction-guard-XXXXXX)
trap 'rm -rf "$work"' EXIT
# A copy (the build may be replaced while we measure), without debug info: as users run it, and
# valgrind 3.19 cannot read Swift 6.3's DWARF.
strip -g -o "$work/troupe-bench" "$binary"
binary_sha256=$(sha256sum "$binary" | cut -d' ' -f1)

machine="$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), $(uname -sr)"
swift_version=$(swift --version 2>/dev/null | head -1 || true)
echo "# $command_line"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $machine, ${swift_version:-swift not found}, $(valgrind --version)"

MODE=$mode FILE=$file REPEAT=$repeat JOBS=$jobs BINARY="$work/troupe-bench" WORK=$work MACHINE=$machine \
SWIFT_VERSION=$swift_version COMMAND_LINE=$command_line BINARY_SHA256=$binary_sha256 \
    python3 -u - "${rows[@]}" <<'PY'
import concurrent.futures, datetime, json, os, re, subprocess, sys, time

sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the work tree
sys.path.insert(0, "scripts")
import callgrind_units

mode, path, repeat = os.environ["MODE"], os.environ["FILE"], int(os.environ["REPEAT"])
jobs = max(1, int(os.environ["JOBS"]))
binary, work = os.environ["BINARY"], os.environ["WORK"]
only = sys.argv[1:]

DEFAULT_ROWS = [
    "Counting/Troupe", "Counting/Troupe (actor producer)", "PingPong/Troupe", "ThreadRing/Troupe", "Spawn/Troupe",
    "Spawn/Troupe (spawn + ask from a task on its executor)",
    "AskLatency/Troupe (actor ask)", "AskLatency/Troupe (ask from a task on its executor)",
]
# The larger size when troupe-bench has `--size N` (N units, for every selected row), chosen so
# that a run's size-independent noise stays below ~0.5 % of a unit's cost: the allocation guard's
# sizes, except AskLatency, whose percentile computation at the end of a row (HdrHistogram
# iteration on the main thread) varies by 2-6 M instructions with the latencies measured.
SIZE_OPTION = "--size"
MEDIUM = {"Counting": 1_000_000, "PingPong": 200_000, "ThreadRing": 500_000, "Spawn": 50_000, "AskLatency": 200_000}
DEFAULT_TOLERANCE = 0.03
# Rows recorded for the first time get DEFAULT_TOLERANCE unless listed here; a re-record keeps
# the file's tolerance and "why" of each row.
FIRST_TOLERANCE = {
    "Counting/Troupe": (0.08, "a plain thread sends; the worker polls for 20 us of wall time when idle and senders skip "
                              "the futex wake-up while it polls, so the sender's instructions per message depend on "
                              "timing even under valgrind (211.4-220.0 over 12 full-size runs on 2026-11-25, at most 3.3 % "
                              "above the threshold: the tolerance is twice that); the actor producer row is the "
                              "exact guard of the send path"),
}


def fail_setup(message):
    print(f"error: instruction guard: {message}", file=sys.stderr)
    sys.exit(2)


def measure(row, large_args):
    workload, system = row.split("/", 1)
    runs = []
    for _ in range(repeat):
        started = time.monotonic()
        try:
            m = callgrind_units.measure(binary, workload, system, large_args, work)
        except RuntimeError as error:
            fail_setup(str(error))
        m["seconds"] = time.monotonic() - started
        runs.append(m)
    units = {(m["units_quick"], m["units_large"]) for m in runs}
    if len(units) != 1:
        fail_setup(f"{row}: the units changed between repeats: {sorted(units)}")
    counts = [m["instr_per_unit"] for m in runs]
    return {
        "instr": sum(counts) / len(counts),
        "runs": counts,
        "spread": (max(counts) - min(counts)) / min(counts) if min(counts) > 0 else 0.0,
        "locked": sum(m["locked_per_unit"] for m in runs) / len(runs),
        "units": [runs[0]["units_quick"], runs[0]["units_large"]],
        "seconds": sum(m["seconds"] for m in runs),
    }


def runs_text(r):
    text = " / ".join(f"{c:,.1f}" for c in r["runs"])
    return f"{text} (spread {r['spread'] * 100:.2f} %)" if len(r["runs"]) > 1 else text


help_text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
has_size = re.search(re.escape(SIZE_OPTION) + r"\b", help_text) is not None
started = time.monotonic()

if mode == "record":
    if not has_size:
        print(f"note: troupe-bench has no {SIZE_OPTION} option: each row's larger size is its full size (slower)")
    old = {}
    if os.path.exists(path):
        try:
            old = json.load(open(path)).get("rows", {})
        except ValueError:
            pass
    wanted = only or DEFAULT_ROWS
    entries = {}
    for row in wanted:
        workload = row.split("/", 1)[0]
        large_args = [SIZE_OPTION, str(MEDIUM[workload])] if has_size and workload in MEDIUM else []
        r = measure(row, large_args)
        first_tolerance, first_why = FIRST_TOLERANCE.get(row, (DEFAULT_TOLERANCE, None))
        tolerance = old.get(row, {}).get("tolerance", first_tolerance)
        entry = {
            "instr_per_unit": round(r["instr"], 1),
            "tolerance": tolerance,
            "units": r["units"],
            "large_args": large_args,
            "runs": [round(c, 1) for c in r["runs"]],
            "locked_per_unit": round(r["locked"], 2),
        }
        why = old.get(row, {}).get("why", first_why if row not in old else None)
        if why:
            entry["why"] = why
        entries[row] = entry
        print(f"{row:<55} {r['units'][1]:>10,} / {r['units'][0]:<8,} {runs_text(r):<40} locked {r['locked']:.2f}  "
              f"({r['seconds']:.0f} s)", flush=True)
        if r["spread"] > tolerance / 2:
            print(f"warning: {row}: the spread between repeats ({r['spread'] * 100:.2f} %) is more than half its "
                  f"tolerance ({tolerance * 100:.1f} %): widen the tolerance (and say why) or find the noise", flush=True)
    document = {
        "comment": "Instruction thresholds for scripts/instruction-guard.sh: callgrind instructions (Ir, every thread) "
                   "per unit of work, marginal cost between troupe-bench's --quick size and the row's larger size "
                   "(large_args; [] is the full size), one Troupe worker, release build stripped of debug info. A row "
                   "fails when it costs more than instr_per_unit × (1 + tolerance); below instr_per_unit × "
                   "(1 − tolerance) it passes and asks for a re-record. runs: each measurement of the recording; "
                   "locked_per_unit: lock-prefixed instructions and xchg with memory, for information (not checked). "
                   "See 'The instruction guard' in Benchmarks/README.md.",
        "recorded": {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": os.environ["MACHINE"],
            "swift": os.environ["SWIFT_VERSION"],
            "valgrind": subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip(),
            "commit": subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                                     text=True).stdout.strip(),
            "command": os.environ["COMMAND_LINE"],
            "binary_sha256": os.environ["BINARY_SHA256"],
            "repeats": repeat,
        },
        "default_tolerance": DEFAULT_TOLERANCE,
        "rows": entries,
    }
    if only and os.path.exists(path):
        # Re-recording some rows: keep the others as they were.
        previous = json.load(open(path))
        previous["rows"].update(entries)
        previous["recorded"] = document["recorded"]
        document = previous
    lines = ["{"]
    for i, (key, value) in enumerate(document.items()):
        comma = "," if i < len(document) - 1 else ""
        if key == "rows":
            lines.append('  "rows": {')
            for j, (row, entry) in enumerate(value.items()):
                lines.append(f"    {json.dumps(row)}: {json.dumps(entry, ensure_ascii=False)}"
                             + ("," if j < len(value) - 1 else ""))
            lines.append("  }" + comma)
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{comma}")
    lines.append("}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(entries)} thresholds to {path} in {time.monotonic() - started:.0f} s")
    sys.exit(0)

# --check
try:
    document = json.load(open(path))
    thresholds = document["rows"]
except (OSError, ValueError, KeyError) as error:
    fail_setup(f"cannot read thresholds from {path}: {error}")
default_tolerance = document.get("default_tolerance", DEFAULT_TOLERANCE)
wanted = only or list(thresholds)
missing = [row for row in DEFAULT_ROWS if row not in thresholds]
failures, improvements = [], []
header = f"{'row':<55} {'units':>21} {'threshold':>10} {'measured':>10} {'change':>8} {'tol.':>6}  verdict"
print(header)
for row in wanted:
    if row not in thresholds:
        fail_setup(f"{row}: no threshold in {path} (record one: scripts/instruction-guard.sh --record {path} --row '{row}')")
    large_args = thresholds[row].get("large_args", [])
    if large_args and not re.search(re.escape(large_args[0]) + r"\b", help_text):
        fail_setup(f"{row}: {path} was recorded with troupe-bench {' '.join(large_args)}, which this binary lacks")
# Rows side by side (each measure() has a directory of its own); verdicts printed in the file's order.
with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    pending = {row: pool.submit(measure, row, thresholds[row].get("large_args", [])) for row in wanted}
    for row in wanted:
        t = thresholds[row]
        r = pending[row].result()
        tolerance = t.get("tolerance", default_tolerance)
        limit = t["instr_per_unit"]
        change = (r["instr"] - limit) / limit
        units = f"{r['units'][1]:,} / {r['units'][0]:,}"
        if t.get("units") and list(t["units"]) != r["units"]:
            fail_setup(f"{row}: measured at {units} units, {path} recorded at {t['units'][1]:,} / {t['units'][0]:,}: "
                       "the workload's sizes changed; re-record")
        if change > tolerance:
            verdict = "FAIL (regression)"
            failures.append((row, limit, r, change, tolerance))
        elif change < -tolerance:
            verdict = "ok, IMPROVED beyond tolerance: re-record"
            improvements.append((row, limit, r, change))
        else:
            verdict = "ok"
        print(f"{row:<55} {units:>21} {limit:>10,.1f} {r['instr']:>10,.1f} {change * 100:>+7.2f}% {tolerance * 100:>5.1f}%  "
              f"{verdict}  [{runs_text(r)}; locked {r['locked']:.2f} vs {t.get('locked_per_unit', float('nan')):.2f}; "
              f"{r['seconds']:.0f} s]", flush=True)

elapsed = time.monotonic() - started
recorded = document.get("recorded", {})
if isinstance(recorded, dict):
    print(f"thresholds: {path}, recorded {recorded.get('date', '?')} on {recorded.get('machine', '?')}, "
          f"{recorded.get('swift', '?')}, commit {recorded.get('commit', '?')}")
if missing and not only:
    print(f"note: rows the guard should cover but {path} lacks: {', '.join(missing)}")
for row, limit, r, change in improvements:
    print(f"note: {row} now costs {r['instr']:,.1f} instructions per unit, {-change * 100:.1f} % below its threshold "
          f"{limit:,.1f}: if the saving is meant, re-record: scripts/instruction-guard.sh --record {path}")
for row, limit, r, change, tolerance in failures:
    print(f"error: instruction guard: {row}: {r['instr']:,.1f} instructions per unit, threshold {limit:,.1f} "
          f"(+{change * 100:.2f} %, tolerance {tolerance * 100:.1f} %)", file=sys.stderr)
if failures:
    print(f"error: INSTRUCTION GUARD FAILED: {len(failures)} row(s) above threshold + tolerance ({path}); "
          f"{elapsed:.0f} s", file=sys.stderr)
    sys.exit(1)
print(f"instruction guard: all {len(wanted)} rows within their thresholds ({elapsed:.0f} s)")
PY
