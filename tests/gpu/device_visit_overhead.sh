#!/usr/bin/env bash
# One visit to the GPU machine for the collector's overhead on the launch loop and mlp: separate
# processes untraced, recorded by Warpline and by a bare CUPTI client (bench/run_overhead.sh,
# ROUNDS rounds), then untraced and traced phases alternated inside one process (--alternate),
# which takes out the process-to-process spread. Results in $OUT/visit.log.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
ROUNDS=${ROUNDS:-5}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/visit.log"
mkdir -p "$OUT"
{
    echo "== machine"; date -u; uname -r; nproc
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    echo "== separate processes: untraced, Warpline, bare CUPTI ($ROUNDS rounds)"
    timeout 300 bash bench/run_overhead.sh "$BIN/warpline-bench-overhead" "$ROUNDS"
    echo "== one process, phases alternated (12 rounds)"
    timeout 250 "$BIN/warpline-bench-overhead" --alternate 12 \
        --configs "runtime,driver,memory,nvtx,overhead;runtime,driver,memory,nosync,nvtx,overhead;runtime;none"
} > "$log" 2>&1
cat "$log"
