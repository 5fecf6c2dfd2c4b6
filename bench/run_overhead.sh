#!/usr/bin/env bash
# Collector overhead, side by side in one run: alternates untraced and traced processes ROUNDS
# times and prints the median per-launch cost and mlp wall time of each configuration.
#   run_overhead.sh BENCH_BINARY [ROUNDS]
set -eu
bench=$1
rounds=${2:-3}
results=$(mktemp)
for r in $(seq "$rounds"); do
    "$bench" --mode untraced >>"$results"
    "$bench" --mode traced --trace "/tmp/overhead-$r.warpline" >>"$results"
done
python3 - "$results" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"mode=(\S+) launch_us=(\S+) mlp_s=(\S+)", line)
    if m:
        rows.setdefault(m[1], []).append((float(m[2]), float(m[3])))
    elif line.startswith("records="):
        print(line.strip())
base = rows["untraced"]
bl = statistics.median(x for x, _ in base)
bm = statistics.median(y for _, y in base)
print(f"{'configuration':<26}{'us/launch':>10}{'ratio':>8}{'mlp s':>9}{'ratio':>8}  runs")
for mode in ("untraced", "traced", "after-finalize"):
    if mode in rows:
        l = statistics.median(x for x, _ in rows[mode])
        m = statistics.median(y for _, y in rows[mode])
        print(f"{mode:<26}{l:>10.3f}{l / bl:>8.2f}{m:>9.4f}{m / bm:>8.2f}  {len(rows[mode])}")
PY
