#!/usr/bin/env python3
"""Turns `troupe-bench --json` output (stdin) into the Markdown performance table of
Benchmarks/README.md. Every figure comes from the run; nothing is typed by hand.

    swift run --package-path Benchmarks -c release troupe-bench --json | scripts/performance-table.py
        prints the table;
    ... | scripts/performance-table.py --update [FILE]
        replaces the table between the markers below in FILE (default: Benchmarks/README.md);
    ... | scripts/performance-table.py --summary [FILE]
        replaces the short table of the project's README (between its summary markers; default:
        README.md) with the same run's figures for a few rows;
    ... | scripts/performance-table.py --executors FILE...
        replaces the table of Swift concurrency on Troupe's workers (native actors on Troupe
        serial executors, tasks on the task executor) between the executors-costs markers of
        each FILE.
The header line above the table (machine, date, load average) comes from the run's stderr and
is updated by hand."""
import json
import os
import sys

BEGIN = "<!-- performance-table:begin -->"
END = "<!-- performance-table:end -->"
DEFAULT_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Benchmarks", "README.md")
SUMMARY_BEGIN = "<!-- performance-summary:begin -->"
SUMMARY_END = "<!-- performance-summary:end -->"
DEFAULT_SUMMARY_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")

def ns(value):
    return f"{value:.3g} ns" if value < 100 else f"{value:.0f} ns"

def micro(nanoseconds):
    return f"{nanoseconds / 1000:.2f} µs"

def summary(rows):
    """The README's few rows: Troupe beside the native form that passes messages (and the
    awaited call without a hop) and Dispatch."""
    by = {(r["workload"], r["system"]): r for r in rows}
    def per_unit(workload, system):
        row = by.get((workload, system))
        return ns(row["ns_per_msg"]) if row and row.get("ns_per_msg") else "—"
    def p50(workload, system):
        row = by.get((workload, system))
        return micro(row["latency_ns"]["p50"]) if row and row.get("latency_ns") else "—"
    def p50ns(workload, system):
        row = by.get((workload, system))
        return f"{row['latency_ns']['p50']} ns" if row and row.get("latency_ns") else "—"
    def memory(system):
        row = by.get(("MemoryPerIdleActor", system))
        return f"{row['bytes_per_actor']:.0f} B" if row and row.get("bytes_per_actor") is not None else "—"
    def late(system):
        row = by.get(("TimersLateness", system))
        return f"{row['lateness_us']['p99']:.0f} µs" if row and row.get("lateness_us") else "—"
    lines = ["| Workload (unit) | Troupe | Swift native | Dispatch |", "|---|---|---|---|"]
    lines.append(f"| PingPong (round trip) | {per_unit('PingPong', 'Troupe')} | "
                 f"{per_unit('PingPong', 'Swift native (2 executors)')} (2 executors), "
                 f"{per_unit('PingPong', 'Swift native')} (no hop) | {per_unit('PingPong', 'Dispatch')} |")
    lines.append(f"| Counting (message, from a plain thread) | {per_unit('Counting', 'Troupe')} | "
                 f"{per_unit('Counting', 'Swift native (AsyncStream)')} (`AsyncStream`), "
                 f"{per_unit('Counting', 'Swift native')} (no hop) | {per_unit('Counting', 'Dispatch')} |")
    lines.append(f"| ThreadRing (hop) | {per_unit('ThreadRing', 'Troupe')} | "
                 f"{per_unit('ThreadRing', 'Swift native (AsyncStream)')} (`AsyncStream`), "
                 f"{per_unit('ThreadRing', 'Swift native')} (one task's chain of awaited calls) | "
                 f"{per_unit('ThreadRing', 'Dispatch')} |")
    lines.append(f"| Chameneos (meeting) | {per_unit('Chameneos', 'Troupe')} | {per_unit('Chameneos', 'Swift native')} | "
                 f"{per_unit('Chameneos', 'Dispatch')} |")
    lines.append(f"| Spawn + first message (actor) | {per_unit('Spawn', 'Troupe')} | {per_unit('Spawn', 'Swift native')} | "
                 f"{per_unit('Spawn', 'Dispatch')} |")
    lines.append(f"| Ask from an actor, p50 | {p50ns('AskLatency', 'Troupe (actor ask)')} | "
                 f"{p50ns('AskLatency', 'Swift native')} (a task awaits an actor's method) | — |")
    lines.append(f"| `askBlocking` from a plain thread, p50 | {p50('AskLatency', 'Troupe (askBlocking)')} | — | — |")
    lines.append(f"| Memory per idle actor | {memory('Troupe')} | {memory('Swift native')} | {memory('Dispatch')} |")
    lines.append(f"| Timer lateness, p99 | {late('Troupe')} | {late('Swift native (Task.sleep per timer)')} (`Task.sleep`) | — |")
    return lines

EXECUTORS_BEGIN = "<!-- executors-costs:begin -->"
EXECUTORS_END = "<!-- executors-costs:end -->"

def executors(rows):
    """Swift concurrency on Troupe's workers, each form beside what it replaces."""
    by = {(r["workload"], r["system"]): r for r in rows}
    def per_unit(workload, system):
        row = by.get((workload, system))
        return ns(row["ns_per_msg"]) if row and row.get("ns_per_msg") else "—"
    def ask(system):
        row = by.get(("AskLatency", system))
        if not row or not row.get("latency_ns"):
            return "—"
        return f"p50 {row['latency_ns']['p50']} ns, mean {row['ns_per_msg']:.0f} ns"
    on = "Swift native on Troupe executors"
    lines = ["| Form | Troupe executors | Beside it |", "|---|---|---|"]
    lines.append(f"| A task asks a Troupe actor (`try await ref.ask`) | {ask('Troupe (ask from a task on its executor)')} "
                 f"(task on `system.taskExecutor`) | {ask('Troupe (ask from a task)')} (task on Swift's global executor); "
                 f"{ask('Troupe (actor ask)')} (an actor's `context.ask`) |")
    lines.append(f"| PingPong, two native actors on Troupe executors of their own (round trip) | "
                 f"{per_unit('PingPong', 'Swift native on Troupe (2 executors)')} | "
                 f"{per_unit('PingPong', 'Swift native (2 executors)')} (executors of their own threads); "
                 f"{per_unit('PingPong', 'Troupe')} (Troupe actors) |")
    lines.append(f"| PingPong, two native actors sharing one Troupe executor (round trip) | "
                 f"{per_unit('PingPong', 'Swift native on Troupe (1 executor)')} | "
                 f"{per_unit('PingPong', 'Swift native')} (Swift's default executor, no hop) |")
    lines.append(f"| Counting, producer and counter sharing one Troupe executor (increment) | "
                 f"{per_unit('Counting', 'Swift native on Troupe (1 executor)')} | "
                 f"{per_unit('Counting', 'Swift native')} (Swift's default executor, no hop) |")
    lines.append(f"| Counting, producer and counter on Troupe executors of their own (increment, a round trip) | "
                 f"{per_unit('Counting', 'Swift native on Troupe (2 executors)')} | "
                 f"{per_unit('Counting', 'Troupe')} (a one-way `tell` to a Troupe actor) |")
    for workload, unit in (("Chameneos", "meeting"), ("Big", "ping"), ("ForkJoinThroughput", "message"),
                           ("Fibonacci", "actor")):
        lines.append(f"| {workload}, the native form on Troupe executors ({unit}) | {per_unit(workload, on)} | "
                     f"{per_unit(workload, 'Swift native')} (Swift's default executor); "
                     f"{per_unit(workload, 'Troupe')} (Troupe actors) |")
    return lines

def rate(value):
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f}"

def result(row):
    """The figure of a row without a rate (lateness, memory, idle CPU), as the bench prints it."""
    unit = row.get("unit", "")
    lateness = row.get("lateness_us")
    if lateness:
        return (f"late p50 {lateness['p50']:.1f} µs · p99 {lateness['p99']:.1f} µs · "
                f"p99.9 {lateness['p99_9']:.1f} µs · max {lateness['max']:.1f} µs")
    per_unit = row.get(f"bytes_per_{unit}")
    if per_unit is not None:
        rss = row.get(f"rss_bytes_per_{unit}")
        return f"{per_unit:.1f} B/{unit}" + (f" (RSS {rss:.1f} B)" if rss is not None else "")
    cpu = row.get("cpu_percent_of_one_core")
    if cpu is not None:
        return f"{cpu:.3f} % core"
    return ""

def table(rows):
    lines = []
    lines.append("| Workload | System | unit | per second | ns per unit | × native | allocs/unit | targets |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for row in rows:
        ratio = row.get("ratio_vs_native")
        targets = "; ".join(
            f"{t['figure']} ({t['target']}) {'PASS' if t['pass'] else 'MISS' if t['pass'] is False else ''}".strip()
            for t in row.get("targets", []) if t.get("pass") is not None)
        has_rate = bool(row.get("msgs_per_second"))
        figure = "" if has_rate else result(row)
        extra = row.get("note", "") if not has_rate else ""
        per_second = rate(row["msgs_per_second"]) if has_rate else ""
        ns = f"{row['ns_per_msg']:.1f}" if row.get("ns_per_msg") else ""
        latency = row.get("latency_ns")
        if latency and has_rate:
            ns += f" (p50 {latency['p50']}, p99 {latency['p99']})"
        last = "; ".join(part for part in (figure, targets or extra) if part)
        if row.get("system") in ("CAF", "Erlang/OTP") and not last:
            last = row.get("note", "")
        allocations = row.get("allocs_per_msg")
        allocations = "n/a" if allocations is None else f"{allocations:.4f}"
        lines.append(f"| {row['workload']} | {row['system']} | {row.get('unit', '')} | {per_second} | {ns} | "
                     f"{'' if ratio is None else f'{ratio:.2f}×'} | {allocations} | {last} |")
    return lines

def update(path, lines, begin=BEGIN, end=END):
    with open(path, encoding="utf-8") as file:
        text = file.read()
    if text.count(begin) != 1 or text.count(end) != 1 or text.index(begin) > text.index(end):
        sys.exit(f"{path}: expected one {begin} line followed by one {end} line")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w", encoding="utf-8") as file:
        file.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments and (arguments[0] not in ("--update", "--summary", "--executors")
                      or (arguments[0] != "--executors" and len(arguments) > 2)
                      or (arguments[0] == "--executors" and len(arguments) < 2)):
        sys.exit("usage: performance-table.py [--update [FILE] | --summary [FILE] | --executors FILE...] "
                 "< troupe-bench.json")
    rows = json.load(sys.stdin)
    if arguments and arguments[0] == "--executors":
        for path in arguments[1:]:
            update(path, executors(rows), EXECUTORS_BEGIN, EXECUTORS_END)
    elif arguments and arguments[0] == "--summary":
        update(arguments[1] if len(arguments) > 1 else DEFAULT_SUMMARY_TARGET, summary(rows),
               SUMMARY_BEGIN, SUMMARY_END)
    elif arguments:
        update(arguments[1] if len(arguments) > 1 else DEFAULT_TARGET, table(rows))
    else:
        print("\n".join(table(rows)))
