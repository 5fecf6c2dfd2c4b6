#!/usr/bin/env bash
# gpu-labelled test: records every bundled workload on this machine's GPU, then checks the traces
# with tst_workloadtraces. On a machine without an NVIDIA GPU it skips (exit 77) and says so.
# It fails when the recorder lists no workload, when any recording fails or leaves no trace, and
# when the checker it is given cannot run: an empty recording never passes.
#   record_workloads.sh WARPLINE_RECORD [CHECKER]
set -u
record=$1
checker=${2:-}
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here; the gpu-labelled tests run on a machine with one (ctest -L gpu)"
    exit 77
fi
if [ -n "$checker" ] && [ ! -x "$checker" ]; then
    echo "FAIL: the checker $checker is not an executable"
    exit 1
fi
out=${WARPLINE_TRACE_DIR:-$(mktemp -d)}
mkdir -p "$out"
if ! list=$("$record" --list); then
    echo "FAIL: $record --list exited non-zero"
    exit 1
fi
workloads=$(printf '%s\n' "$list" | awk '/^[a-z]/ {print $1}')
if [ -z "$workloads" ]; then
    echo "FAIL: $record --list names no workload; it printed:"
    printf '%s\n' "$list"
    exit 1
fi
status=0
recorded=0
for w in $workloads; do
    "$record" --workload "$w" -o "$out/$w.warpline" --force
    code=$?
    if [ $code -ne 0 ]; then
        echo "FAIL: $w: warpline-record exited $code"
        status=1
    elif [ ! -s "$out/$w.warpline" ]; then
        echo "FAIL: $w: warpline-record exited 0 but wrote no trace"
        status=1
    else
        recorded=$((recorded + 1))
    fi
done
echo "recorded $recorded of $(printf '%s\n' "$workloads" | wc -l) workloads into $out"
if [ $recorded -eq 0 ]; then
    echo "FAIL: nothing was recorded"
    exit 1
fi
if [ -n "$checker" ]; then
    WARPLINE_TRACE_DIR="$out" "$checker" || status=1
fi
exit $status
