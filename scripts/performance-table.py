#!/usr/bin/env python3
"""Turns `troupe-bench --json` output (stdin) into the Markdown performance table of
Benchmarks/README.md. Every figure comes from the run; nothing is typed by hand.

    swift run --package-path Benchmarks -c release troupe-bench --json | scripts/performance-table.py
        prints the table;
    ... | scripts/performance-table.py --update [FILE]
        replaces the table between the markers below in FILE (default: Benchmarks/README.md).
The header line above the table (machine, date, load average) comes from the run's stderr and
is updated by hand."""
import json
import os
import sys

BEGIN = "<!-- performance-table:begin -->"
END = "<!-- performance-table:end -->"
DEFAULT_TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Benchmarks", "README.md")

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
        lines.append(f"| {row['workload']} | {row['system']} | {row.get('unit', '')} | {per_second} | {ns} | "
                     f"{'' if ratio is None else f'{ratio:.2f}×'} | {row.get('allocs_per_msg', 0):.4f} | {last} |")
    return lines

def update(path, lines):
    with open(path, encoding="utf-8") as file:
        text = file.read()
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        sys.exit(f"{path}: expected one {BEGIN} line followed by one {END} line")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w", encoding="utf-8") as file:
        file.write(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)

if __name__ == "__main__":
    arguments = sys.argv[1:]
    if arguments and (arguments[0] != "--update" or len(arguments) > 2):
        sys.exit("usage: performance-table.py [--update [FILE]] < troupe-bench.json")
    lines = table(json.load(sys.stdin))
    if arguments:
        update(arguments[1] if len(arguments) > 1 else DEFAULT_TARGET, lines)
    else:
        print("\n".join(lines))
