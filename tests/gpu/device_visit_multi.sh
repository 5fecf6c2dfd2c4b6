#!/usr/bin/env bash
# One visit to a multi-GPU machine (nvidia-h200-x2): records the bundled allreduce workload (plain
# and with a slowed rank) and a PyTorch DDP job through torchrun, unchanged, checks on the spot that
# the ranks' all-reduce kernels line up on the host's shared clock, and packs the traces.
# Binaries built on the development machine, carried in .device/bin. Results under $OUT.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Never NVLink multicast on these shared hosts (KINDS.md).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
T="$OUT/traces"
mkdir -p "$T"
log="$OUT/visit.log"
check() { # check.py FILES...: per step, spread of the k-th NCCL kernel's end across ranks
python3 - "$@" <<'PY'
import sqlite3, sys
ends, starts = [], []
for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    meta = dict(db.execute("SELECT key, value FROM WARPLINE_META"))
    t0 = int(meta.get("session_start_timestamp", 0))
    rows = db.execute("""SELECT k.start, k."end" FROM CUPTI_ACTIVITY_KIND_KERNEL k
        JOIN StringIds s ON s.id = k.shortName WHERE s.value LIKE 'nccl%' ORDER BY k.start""").fetchall()
    n = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    steps = db.execute("SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value LIKE 'step %'").fetchone()[0]
    print(f"  {path.split('/')[-1]}: rank {meta.get('env_RANK')} host {meta.get('hostname')} status {meta.get('status')} "
          f"kernels {n} nccl {len(rows)} steps {steps} dropped {meta.get('dropped_records')} gpu {meta.get('gpu', '')}")
    ends.append([t0 + e for s, e in rows]); starts.append([t0 + s for s, e in rows])
k = min(len(e) for e in ends) if ends else 0
spread = [max(e[i] for e in ends) - min(e[i] for e in ends) for i in range(k)]
late = [max(s[i] for s in starts) - min(s[i] for s in starts) for i in range(k)]
if spread:
    spread_sorted = sorted(spread)
    print(f"  nccl kernel END spread across ranks (ns): median {spread_sorted[len(spread)//2]} max {max(spread)} over {k}")
    print(f"  nccl kernel START spread across ranks (ns): median {sorted(late)[len(late)//2]} max {max(late)}")
    last = [max(range(len(starts)), key=lambda r: starts[r][i]) for i in range(k)]
    print(f"  last rank to start its nccl kernel, per kernel: {last[:40]}")
PY
}
{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
    nvidia-smi topo -m
    python3 -c 'import torch, torch.cuda.nccl as n; print("torch", torch.__version__, "gpus", torch.cuda.device_count(), "nccl", n.version())'
    python3 -c 'import nvidia.nccl, os; print("nccl wheel", os.path.dirname(nvidia.nccl.__file__) if nvidia.nccl.__file__ else list(nvidia.nccl.__path__))'
    echo "== allreduce workload, 2 ranks"
    /usr/bin/time -f "%e s wall" "$BIN/warpline-record" --workload allreduce -o "$T/allreduce.warpline"
    echo "exit $?"; check "$T"/allreduce.rank*.warpline
    echo "== allreduce workload, rank 1 slowed 3x"
    /usr/bin/time -f "%e s wall" "$BIN/warpline-record" --workload allreduce --slow-rank 1 -o "$T/allreduce-slow-rank1.warpline"
    echo "exit $?"; check "$T"/allreduce-slow-rank1.rank*.warpline
    echo "== error: more GPUs than there are"
    "$BIN/warpline-record" --workload allreduce --gpus 3 -o /tmp/x.warpline; echo "exit $?"
    echo "== torchrun DDP, unchanged, through warpline-record"
    /usr/bin/time -f "%e s wall" "$BIN/warpline-record" -o "$T/torch-ddp-rank%q{RANK}.warpline" -- \
        torchrun --standalone --nproc_per_node=2 tests/gpu/torch_ddp.py --steps 20 --slow-rank 1
    echo "exit $?"; check "$T"/torch-ddp-rank*.warpline
    ls -la "$T"
} > "$log" 2>&1
tar -C "$OUT" -czf "$OUT/traces.tgz" traces && rm -rf "$OUT/traces"
cat "$log"
