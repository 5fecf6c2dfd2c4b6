#!/usr/bin/env bash
# One visit to the GPU machine for the collector's overhead: CUPTI settings side by side on the
# launch loop and mlp (bench/run_overhead_tuning.sh) and on the PyTorch MLP
# (bench/run_torch_overhead_tuning.sh), plus the launcher cases of `-- PROGRAM` (a process that
# initialises CUDA and does no GPU work leaves no trace). Results in $OUT/visit.log.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
log="$OUT/visit.log"
mkdir -p "$OUT"
{
    echo "== machine"; date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
    echo "== a process that initialises CUDA and does no GPU work"
    cd /tmp && "$OLDPWD/$BIN/warpline-record" -o /tmp/noop.warpline -- python3 -c 'import torch; torch.cuda.init(); print("cuda init only")'
    echo "exit $?"; ls /tmp/noop*.warpline; python3 -c "import sqlite3; db=sqlite3.connect('/tmp/noop.warpline'); print(dict(db.execute('select key,value from WARPLINE_META')).get('status'))"
    cd "$OLDPWD"
    echo "== torchrun, one rank: the launcher leaves no trace"
    NCCL_NVLS_ENABLE=0 timeout 120 "$BIN/warpline-record" -o "/tmp/one-rank%q{RANK}.warpline" -- torchrun --standalone --nproc_per_node=1 tests/gpu/torch_ddp.py --steps 3
    echo "exit $?"; ls /tmp/one-rank*.warpline
    echo "== launch loop and mlp under CUPTI settings"
    timeout 300 bash bench/run_overhead_tuning.sh "$BIN/warpline-bench-overhead" 3
    echo "== PyTorch MLP under CUPTI settings"
    timeout 240 bash bench/run_torch_overhead_tuning.sh "$BIN/warpline-record" 2
} > "$log" 2>&1
cat "$log"
