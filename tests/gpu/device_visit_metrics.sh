#!/usr/bin/env bash
# One visit to the GPU machine for GPU metrics (warpline-record --gpu-metrics): records the gelu,
# softmax and matmul workloads (sizes where each kernel lasts several sampling intervals) and a
# small PyTorch GPT training step with metrics, checks what the traces hold, measures the
# overhead of sampling against the same recording without it (alternating, 3 times each), and
# runs the occupancy probe when it was carried. Binaries come from .device/bin (built on the
# development machine). Everything lands under $OUT: visit.log and metrics-traces.tgz.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
T=$OUT/traces
mkdir -p "$T"
log="$OUT/visit.log"
GELU="--elements 268435456 --repeats 5"
SOFTMAX="--rows 131072 --cols 1024 --repeats 5"
MATMUL="--m 2048 --n 2048 --k 2048 --repeats 3"

summary() { # TRACE: what the trace holds about GPU metrics, and per-kernel means
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchall()
meta = dict(q("SELECT key, value FROM WARPLINE_META"))
print("  status", meta.get("status"), "| gpu_metrics:", meta.get("gpu_metrics"),
      "| interval", meta.get("gpu_metrics_interval_ns"))
for (m,) in q("SELECT message FROM WARPLINE_ERRORS"):
    print("  error:", m)
tables = {r[0] for r in q("SELECT name FROM sqlite_master WHERE type='table'")}
if "GPU_METRICS" not in tables:
    print("  no GPU_METRICS table"); sys.exit(0)
names = dict(((t, m), n) for t, m, n in q("SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS"))
print("  metrics:", "; ".join(names.values()))
print("  rows", q("SELECT COUNT(*) FROM GPU_METRICS")[0][0],
      "samples", q("SELECT COUNT(DISTINCT timestamp) FROM GPU_METRICS")[0][0],
      "first", q("SELECT MIN(timestamp) FROM GPU_METRICS")[0][0],
      "last", q("SELECT MAX(timestamp) FROM GPU_METRICS")[0][0],
      "trace end", meta.get("end_time"))
ts = sorted(t for (t,) in q("SELECT DISTINCT timestamp FROM GPU_METRICS WHERE metricId = 0"))
gaps = [b - a for a, b in zip(ts, ts[1:])]
if gaps:
    gaps.sort()
    print("  sample spacing ns: median", gaps[len(gaps)//2], "max", gaps[-1])
# Per kernel name: mean of each metric over samples whose interval lies inside an instance.
iv = int(meta.get("gpu_metrics_interval_ns") or 100000)
rows = q("""SELECT s.value, k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k
            JOIN StringIds s ON s.id = k.shortName ORDER BY k.start""")
samples = {}
for t, m, v in q("SELECT timestamp, metricId, value FROM GPU_METRICS"):
    samples.setdefault(t, {})[m] = v
st = sorted(samples)
import bisect
acc = {}
for name, a, b in rows:
    i = bisect.bisect_left(st, a + iv)
    while i < len(st) and st[i] <= b:
        d = acc.setdefault(name, {"n": 0, "sum": {}, "time": 0})
        d["n"] += 1
        for m, v in samples[st[i]].items():
            d["sum"][m] = d["sum"].get(m, 0) + v
        i += 1
tot = {}
for name, a, b in rows:
    tot[name] = tot.get(name, 0) + (b - a)
short = {m: n.split(" [")[0] for (t, m), n in names.items() if t == 0}
for name in sorted(tot, key=lambda n: -tot[n])[:14]:
    d = acc.get(name)
    if not d:
        print(f"  {name[:28]:28} {tot[name]/1e6:9.3f} ms  too short to sample"); continue
    means = ", ".join(f"{short[m]} {d['sum'][m]/d['n']:.1f}" for m in sorted(d["sum"]) if m in short)
    print(f"  {name[:28]:28} {tot[name]/1e6:9.3f} ms  {d['n']:5} samples: {means}")
PY
}

{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "== record workloads with --gpu-metrics (sampler in the workload's own process)"
    for spec in "gelu:$GELU" "softmax:$SOFTMAX" "matmul:$MATMUL"; do
        w=${spec%%:*}; a=${spec#*:}
        /usr/bin/time -f "$w: %e s wall, %M KB max RSS" \
            "$BIN/warpline-record" --workload "$w" $a --gpu-metrics -o "$T/$w-metrics.warpline"
        echo "$w exit $?"
        summary "$T/$w-metrics.warpline"
    done
    echo "== default sizes (the lessons as bundled): gelu"
    "$BIN/warpline-record" --workload gelu --gpu-metrics --quiet -o "$T/gelu-default-metrics.warpline"
    echo "exit $?"; summary "$T/gelu-default-metrics.warpline"
    echo "== PyTorch GPT step (-- python3, sampler in the recorder's process)"
    "$BIN/warpline-record" --gpu-metrics -o "$T/torch-gpt-metrics.warpline" -- \
        python3 tests/gpu/torch_gpt.py --steps 20
    echo "torch exit $?"
    summary "$T/torch-gpt-metrics.warpline"
    echo "== 1 kHz"
    "$BIN/warpline-record" --gpu-metrics-frequency 1000 --quiet --workload matmul $MATMUL -o "$T/matmul-1khz.warpline"
    echo "exit $?"; summary "$T/matmul-1khz.warpline" | head -4
    echo "== interrupted: SIGTERM to a workload recording with metrics"
    "$BIN/warpline-record" --workload runahead --launches 20000 --spin 200000 --gpu-metrics -o "$T/runahead-term.warpline" &
    pid=$!; sleep 3; kill -TERM $pid; wait $pid; echo "exit $?"
    summary "$T/runahead-term.warpline" | head -4
    echo "== overhead: the same recording with and without --gpu-metrics, alternating"
    for spec in "gelu:$GELU" "softmax:$SOFTMAX" "matmul:$MATMUL"; do
        w=${spec%%:*}; a=${spec#*:}
        for r in 1 2 3; do
            for mode in off on; do
                f=/tmp/ovh-$w-$mode-$r.warpline; rm -f "$f"
                flag=""; [ $mode = on ] && flag=--gpu-metrics
                s=$(date +%s.%N)
                "$BIN/warpline-record" --workload "$w" $a $flag --quiet -o "$f"
                e=$(date +%s.%N)
                python3 - "$f" "$w" "$mode" "$s" "$e" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
end = int(db.execute("SELECT value FROM WARPLINE_META WHERE key='end_time'").fetchone()[0])
k = db.execute("SELECT SUM(end-start), MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
print(f"overhead {sys.argv[2]:8} metrics={sys.argv[3]:3} wall {float(sys.argv[5])-float(sys.argv[4]):7.3f} s"
      f"  recorded span {end/1e6:9.2f} ms  kernel time {k[0]/1e6:9.2f} ms  first-to-last kernel {(k[2]-k[1])/1e6:9.2f} ms")
PY
            done
        done
    done
    echo "== overhead: PyTorch GPT step, median step ms"
    for r in 1 2 3; do
        for mode in off on; do
            flag=""; [ $mode = on ] && flag=--gpu-metrics
            echo -n "torch metrics=$mode: "
            "$BIN/warpline-record" $flag --quiet -o /tmp/ovh-torch-$mode-$r.warpline -- \
                python3 tests/gpu/torch_gpt.py --steps 40 | grep step_ms
        done
    done
    if [ -x "$BIN/occupancy_probe" ]; then
        echo "== occupancy probe"
        "$BIN/occupancy_probe" | tee "$OUT/occupancy-h100.txt"
    fi
} > "$log" 2>&1
ls -la "$T" >> "$log"
tar -C "$OUT" -czf "$OUT/metrics-traces.tgz" traces && rm -rf "$T"
tail -c 2000 "$log"
