#!/usr/bin/env python3
"""Medians per configuration of warpline-bench-overhead's result lines, and their ratio to the
untraced configuration: µs per launch of the loop, of its launching alone (before the sync), of
256-launch bursts, and mlp seconds. Used by run_overhead.sh and run_overhead_tuning.sh.
    overhead_summary.py RESULTS_FILE"""
import re
import statistics
import sys

rows, order = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"mode=(\S+) launch_us=(\S+) mlp_s=(\S+) cpu_launch_us=(\S+) burst_us=(\S+)", line)
    if m:
        if m[1] not in rows:
            order.append(m[1])
        rows.setdefault(m[1], []).append([float(v) for v in m.groups()[1:]])
med = lambda mode, i: statistics.median(row[i] for row in rows[mode])
width = max(map(len, order)) + 2
print(f"{'configuration':<{width}}{'us/launch':>10}{'ratio':>7}{'cpu us':>8}{'burst us':>9}"
      f"{'ratio':>7}{'mlp s':>8}{'ratio':>7}  runs")
for mode in order:
    l, m, c, b = (med(mode, i) for i in range(4))
    print(f"{mode:<{width}}{l:>10.3f}{l / med('untraced', 0):>7.2f}{c:>8.3f}{b:>9.3f}"
          f"{b / med('untraced', 3):>7.2f}{m:>8.4f}{m / med('untraced', 1):>7.2f}  {len(rows[mode])}")
