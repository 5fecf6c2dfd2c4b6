#!/usr/bin/env bash
# One visit to the GPU machine (binaries built on the development machine, carried in .device/bin):
# records every bundled workload and two PyTorch training loops, runs the gpu tests of
# `warpline-record -- PROGRAM`, tries the recorder's error paths, and measures the collector's
# overhead (SKIP_BENCH=1 leaves the overhead runs out). Everything lands under $OUT: visit.log and
# traces.tgz.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT/traces"
log="$OUT/visit.log"
{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__)'
    echo "== record workloads"
    for w in $("$BIN/warpline-record" --list | awk '/^[a-z]/ {print $1}'); do
        /usr/bin/time -f "$w: %e s wall, %M KB max RSS" \
            "$BIN/warpline-record" --workload "$w" -o "$OUT/traces/$w.warpline" --quiet
        echo "$w exit $?"
    done
    echo "== record PyTorch (unmodified program through -- )"
    for sync in every-step end; do
        "$BIN/warpline-record" -o "$OUT/traces/torch-mlp-sync-$sync.warpline" -- \
            python3 bench/torch_mlp.py --steps 40 --warmup 10 --sync "$sync"
        echo "torch sync=$sync exit $?"
        python3 - "$OUT/traces/torch-mlp-sync-$sync.warpline" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchone()[0]
print("  kernels", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
      "runtime", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"),
      "driver", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1"),
      "nvtx step ranges", q("SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value LIKE 'step %'"),
      "kernels without launch", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId)"),
      "status", q("SELECT value FROM WARPLINE_META WHERE key='status'"))
PY
    done
    echo "== gpu test: warpline-record -- PROGRAM"
    bash tests/gpu/record_program.sh "$BIN/warpline-record" "$BIN/cuda_probe" /tmp/probe-out
    echo "record_program exit $?"
    echo "== error paths"
    "$BIN/warpline-record" --workload gelu -o "$OUT/traces/gelu.warpline"; echo "existing output: exit $?"
    "$BIN/warpline-record" --workload nope; echo "unknown workload: exit $?"
    CUDA_VISIBLE_DEVICES= "$BIN/warpline-record" --workload gelu -o /tmp/nogpu.warpline
    echo "no visible GPU: exit $?, file left: $(ls /tmp/nogpu.warpline 2>/dev/null || echo none)"
    if [ -z "${SKIP_BENCH:-}" ]; then
        echo "== overhead: tiny-kernel launch loop and mlp workload"
        bash bench/run_overhead.sh "$BIN/warpline-bench-overhead" 3
        echo "== overhead: PyTorch MLP (dim 256, 32 layers, batch 64)"
        bash bench/run_torch_overhead.sh "$BIN/warpline-record" 3 end
    fi
} > "$log" 2>&1
tar -C "$OUT" -czf "$OUT/traces.tgz" traces && rm -rf "$OUT/traces"
cat "$log"
