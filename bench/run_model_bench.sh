#!/usr/bin/env bash
# Model benchmark: load time, peak RSS and report times on a synthetic trace, next to the time the
# sqlite3 CLI takes for the equivalent kernel GROUP BY on the same file, in the same run.
#
#   bench/run_model_bench.sh [BUILD_DIR] [EVENTS] [TRACE]
# BUILD_DIR defaults to build-model, EVENTS to 10000000, TRACE to /tmp/warpline-bench-EVENTS.warpline
# (generated with warpline-gen-trace when missing; delete it to regenerate).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build-model}
events=${2:-10000000}
trace=${3:-/tmp/warpline-bench-$events.warpline}

for tool in warpline-gen-trace warpline-bench-model; do
    [ -x "$build/bench/$tool" ] || { echo "run_model_bench: $build/bench/$tool not built" >&2; exit 2; }
done
stats=$build/app/warpline_stats/warpline-stats

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "date:    $(date -u +%Y-%m-%dT%H:%MZ)"
if [ ! -f "$trace" ]; then
    "$build/bench/warpline-gen-trace" "$trace" --events "$events"
fi
echo "trace:   $trace ($(du -m "$trace" | cut -f1) MB)"
echo
"$build/bench/warpline-bench-model" "$trace"
echo

# warpline-bench-model also times SQLite's own kernel GROUP BY and prints load as a ratio to it.
if [ -x "$stats" ]; then
    t0=$(date +%s.%N)
    "$stats" "$trace" --report kernels --format csv > /dev/null
    t1=$(date +%s.%N)
    printf '%-28s %8.3f s\n' "warpline-stats kernels (all)" "$(echo "$t1 - $t0" | bc)"
fi
