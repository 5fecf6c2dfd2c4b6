#!/usr/bin/env bash
# gpu-labelled test: an interrupted recording is finished cleanly. SIGINT and SIGTERM during
# `warpline-record --workload` stop the session (CUPTI's buffers are flushed), mark the trace
# "incomplete" with an error row "interrupted by SIG...", print one line and exit 130 / 143; a
# SIGTERM to `warpline-record -- PROGRAM` is passed on to the program. Checked with python3's
# sqlite3 module (the GPU machine has no Qt), and with warpline-stats when given.
#   record_interrupt.sh WARPLINE_RECORD CUDA_PROBE [WARPLINE_STATS] [OUTDIR]
set -u
record=$1
probe=$2
stats=${3:-}
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here; the gpu-labelled tests run on a machine with one (ctest -L gpu)"
    exit 77
fi
out=${4:-$(mktemp -d)}
mkdir -p "$out"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
q() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "$@"; }

for sig in INT TERM; do
    t="$out/interrupted-$sig.warpline"
    # A recording of about half a minute, interrupted after a few seconds of kernels.
    "$record" -o "$t" --force --quiet --workload sync-stall --steps 100000 2>"$out/$sig.err" &
    pid=$!
    sleep 6
    kill -"$sig" "$pid"
    started=$(date +%s)
    wait "$pid"
    code=$?
    took=$(($(date +%s) - started))
    expected=$([ "$sig" = INT ] && echo 130 || echo 143)
    check "SIG$sig: exit status $expected (got $code)" "[ $code = $expected ]"
    check "SIG$sig: finished within 30 s (took ${took} s)" "[ $took -le 30 ]"
    check "SIG$sig: one line on stderr" "[ \$(grep -c . '$out/$sig.err') = 1 ] && grep -q 'interrupted by SIG$sig: wrote' '$out/$sig.err'"
    check "SIG$sig: trace marked incomplete" "[ \$(q '$t' \"SELECT value FROM WARPLINE_META WHERE key = 'status'\") = incomplete ]"
    check "SIG$sig: error row says why" "[ \$(q '$t' \"SELECT COUNT(*) FROM WARPLINE_ERRORS WHERE source = 'collector' AND message = 'interrupted by SIG$sig'\") = 1 ]"
    check "SIG$sig: exit code stored" "[ \$(q '$t' \"SELECT value FROM WARPLINE_META WHERE key = 'exit_code'\") = $expected ]"
    check "SIG$sig: kernels up to the signal kept" "[ \$(q '$t' 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') -gt 100 ]"
    check "SIG$sig: launches kept with their kernels" "[ \$(q '$t' 'SELECT COUNT(*) FROM (SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL EXCEPT SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)') = 0 ]"
    check "SIG$sig: indexes built (finished, not abandoned)" "[ \$(q '$t' \"SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'\") -gt 0 ]"
    check "SIG$sig: no journal left" "[ ! -e '$t-journal' ]"
    echo "     SIG$sig: $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') kernels, $(q "$t" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME') API calls kept; stderr: $(cat "$out/$sig.err")"
    if [ -n "$stats" ]; then
        "$stats" "$t" >/dev/null 2>"$out/$sig.stats"
        check "SIG$sig: warpline-stats opens it and warns" "grep -q 'incomplete' '$out/$sig.stats'"
    fi
done

# -- PROGRAM: SIGTERM to the recorder reaches the program; the recorder marks its trace.
t="$out/program-term.warpline"
"$record" -o "$t" --force -- "$probe" --steps 400 --step-ms 50 2>"$out/program.err" &
pid=$!
sleep 5
kill -TERM "$pid"
wait "$pid"
code=$?
check "-- PROGRAM SIGTERM: the program's status 143 (got $code)" "[ $code = 143 ]"
check "-- PROGRAM SIGTERM: signal stored" "[ \$(q '$t' \"SELECT value FROM WARPLINE_META WHERE key = 'exit_signal'\") = 15 ]"
check "-- PROGRAM SIGTERM: trace incomplete" "[ \$(q '$t' \"SELECT value FROM WARPLINE_META WHERE key = 'status'\") = incomplete ]"
check "-- PROGRAM SIGTERM: kernels kept" "[ \$(q '$t' 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL') -ge 4 ]"
exit $fail
