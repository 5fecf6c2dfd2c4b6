#!/usr/bin/env bash
# Collector overhead, side by side in one run: alternates untraced processes (twice, to show the
# run-to-run spread) with traced ones (all records; kernels and runtime calls; kernels only) ROUNDS times and prints the median per-launch cost of a
# tiny-kernel loop and the median wall time of the mlp workload for each configuration.
#   run_overhead.sh BENCH_BINARY [ROUNDS]
set -u
bench=$1
rounds=${2:-3}
results=$(mktemp)
all=runtime,driver,memory,nvtx,overhead
for r in $(seq "$rounds"); do
    "$bench" --mode untraced >>"$results"
    "$bench" --mode traced --kinds $all --trace "/tmp/overhead-$r.warpline" >>"$results"
    "$bench" --mode untraced-again >>"$results"
    "$bench" --mode kernels+runtime --kinds runtime >>"$results"
    "$bench" --mode kernels-only --kinds none >>"$results"
done
python3 - "$results" <<'PY'
import re, statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"mode=(\S+) launch_us=(\S+) mlp_s=(\S+)", line)
    if m:
        if m[1] not in rows:
            order.append(m[1])
        rows.setdefault(m[1], []).append((float(m[2]), float(m[3])))
base = rows["untraced"]
bl = statistics.median(x for x, _ in base)
bm = statistics.median(y for _, y in base)
print(f"{'configuration':<30}{'us/launch':>10}{'ratio':>8}{'mlp s':>9}{'ratio':>8}  runs")
for mode in order:
    l = statistics.median(x for x, _ in rows[mode])
    m = statistics.median(y for _, y in rows[mode])
    print(f"{mode:<30}{l:>10.3f}{l / bl:>8.2f}{m:>9.4f}{m / bm:>8.2f}  {len(rows[mode])}")
PY
