#!/usr/bin/env bash
# GPU metrics, last checks on the GPU machine: what an unprivileged user gets (the driver's
# profiling restriction), the sampler's set-up time and the overhead of --gpu-metrics against the
# same recording without it (alternating, 5 times each: workloads at their default sizes, a larger
# gelu, and a PyTorch GPT step), and the per-SM limits the recorder now stores in TARGET_INFO_GPU.
set -u
BIN=${BIN:-.device/bin}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
R=$BIN/warpline-record
echo "== machine"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -i -E "RmProfilingAdminOnly|RestrictProfiling" /proc/driver/nvidia/params
echo "== as an unprivileged user (nobody)"
chmod -R a+rX "$BIN" tests/gpu 2>/dev/null; mkdir -p /tmp/nobody && chmod 777 /tmp/nobody
setpriv --reuid=65534 --regid=65534 --clear-groups "$R" --workload gelu --gpu-metrics -o /tmp/nobody/gelu.warpline 2>&1 | grep -v "gelu: "
echo "exit ${PIPESTATUS[0]}"
python3 - /tmp/nobody/gelu.warpline <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("  status", db.execute("SELECT value FROM WARPLINE_META WHERE key='status'").fetchone(),
      "| gpu_metrics", db.execute("SELECT value FROM WARPLINE_META WHERE key='gpu_metrics'").fetchone(),
      "| kernels", db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone())
for (m,) in db.execute("SELECT message FROM WARPLINE_ERRORS"): print("  error:", m)
PY
echo "== TARGET_INFO_GPU per-SM limits (workload and program)"
"$R" --workload matmul --quiet -o /tmp/limits.warpline
sqlite3 /tmp/limits.warpline "select computeMajor, computeMinor, maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlockOptin, maxWarpsPerSm, maxBlocksPerSm from TARGET_INFO_GPU" 2>/dev/null ||
python3 -c "import sqlite3;print(sqlite3.connect('/tmp/limits.warpline').execute('select computeMajor, computeMinor, maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlockOptin, maxWarpsPerSm, maxBlocksPerSm from TARGET_INFO_GPU').fetchall())"
"$R" --quiet -o /tmp/limits-prog.warpline -- python3 -c "import torch; torch.ones(10, device='cuda').sum().item()"
python3 -c "import sqlite3;print(sqlite3.connect('/tmp/limits-prog.warpline').execute('select computeMajor, computeMinor, maxRegistersPerSm, maxShmemPerSm, maxShmemPerBlockOptin, maxWarpsPerSm, maxBlocksPerSm from TARGET_INFO_GPU').fetchall())"
echo "== overhead: the same recording with and without --gpu-metrics, alternating"
span() { python3 - "$@" <<'PY'
import sqlite3, sys
f, label, wall = sys.argv[1], sys.argv[2], float(sys.argv[3])
db = sqlite3.connect(f)
k = db.execute("SELECT SUM(end-start), MIN(start), MAX(end), COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
print(f"{label:34} wall {wall:7.3f} s  kernels {k[3]:6}  kernel time {k[0]/1e6:9.3f} ms  first-to-last kernel {(k[2]-k[1])/1e6:9.3f} ms")
PY
}
for spec in "gelu:" "softmax:" "matmul:" "mlp:" "gelu-big:--elements 134217728 --repeats 3"; do
    name=${spec%%:*}; a=${spec#*:}; w=${name%-big}
    for r in 1 2 3 4 5; do
        for mode in off on; do
            f=/tmp/ovh-$name-$mode-$r.warpline; rm -f "$f"
            flag=""; [ $mode = on ] && flag=--gpu-metrics
            s=$(date +%s.%N); "$R" --workload "$w" $a $flag --quiet -o "$f"; e=$(date +%s.%N)
            span "$f" "$name metrics=$mode run $r" "$(python3 -c "print($e-$s)")"
        done
    done
done
echo "== overhead: PyTorch GPT step (median ms of steps 20-40)"
for r in 1 2 3 4 5; do
    for mode in off on; do
        flag=""; [ $mode = on ] && flag=--gpu-metrics
        echo -n "torch metrics=$mode run $r: "
        "$R" $flag -o /tmp/ovh-torch-$mode-$r.warpline -- python3 tests/gpu/torch_gpt.py --steps 40 2>&1 | grep -E "step_ms|set up in"  | tr '\n' ' '; echo
    done
done
