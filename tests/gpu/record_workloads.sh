#!/usr/bin/env bash
# gpu-labelled test: records every bundled workload on this machine's GPU, then checks the traces
# with tst_workloadtraces. On a machine without an NVIDIA GPU it skips (exit 77) and says so.
#   record_workloads.sh WARPLINE_RECORD [CHECKER]
set -u
record=$1
checker=${2:-}
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "SKIP: no NVIDIA GPU here; the gpu-labelled tests run on a machine with one (ctest -L gpu)"
    exit 77
fi
out=${WARPLINE_TRACE_DIR:-$(mktemp -d)}
mkdir -p "$out"
status=0
for w in $("$record" --list | awk '/^[a-z]/ {print $1}'); do
    "$record" --workload "$w" -o "$out/$w.warpline" --force || status=1
done
if [ -n "$checker" ] && [ -x "$checker" ]; then
    WARPLINE_TRACE_DIR="$out" "$checker" || status=1
fi
exit $status
