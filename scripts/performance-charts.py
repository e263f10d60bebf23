#!/usr/bin/env python3
"""Draws `troupe-bench --json` output (stdin) as one SVG of charts: a panel per workload, a bar
per system, ns per unit (per round trip, message, hop, actor: the workload's unit), shorter is
faster; memory rows in bytes per actor. Every figure comes from the run; nothing is typed.

    troupe-bench --json 2> run.txt | scripts/performance-charts.py --header run.txt OUT.svg

--header names a file holding the run's stderr: its `machine:` and `date:` lines become the
caption. A panel uses a log scale when its largest bar is more than 30 times its smallest.
Systems are coloured by family: Troupe, Swift native, Dispatch, CAF, Erlang. Latency workloads
are drawn at their p50. Python's standard library only."""
import html
import json
import math
import sys

FAMILIES = [  # (prefix, colour), first match wins
    ("Troupe", "#3056d3"),
    ("Swift native on Troupe", "#7a5af8"),
    ("Swift native", "#f79009"),
    ("Dispatch", "#667085"),
    ("CAF", "#12b76a"),
    ("Erlang", "#d92d20"),
]
PANEL_WIDTH = 680
BAR_HEIGHT = 16
LABEL_WIDTH = 330


def colour(system):
    for prefix, value in sorted(FAMILIES, key=lambda family: -len(family[0])):
        if system.startswith(prefix):
            return value
    return "#98a2b3"


def value_of(row):
    """(value, unit label) of a row, or None when the row has no figure to chart."""
    if row["workload"] in ("MemoryPerIdleActor", "TimersMemory"):
        key = next((k for k in row if k.startswith("bytes_per_")), None)
        value = row.get(key) if key else None
        return (value, "bytes per " + row.get("unit", "unit")) if isinstance(value, (int, float)) else None
    if row["workload"] in ("IdleCPU", "TimersIdleCPU", "TimersLateness"):
        return None
    latency = row.get("latency_ns") or row.get("latency")
    if isinstance(latency, dict) and "p50" in latency and row["workload"].endswith("Latency"):
        return (float(latency["p50"]), "ns per " + row.get("unit", "unit") + " (p50)")
    value = row.get("ns_per_msg")
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return (float(value), "ns per " + row.get("unit", "unit"))


def short(value):
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def panel(workload, rows, top):
    """The SVG of one workload's panel at vertical offset `top`; returns (svg, height)."""
    values = [(row["system"], *value_of(row)) for row in rows if value_of(row)]
    if not values:
        return "", 0
    unit = values[0][2]
    largest = max(v for _, v, _ in values)
    smallest = min(v for _, v, _ in values)
    logarithmic = smallest > 0 and largest / smallest > 30
    width = PANEL_WIDTH - LABEL_WIDTH - 70

    def length(value):
        if logarithmic:
            floor = 10 ** math.floor(math.log10(smallest))
            span = math.log10(largest) - math.log10(floor)
            return max(2, width * (math.log10(value) - math.log10(floor)) / (span or 1))
        return max(2, width * value / largest)

    parts = [
        f'<text x="0" y="{top + 14}" class="title">{html.escape(workload)}</text>',
        f'<text x="{PANEL_WIDTH}" y="{top + 14}" class="axis" text-anchor="end">'
        f'{html.escape(unit)}{" (log scale)" if logarithmic else ""}, '
        f'{"less is better" if unit.startswith("bytes") else "shorter is faster"}</text>',
    ]
    y = top + 24
    for system, value, _ in values:
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 12}" class="label" text-anchor="end">'
                     f'{html.escape(system[:60])}</text>')
        parts.append(f'<rect x="{LABEL_WIDTH}" y="{y + 2}" width="{length(value):.1f}" height="{BAR_HEIGHT - 4}" '
                     f'fill="{colour(system)}"><title>{html.escape(system)}: {short(value)}</title></rect>')
        parts.append(f'<text x="{LABEL_WIDTH + length(value) + 4:.1f}" y="{y + 12}" class="value">'
                     f'{short(value)}</text>')
        y += BAR_HEIGHT
    return "\n".join(parts), y - top + 14


def caption(header_path):
    if not header_path:
        return ["troupe-bench", ""]
    machine, date, command = "", "", ""
    with open(header_path, encoding="utf-8") as header:
        for line in header:
            if line.startswith("machine:"):
                machine = line.split(":", 1)[1].strip()
            elif line.startswith("date:"):
                date = line.split(":", 1)[1].split(";")[0].strip()
            elif line.startswith("command:"):
                command = line.split(":", 1)[1].strip()
    return [command, f"{machine} · {date}"]


def main():
    arguments = sys.argv[1:]
    header = None
    if len(arguments) >= 2 and arguments[0] == "--header":
        header = arguments[1]
        arguments = arguments[2:]
    if len(arguments) != 1:
        sys.exit("usage: troupe-bench --json 2> run.txt | performance-charts.py [--header run.txt] OUT.svg")
    rows = json.load(sys.stdin)
    workloads = []
    for row in rows:
        if row["workload"] not in workloads:
            workloads.append(row["workload"])
    panels, top = [], 52
    for workload in workloads:
        svg, height = panel(workload, [row for row in rows if row["workload"] == workload], top)
        if svg:
            panels.append(svg)
            top += height
    if not panels:
        sys.exit("performance-charts.py: no row with a figure to chart")
    text = caption(header)
    document = f'''<svg xmlns="http://www.w3.org/2000/svg" width="{PANEL_WIDTH + 20}" height="{top + 10}" viewBox="-10 0 {PANEL_WIDTH + 20} {top + 10}" font-family="system-ui, sans-serif">
<style>
  .title {{ font-size: 13px; font-weight: 600; fill: #1d2330; }}
  .label, .value {{ font-size: 11px; fill: #344054; }}
  .axis, .caption {{ font-size: 10px; fill: #667085; }}
</style>
<rect x="-10" y="0" width="{PANEL_WIDTH + 20}" height="{top + 10}" fill="#ffffff"/>
<text x="0" y="16" class="title">troupe-bench: time per unit, each workload in its own panel</text>
<text x="0" y="30" class="caption">{html.escape(text[0])}</text>
<text x="0" y="42" class="caption">{html.escape(text[1])}</text>
{chr(10).join(panels)}
</svg>
'''
    with open(arguments[0], "w", encoding="utf-8") as out:
        out.write(document)
    print(f"performance-charts.py: {len(panels)} panels written to {arguments[0]}", file=sys.stderr)


if __name__ == "__main__":
    main()
