#!/usr/bin/env bash
# The PyTorch MLP step time (bench/torch_mlp.py) untraced and under warpline-record with each
# CUPTI setting of bench/run_overhead_tuning.sh and without driver API records, alternated ROUNDS
# times in one run; medians.
#   run_torch_overhead_tuning.sh WARPLINE_RECORD [ROUNDS]
set -u
record=$1
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
results=$(mktemp)
run() { # NAME TUNING [warpline-record options]
    local name=$1 tuning=$2; shift 2
    echo "$name $(WARPLINE_CUPTI_TUNING=$tuning "$record" --quiet --force -o /tmp/torch_tuning.warpline "$@" -- python3 "$here/torch_mlp.py" --sync end)" >>"$results"
}
for r in $(seq "$rounds"); do
    echo "untraced $(python3 "$here/torch_mlp.py" --sync end)" >>"$results"
    if [ -n "${CONFIGS:-}" ]; then
        for c in $CONFIGS; do
            t=$c; [ "$c" = default ] && t=""
            run "$c" "$t"
        done
        continue
    fi
    run warpline ""
    run no-driver-api "" --no-driver-api
    run pinned pinned
    run zeroed zeroed
    run perthread perthread
    run pinned,zeroed,no-driver pinned,zeroed --no-driver-api
done
python3 - "$results" <<'PY'
import re, statistics, sys
rows, order = {}, []
for line in open(sys.argv[1]):
    m = re.match(r"(\S+) .*step_ms=(\S+)", line.replace("\n", " "))
    if m:
        if m[1] not in rows:
            order.append(m[1])
        rows.setdefault(m[1], []).append(float(m[2]))
base = statistics.median(rows["untraced"])
print(f"{'configuration':<28}{'ms/step':>10}{'ratio':>8}  runs")
for k in order:
    v = statistics.median(rows[k])
    print(f"{k:<28}{v:>10.3f}{v / base:>8.2f}  {len(rows[k])}")
PY
