#!/usr/bin/env bash
# Runs one fuzz target for a while with its corpus; findings land in build-fuzz/artifacts/.
# Usage: tests/fuzz/run.sh fuzz_trace|fuzz_trace_sql|fuzz_pagereader SECONDS [libFuzzer options...]
# Build first: cmake --preset fuzz && cmake --build build-fuzz --target fuzz_trace fuzz_trace_sql fuzz_pagereader
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target=${1:?usage: run.sh fuzz_trace|fuzz_trace_sql|fuzz_pagereader SECONDS [options]}
seconds=${2:?usage: run.sh TARGET SECONDS [options]}
shift 2
build="$root/build-fuzz"
corpus="$build/corpus/$target"
mkdir -p "$corpus" "$build/artifacts"
if [ "$target" = fuzz_trace ] && [ -z "$(ls -A "$corpus")" ]; then
    "$root/tests/fuzz/make_corpus.sh" "$corpus"
fi
if [ "$target" = fuzz_pagereader ] && [ -z "$(ls -A "$corpus")" ]; then
    "$root/tests/fuzz/make_pagereader_corpus.sh" "$corpus"
fi
seeds=()
[ -d "$root/tests/fuzz/regressions/$target" ] && seeds+=("$root/tests/fuzz/regressions/$target")
# -timeout: a run over 20 s is a hang. -rss_limit_mb: a trace of a few MB must not need GBs.
exec "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=3072 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" "$@" "$corpus" "${seeds[@]}"
