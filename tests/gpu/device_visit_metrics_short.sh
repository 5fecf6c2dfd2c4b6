set -u
BIN=.device/bin
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
T=/tmp/t; rm -rf $T; mkdir -p $T
R=$BIN/warpline-record
$R --workload gelu --elements 134217728 --repeats 3 --gpu-metrics -o $T/gelu-metrics.warpline 2>&1 | grep -v "gelu:"; echo gelu $?
$R --workload matmul --m 2048 --n 2048 --k 2048 --repeats 3 --gpu-metrics --gpu-metrics-frequency 20000 -o $T/matmul-20k.warpline 2>&1 | grep -v "matmul:"
$R --workload softmax --rows 65536 --cols 1024 --repeats 3 --gpu-metrics --gpu-metrics-frequency 20000 -o $T/softmax-20k.warpline 2>&1 | grep -v "matmul:"
$R --gpu-metrics -o $T/torch-gpt-metrics.warpline -- python3 tests/gpu/torch_gpt.py --steps 20 2>&1 | grep -v "^warpline-record: process"; echo torch $?
python3 - <<'PY'
import sqlite3, glob
for f in sorted(glob.glob("/tmp/t/*.warpline")):
    db = sqlite3.connect(f)
    ts = [t for (t,) in db.execute("SELECT timestamp FROM GPU_METRICS WHERE metricId=0 ORDER BY timestamp")]
    end = db.execute("SELECT value FROM WARPLINE_META WHERE key='end_time'").fetchone()
    k = db.execute("SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    iv = int(db.execute("SELECT value FROM WARPLINE_META WHERE key='gpu_metrics_interval_ns'").fetchone()[0])
    gaps = [(b-a, a) for a, b in zip(ts, ts[1:]) if b-a > 1.5*iv]
    print(f, "samples", len(ts), "first", ts[:1], "last", ts[-1:], "end", end, "kernels", k)
    print("  gaps:", len(gaps), "total ms", sum(g for g,_ in gaps)/1e6, [(round(g/1e6,2), round(a/1e6,2)) for g, a in gaps[:15]])
    for (m,) in db.execute("SELECT message FROM WARPLINE_ERRORS"): print("  error:", m)
PY
cd $T && for f in gelu-metrics matmul-20k softmax-20k torch-gpt-metrics; do xz -T4 -6 -c $f.warpline > $OUT/$f.warpline.xz; done; ls -la $OUT
