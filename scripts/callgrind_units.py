#!/usr/bin/env python3
"""Instructions and locked operations per unit of work of one troupe-bench row, from callgrind.

Shared by scripts/instructions.sh (a table for people) and scripts/instruction-guard.sh (CI's
comparison with Benchmarks/Thresholds/instructions.json). As a program:

    callgrind_units.py rows BINARY WORKLOAD REGEX
        the system names of WORKLOAD's rows that match REGEX, one a line (a --quick --json run,
        not under valgrind)
    callgrind_units.py measure [--large ARGS] [--json] BINARY WORKLOAD SYSTEM
        one row under callgrind at two sizes; prints instructions.sh's table line (or JSON)

One measurement runs `BINARY --filter =WORKLOAD/SYSTEM --no-warmup --json` under callgrind twice
on one Troupe worker (TROUPE_BENCH_WORKERS=1): once with --quick and once with the "large"
arguments (default: none, the full size). The marginal cost, (large - quick) / (units large -
units quick), cancels start-up, set-up and tear-down, leaving the cost of one unit (a message,
a round trip, a hop, a spawn...). Units are read from the row's "messages" in the JSON.
    instructions   executed, every thread of the process (callgrind's total Ir)
    locked         of those, locked read-modify-writes (lock-prefixed instructions and xchg with
                   memory), found by matching per-instruction counts (--dump-instr=yes) with
                   objdump's disassembly of each object
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def parse(path):
    """Total Ir and self cost (Ir) per (object, instruction address) from a callgrind file written
    with --dump-instr=yes. Addresses are relative to each object's load address, as in objdump."""
    objects, costs, total = {}, {}, 0
    ob = None
    address = 0
    skip_next = False  # the line after `calls=` is inclusive cost of a call, not self cost
    with open(path, errors="replace") as f:
        for line in f:
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


_locked_cache = {}


def locked_addresses(obj):
    """Addresses of locked read-modify-write instructions in an object file."""
    if obj in _locked_cache:
        return _locked_cache[obj]
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
    _locked_cache[obj] = found
    return found


def locked(costs):
    return sum(ir for (obj, address), ir in costs.items() if address in locked_addresses(obj))


def row_units(json_path, workload, system):
    rows = [r for r in json.load(open(json_path)) if r["workload"] == workload and r["system"] == system]
    if not rows:
        raise RuntimeError(f"{json_path}: no row {workload}/{system}")
    return rows[0]["messages"]


def list_rows(binary, workload, regex=".*"):
    """System names of `workload`'s rows matching `regex`, from a --quick --json run."""
    out = subprocess.run(
        [binary, "--filter", workload, "--quick", "--no-warmup", "--json"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True).stdout
    return [r["system"] for r in json.loads(out) if r["workload"] == workload and re.search(regex, r["system"])]


def run_once(binary, workload, system, args, work, name):
    """One callgrind run of one row; returns (total Ir, per-instruction costs, units)."""
    out_file, json_file, log_file = (os.path.join(work, f"{name}.{ext}") for ext in ("out", "json", "log"))
    env = dict(os.environ, TROUPE_BENCH_WORKERS="1", SWIFT_BACKTRACE="enable=no")
    command = ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out_file}",
               binary, "--filter", f"={workload}/{system}", "--no-warmup", "--json", *args]
    with open(json_file, "w") as stdout, open(log_file, "w") as stderr:
        status = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env).returncode
    if status != 0:
        tail = "".join(open(log_file, errors="replace").readlines()[-20:])
        raise RuntimeError(f"valgrind failed (status {status}) on {workload} / {system} {' '.join(args)}; its log:\n{tail}")
    total, costs = parse(out_file)
    units = row_units(json_file, workload, system)
    for path in (out_file, json_file, log_file):
        os.remove(path)
    return total, costs, units


def measure(binary, workload, system, large_args=(), work=None):
    """Marginal instructions and locked operations per unit of one row, between --quick and
    `large_args` (default: the full size)."""
    with tempfile.TemporaryDirectory(prefix="troupe-callgrind-", dir=work) as tmp:
        quick_total, quick_costs, quick_units = run_once(binary, workload, system, ["--quick"], tmp, "quick")
        large_total, large_costs, large_units = run_once(binary, workload, system, list(large_args), tmp, "large")
    span = large_units - quick_units
    if span <= 0:
        raise RuntimeError(f"{workload}/{system}: the large size ({large_units}) is not above quick ({quick_units})")
    return {
        "workload": workload,
        "system": system,
        "units_quick": quick_units,
        "units_large": large_units,
        "instructions_quick": quick_total,
        "instructions_large": large_total,
        "instr_per_unit": (large_total - quick_total) / span,
        "locked_per_unit": (locked(large_costs) - locked(quick_costs)) / span,
    }


def table_line(m):
    return (f"{m['workload']:<12} {m['system']:<32} {m['units_large']:>12,} {m['units_quick']:>12,} "
            f"{m['instr_per_unit']:>11,.0f} {m['locked_per_unit']:>12.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rows = sub.add_parser("rows")
    rows.add_argument("binary")
    rows.add_argument("workload")
    rows.add_argument("regex", nargs="?", default=".*")
    one = sub.add_parser("measure")
    one.add_argument("--large", default="", help="troupe-bench arguments of the large size (default: full)")
    one.add_argument("--json", action="store_true")
    one.add_argument("binary")
    one.add_argument("workload")
    one.add_argument("system")
    args = parser.parse_args()
    try:
        if args.command == "rows":
            for system in list_rows(args.binary, args.workload, args.regex):
                print(system)
        else:
            m = measure(args.binary, args.workload, args.system, shlex.split(args.large))
            print(json.dumps(m) if args.json else table_line(m), flush=True)
    except (RuntimeError, subprocess.CalledProcessError) as error:
        print(f"callgrind_units.py: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
