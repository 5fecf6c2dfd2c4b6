#!/usr/bin/env bash
# CUPTI settings that might lower the collector's overhead, side by side in one run: alternates
# untraced processes with traced ones (CONFIGS="a b,c" picks the settings) (every configuration records what warpline-record records)
# under each WARPLINE_CUPTI_TUNING setting, ROUNDS times, and prints medians per configuration:
# µs per launch of the tiny-kernel loop (and of the launching alone, before the sync, and of
# 256-launch bursts), mlp seconds.
#   run_overhead_tuning.sh BENCH_BINARY [ROUNDS]
set -u
bench=$1
rounds=${2:-3}
results=$(mktemp)
all=runtime,driver,memory,nvtx,overhead
configs=${CONFIGS:-"default pinned perthread zeroed devbuf64,prealloc8 pinned,perthread,zeroed"}
for r in $(seq "$rounds"); do
    "$bench" --mode untraced >>"$results"
    if [ -z "${CONFIGS:-}" ]; then
        "$bench" --mode kernels-only --kinds none >>"$results"
        "$bench" --mode kernels-only+pinned --kinds none --tuning pinned >>"$results"
        "$bench" --mode traced:no-driver-api --kinds runtime,memory,nvtx,overhead >>"$results"
    fi
    for c in $configs; do
        t=$c; [ "$c" = default ] && t=""
        "$bench" --mode "traced:$c" --kinds $all --tuning "$t" --trace "/tmp/tuning-$r.warpline" >>"$results"
    done
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
print(f"{'configuration':<40}{'us/launch':>10}{'ratio':>7}{'cpu us':>8}{'burst us':>9}{'ratio':>7}{'mlp s':>8}{'ratio':>7}  runs")
for mode in order:
    l, m, c, b = (med(mode, i) for i in range(4))
    print(f"{mode:<40}{l:>10.3f}{l / med('untraced', 0):>7.2f}{c:>8.3f}{b:>9.3f}"
          f"{b / med('untraced', 3):>7.2f}{m:>8.4f}{m / med('untraced', 1):>7.2f}  {len(rows[mode])}")
PY
