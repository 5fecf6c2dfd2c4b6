#!/usr/bin/env bash
# One visit to the GPU machine for Warpline's real-program traces (binaries built on the
# development machine, carried in .device/bin): an unmodified GPT-style training loop (eager, the
# same without NVTX ranges, and under torch.compile(mode="reduce-overhead")) and a one-process
# torchrun DDP job, each recorded with `warpline-record -- python3 ...`, plus the untraced eager
# loop for its step time. Checks each trace with python3's sqlite3 (the machine has no Qt): the
# plain nsys join of kernels to RUNTIME, the step ranges, the status. Results under $OUT:
# programs.log and programs.tgz.
set -u
BIN=${BIN:-.device/bin}
OUT=${OUT:-/tmp/warpline-out}
STEPS=${STEPS:-30}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT/programs"
t="$OUT/programs"
check() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda s: db.execute(s).fetchone()[0]
kernels = q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
joined = q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 FROM "
           "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND r.start <= k.start)")
print("  ", sys.argv[1].rsplit("/", 1)[-1], "kernels", kernels, "joined", joined,
      "(%.2f%%)" % (100.0 * joined / max(kernels, 1)),
      "driver calls", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1"),
      "graph kernels", q("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL"),
      "step ranges", q("SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                       "WHERE s.value LIKE 'step %' AND e.end IS NOT NULL"),
      "status", q("SELECT value FROM WARPLINE_META WHERE key='status'"),
      "span ms", q("SELECT (MAX(end) - MIN(start)) / 1e6 FROM CUPTI_ACTIVITY_KIND_RUNTIME"))
PY
}
{
    echo "== machine"; date -u; uname -r
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
    echo "== untraced eager GPT loop"
    python3 tests/gpu/torch_gpt.py --steps "$STEPS"
    echo "== recorded: eager GPT loop"
    "$BIN/warpline-record" -o "$t/torch-gpt-train.warpline" -- python3 tests/gpu/torch_gpt.py --steps "$STEPS"
    echo "exit $?"; check "$t/torch-gpt-train.warpline"
    echo "== recorded: eager GPT loop without NVTX ranges"
    "$BIN/warpline-record" -o "$t/torch-gpt-train-no-nvtx.warpline" -- python3 tests/gpu/torch_gpt.py --steps "$STEPS" --no-nvtx
    echo "exit $?"; check "$t/torch-gpt-train-no-nvtx.warpline"
    echo "== recorded: torch.compile(mode=reduce-overhead) GPT loop"
    "$BIN/warpline-record" -o "$t/torch-gpt-compiled.warpline" -- python3 tests/gpu/torch_gpt.py --steps "$STEPS" --compile
    echo "exit $?"; check "$t/torch-gpt-compiled.warpline"
    echo "== recorded: torchrun DDP, one rank"
    NCCL_NVLS_ENABLE=0 "$BIN/warpline-record" -o "$t/torch-ddp-steps%q{RANK}.warpline" -- \
        torchrun --standalone --nproc_per_node=1 tests/gpu/torch_ddp.py --steps 20
    echo "exit $?"; check "$t/torch-ddp-steps0.warpline"
    echo "== gpu test: warpline-record -- PROGRAM"
    if [ -x "$BIN/cuda_probe" ]; then
        bash tests/gpu/record_program.sh "$BIN/warpline-record" "$BIN/cuda_probe" /tmp/probe-out
        echo "record_program exit $?"
    fi
    ls -la "$t"
} > "$OUT/programs.log" 2>&1
tar -C "$OUT" -czf "$OUT/programs.tgz" programs && rm -rf "$OUT/programs"
cat "$OUT/programs.log"
