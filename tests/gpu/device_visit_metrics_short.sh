#!/usr/bin/env bash
# Records the GPU-metrics test data on the GPU machine (tests/data/README.md, "GPU metrics"): the
# gelu, softmax and matmul workloads at sizes where their kernels last several samples, and a
# PyTorch GPT training step, each with --gpu-metrics; prints what each trace holds (sample gaps,
# errors); trims the GPU_METRICS rows more than 20 ms before the first kernel or after the last
# (idle set-up and checking, for size) and leaves the traces, xz-compressed, in $OUT.
set -u
BIN=${BIN:-.device/bin}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=/tmp/t; rm -rf $T; mkdir -p $T
R=$BIN/warpline-record
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$R --workload gelu --elements 134217728 --repeats 3 --gpu-metrics -o $T/gelu-metrics.warpline 2>&1 | grep -v "gelu: "
$R --workload softmax --rows 65536 --cols 1024 --repeats 3 --gpu-metrics -o $T/softmax-metrics.warpline 2>&1 | grep -v "softmax: "
$R --workload matmul --m 2048 --n 2048 --k 2048 --repeats 3 --gpu-metrics --gpu-metrics-frequency 20000 -o $T/matmul-metrics.warpline 2>&1 | grep -v "matmul: "
$R --gpu-metrics -o $T/torch-gpt-metrics.warpline -- python3 tests/gpu/torch_gpt.py --steps 20 2>&1 | grep -v "^warpline-record: process"
python3 - <<'PY'
import sqlite3, glob
for f in sorted(glob.glob("/tmp/t/*.warpline")):
    db = sqlite3.connect(f)
    ts = [t for (t,) in db.execute("SELECT timestamp FROM GPU_METRICS WHERE metricId=0 ORDER BY timestamp")]
    iv = int(db.execute("SELECT value FROM WARPLINE_META WHERE key='gpu_metrics_interval_ns'").fetchone()[0])
    gaps = [(b-a, a) for a, b in zip(ts, ts[1:]) if b-a > 1.5*iv]
    print(f, "samples", len(ts), "gaps", len(gaps), [(round(g/1e6,2), round(a/1e6,2)) for g, a in gaps[:10]])
    for (m,) in db.execute("SELECT message FROM WARPLINE_ERRORS"): print("  error:", m)
    db.execute("DELETE FROM GPU_METRICS WHERE timestamp < (SELECT MIN(start) FROM CUPTI_ACTIVITY_KIND_KERNEL) - 20000000 OR timestamp > (SELECT MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL) + 20000000")
    db.execute("INSERT OR REPLACE INTO WARPLINE_META VALUES ('gpu_metrics_trimmed', 'GPU_METRICS rows more than 20 ms before the first kernel or after the last were deleted for size (tests/data/README.md)')")
    db.commit(); db.execute("VACUUM"); db.close()
PY
ls -la $T
cd $T && for f in *.warpline; do xz -T4 -6 -c $f > $OUT/$f.xz; done; ls -la $OUT
