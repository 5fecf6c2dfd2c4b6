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
python3 "$(dirname "$0")/overhead_summary.py" "$results"
