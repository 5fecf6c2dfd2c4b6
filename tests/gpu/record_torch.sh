#!/usr/bin/env bash
# gpu-labelled test of `warpline-record -- python3` on a real PyTorch training loop
# (tests/gpu/torch_gpt.py: bf16 autocast, AdamW, loss.item() every step): every kernel, those
# cuBLASLt, cuDNN and Triton launch through the driver API included, joins its launch with the
# plain nsys join over CUPTI_ACTIVITY_KIND_RUNTIME; driver calls carry eventClass 1; the GPU is in
# TARGET_INFO_GPU and TARGET_INFO_CUDA_DEVICE; the step ranges all arrive. With WARPLINE_STATS set
# (and runnable there), warpline-stats finds the steps of the run, with and without NVTX ranges.
# Checks with python3's sqlite3 module (the GPU machine has no Qt).
#   record_torch.sh WARPLINE_RECORD [OUTDIR]
set -u
record=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here; the gpu-labelled tests run on a machine with one (ctest -L gpu)"
    exit 77
fi
if ! python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "SKIP: no PyTorch with CUDA for python3 here"
    exit 77
fi
out=${2:-$(mktemp -d)}
mkdir -p "$out"
steps=8
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
q() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }

for variant in nvtx no-nvtx; do
    t="$out/gpt-$variant.warpline"
    extra=()
    [ "$variant" = no-nvtx ] && extra=(--no-nvtx)
    "$record" -o "$t" --force -- python3 "$here/torch_gpt.py" --steps "$steps" "${extra[@]}"
    check "$variant: program exits 0" "[ $? = 0 ]"
    check "$variant: trace complete" "[ $(q "$t" "SELECT value FROM WARPLINE_META WHERE key = 'status'") = complete ]"
    check "$variant: format 2.0" "[ $(q "$t" 'PRAGMA user_version') = 200 ]"
    check "$variant: every kernel joins an earlier launch in CUPTI_ACTIVITY_KIND_RUNTIME" "[ $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = k.correlationId AND r.start <= k.start)') = 0 ]"
    check "$variant: driver launches recorded with eventClass 1" "[ $(q "$t" "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE r.eventClass = 1 AND s.value LIKE 'cuLaunchKernel%'") -gt 0 ]"
    check "$variant: the GPU through TARGET_INFO_CUDA_DEVICE" "[ $(q "$t" 'SELECT COUNT(*) FROM TARGET_INFO_GPU g JOIN TARGET_INFO_CUDA_DEVICE c ON g.id = c.gpuId WHERE g.smCount > 0 AND c.numMultiprocessors = g.smCount') -ge 1 ]"
    ranges=$(q "$t" "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value LIKE 'step %' AND e.end IS NOT NULL")
    if [ "$variant" = nvtx ]; then
        check "$variant: $steps step ranges" "[ $ranges = $steps ]"
    else
        check "$variant: no step ranges" "[ $ranges = 0 ]"
    fi
    if [ -n "${WARPLINE_STATS:-}" ] && "$WARPLINE_STATS" --version >/dev/null 2>&1; then
        found=$("$WARPLINE_STATS" "$t" --report steps --format csv | grep -c '^[0-9]')
        check "$variant: warpline-stats finds the $steps steps" "[ $found = $steps ]"
    fi
done
exit $fail
