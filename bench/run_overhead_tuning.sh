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
python3 "$(dirname "$0")/overhead_summary.py" "$results"
