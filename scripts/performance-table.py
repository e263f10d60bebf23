#!/usr/bin/env python3
"""Turns `troupe-bench --json` output (stdin) into the README's Markdown performance table.
Every figure comes from the run; nothing is typed by hand."""
import json
import sys

def rate(value):
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f}"

rows = json.load(sys.stdin)
print("| Workload | System | unit | per second | ns per unit | × native | allocs/unit | targets |")
print("|---|---|---|---|---|---|---|---|")
for row in rows:
    ratio = row.get("ratio_vs_native")
    targets = "; ".join(
        f"{t['figure']} ({t['target']}) {'PASS' if t['pass'] else 'MISS' if t['pass'] is False else ''}".strip()
        for t in row.get("targets", []) if t.get("pass") is not None)
    extra = row.get("note", "") if row["workload"] in ("IdleCPU", "MemoryPerIdleActor") else ""
    per_second = rate(row["msgs_per_second"]) if row.get("msgs_per_second") else ""
    ns = f"{row['ns_per_msg']:.1f}" if row.get("ns_per_msg") else ""
    latency = row.get("latency")
    if latency:
        ns += f" (p50 {latency.get('p50_ns', 0):.0f}, p99 {latency.get('p99_ns', 0):.0f})" if isinstance(latency, dict) and "p50_ns" in latency else ""
    print(f"| {row['workload']} | {row['system']} | {row.get('unit', '')} | {per_second} | {ns} | "
          f"{'' if ratio is None else f'{ratio:.2f}×'} | {row.get('allocs_per_msg', 0):.4f} | {targets or extra} |")
