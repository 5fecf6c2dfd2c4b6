#!/usr/bin/env bash
# One visit to the GPU machine: records every bundled workload, tries the recorder's error paths,
# and measures the collector's overhead, writing everything under $OUT. The binaries are built on
# the development machine and carried in .device/bin (see docs/benchmarks.md for how).
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT/traces"
log="$OUT/visit.log"
{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "== record"
    for w in $("$BIN/warpline-record" --list | awk '/^[a-z]/ {print $1}'); do
        /usr/bin/time -f "$w: %e s wall, %M KB max RSS" \
            "$BIN/warpline-record" --workload "$w" -o "$OUT/traces/$w.warpline" --quiet
        echo "$w exit $?"
    done
    ls -l "$OUT/traces"
    echo "== error paths"
    "$BIN/warpline-record" --workload gelu -o "$OUT/traces/gelu.warpline"; echo "existing output: exit $?"
    "$BIN/warpline-record" --workload nope; echo "unknown workload: exit $?"
    CUDA_VISIBLE_DEVICES= "$BIN/warpline-record" --workload gelu -o /tmp/nogpu.warpline
    echo "no visible GPU: exit $?, file left: $(ls /tmp/nogpu.warpline 2>/dev/null || echo none)"
    echo "== overhead"
    bash bench/run_overhead.sh "$BIN/warpline-bench-overhead" 3
} > "$log" 2>&1
tar -C "$OUT" -czf "$OUT/traces.tgz" traces && rm -rf "$OUT/traces"
cat "$log"
