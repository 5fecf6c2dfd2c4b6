#!/usr/bin/env bash
# gpu-labelled test of `warpline-record -- PROGRAM`: traces cuda_probe and checks, with python3's
# sqlite3 module (present on the GPU machine, which has no Qt), that kernels have their launches,
# NVTX ranges (also those closed through NVTX's payload extension, as NCCL closes them) and driver
# calls arrive, the exit status passes through, a forked CUDA child gets its
# own trace, and a program killed mid-run leaves a readable trace marked incomplete.
#   record_program.sh WARPLINE_RECORD CUDA_PROBE [OUTDIR]
set -u
record=$1
probe=$2
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here; the gpu-labelled tests run on a machine with one (ctest -L gpu)"
    exit 77
fi
out=${3:-$(mktemp -d)}
mkdir -p "$out"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
q() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }

"$record" -o "$out/probe.warpline" --force -- "$probe" --steps 20 --exit 3 --driver
check "exit status passes through" "[ $? = 3 ]"
t="$out/probe.warpline"
check "kernels recorded" "[ $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') = 40 ]"
check "every kernel has its launch" "[ $(q "$t" 'SELECT COUNT(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL EXCEPT SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)') = 0 ]"
check "every launch starts before its kernel" "[ $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r USING (correlationId) WHERE r.start >= k.start') = 0 ]"
check "NVTX ranges recorded" "[ $(q "$t" "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value LIKE 'probe step %' AND e.end IS NOT NULL") = 20 ]"
check "program's own driver call recorded" "[ $(q "$t" "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME d JOIN StringIds s ON s.id = d.nameId WHERE d.eventClass = 1 AND s.value LIKE 'cuCtxSynchronize%'") = 1 ]"
check "exit status stored" "[ $(q "$t" "SELECT value FROM WARPLINE_META WHERE key = 'exit_code'") = 3 ]"
check "trace complete" "[ $(q "$t" "SELECT value FROM WARPLINE_META WHERE key = 'status'") = complete ]"
check "GPU described" "[ $(q "$t" 'SELECT COUNT(*) FROM TARGET_INFO_GPU') -ge 1 ]"

# Ranges closed through NVTX's payload extension, as NCCL closes ncclCommInitRank's.
"$record" -o "$out/payload.warpline" --force -- "$probe" --steps 20 --payload
check "payload program exits 0" "[ $? = 0 ]"
t="$out/payload.warpline"
check "ranges closed by nvtxRangePopPayload have their end" "[ $(q "$t" "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value LIKE 'payload step %' AND e.end IS NOT NULL") = 20 ]"
check "no NVTX range left open" "[ $(q "$t" 'SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NULL') = 0 ]"
check "payload ranges keep their nesting" "[ $(q "$t" "SELECT COUNT(*) FROM NVTX_EVENTS o JOIN StringIds so ON so.id = o.textId JOIN NVTX_EVENTS i JOIN StringIds si ON si.id = i.textId WHERE so.value = 'payload step 3' AND si.value = 'probe step 3' AND i.start >= o.start AND i.end <= o.end") = 1 ]"

rm -f "$out"/fork-*.warpline
"$record" -o "$out/fork-%p.warpline" -- "$probe" --steps 5 --fork
check "forked program exits 0" "[ $? = 0 ]"
check "one trace per CUDA process (%p)" "[ $(ls "$out"/fork-*.warpline | wc -l) = 2 ]"

"$record" -o "$out/killed.warpline" --force -- "$probe" --steps 400 --kill-self-after 10
check "killed program's status passes through (128+9)" "[ $? = 137 ]"
t="$out/killed.warpline"
check "killed trace marked incomplete" "[ $(q "$t" "SELECT value FROM WARPLINE_META WHERE key = 'status'") = incomplete ]"
check "killed trace keeps what was committed" "[ $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') -ge 10 ]"
exit $fail
