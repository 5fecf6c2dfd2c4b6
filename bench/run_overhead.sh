#!/usr/bin/env bash
# Collector overhead, side by side in one run: alternates, ROUNDS times, processes that are
# untraced (twice, to show the run-to-run spread), recorded by Warpline (everything a workload
# recording records; kernels only) and recorded by a bare CUPTI client (kernel and runtime
# records; kernels only; buffers freed unread: the floor under any CUPTI-based recorder), and
# prints medians: µs per launch of a 50,000 tiny-kernel loop, of its launching alone (before the
# sync), of 256-launch bursts that never fill the launch queue, and mlp seconds.
#   run_overhead.sh BENCH_BINARY [ROUNDS]
set -u
bench=$1
rounds=${2:-3}
results=$(mktemp)
all=runtime,driver,memory,nvtx,overhead
for r in $(seq "$rounds"); do
    "$bench" --mode untraced >>"$results"
    "$bench" --mode warpline --kinds $all --trace "/tmp/overhead-$r.warpline" >>"$results"
    "$bench" --mode raw-cupti:kernels+runtime --raw-cupti --kinds runtime >>"$results"
    "$bench" --mode warpline:kernels-only --kinds none >>"$results"
    "$bench" --mode raw-cupti:kernels-only --raw-cupti --kinds none >>"$results"
    "$bench" --mode untraced-again >>"$results"
done
python3 - "$results" <<'PY'
import re, statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"mode=(\S+) launch_us=(\S+) mlp_s=(\S+) cpu_launch_us=(\S+) burst_us=(\S+)", line)
    if m:
        if m[1] not in rows:
            order.append(m[1])
        rows.setdefault(m[1], []).append([float(v) for v in m.groups()[1:]])
med = lambda mode, i: statistics.median(row[i] for row in rows[mode])
print(f"{'configuration':<28}{'us/launch':>10}{'ratio':>7}{'cpu us':>8}{'burst us':>9}{'ratio':>7}{'mlp s':>8}{'ratio':>7}  runs")
for mode in order:
    l, m, c, b = (med(mode, i) for i in range(4))
    print(f"{mode:<28}{l:>10.3f}{l / med('untraced', 0):>7.2f}{c:>8.3f}{b:>9.3f}"
          f"{b / med('untraced', 3):>7.2f}{m:>8.4f}{m / med('untraced', 1):>7.2f}  {len(rows[mode])}")
PY
