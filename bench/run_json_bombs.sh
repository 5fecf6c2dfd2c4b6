#!/usr/bin/env bash
# JSON bombs within the importer's caps (issue 27 item 5): two warpline-stats builds side by side.
#
#   bench/run_json_bombs.sh BEFORE_BIN AFTER_BIN [OUTDIR]
#
# BEFORE_BIN and AFTER_BIN are warpline-stats executables (copies: a rebuild during the run does
# not change what is measured). OUTDIR (default a fresh mktemp directory) receives the cases
# (bench/json_bombs.py: gzip and plain bombs of gigabytes of whitespace or filler, the real GPT
# trace and its events repeated to 400 MB), per-run stderr and the report. For each case, each
# build runs
#
#   /usr/bin/time -f '%e %M' timeout -k 5 TIMEOUT BIN CASE --report kernels
#
# one after the other, WARPLINE_BOMBS_RUNS times (default 1; the table shows the median seconds
# and the largest peak RSS), and the table row holds both with the first line of the after
# build's stderr. The Markdown report goes to stdout and OUTDIR/report.md; progress to stderr.
# Environment: WARPLINE_BOMBS_RUNS, WARPLINE_BOMBS_TIMEOUT (seconds per run, 120),
# WARPLINE_BOMBS_ONLY (substrings passed to json_bombs.py --only), WARPLINE_BOMBS_KEEP=1 keeps
# the cases (about 5.5 GB) after the run.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 2 || ! -x $1 || ! -x $2 ]]; then
    echo "usage: run_json_bombs.sh BEFORE_BIN AFTER_BIN [OUTDIR] (two warpline-stats executables)" >&2
    exit 2
fi
OUT=${3:-$(mktemp -d /tmp/warpline-json-bombs.XXXXXX)}
RUNS=${WARPLINE_BOMBS_RUNS:-1}
TIMEOUT=${WARPLINE_BOMBS_TIMEOUT:-120}
mkdir -p "$OUT"/{bin,cases,runs}
OUT=$(cd "$OUT" && pwd)
CASES=$OUT/cases
cp "$1" "$OUT/bin/before"
cp "$2" "$OUT/bin/after"
START=$SECONDS

log() { echo "[$(date +%T)] $*" >&2; }

log "writing the cases into $CASES"
# shellcheck disable=SC2086 # WARPLINE_BOMBS_ONLY is a list of words
python3 "$HERE/json_bombs.py" "$CASES" ${WARPLINE_BOMBS_ONLY:+--only $WARPLINE_BOMBS_ONLY} >&2 ||
    { echo "run_json_bombs.sh: json_bombs.py failed" >&2; exit 2; }

mib() { awk -v kb="$1" 'BEGIN { m = kb / 1024; printf(m < 10 ? "%.1f" : "%.0f", m) }'; }

# measure BUILD CASE: runs it RUNS times; prints "exit, seconds (median), peak MiB (largest)".
measure() {
    local build=$1 name=$2 i rc times=() peak=0 line
    for ((i = 1; i <= RUNS; i++)); do
        log "$build: $name ($i/$RUNS)"
        /usr/bin/time -o "$OUT/runs/$build-$name.time" -f '%e %M' timeout -k 5 "$TIMEOUT" \
            "$OUT/bin/$build" "$CASES/$name" --report kernels >/dev/null 2>"$OUT/runs/$build-$name.stderr"
        rc=$?
        line=$(tail -n1 "$OUT/runs/$build-$name.time")
        times+=("${line% *}")
        [[ ${line#* } -gt $peak ]] && peak=${line#* }
    done
    [[ $rc -eq 124 ]] && rc="124 (timed out)"
    local median
    median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "$rc, $median s, $(mib "$peak") MiB"
}

ROWS=()
while IFS=$'\t' read -r name _size _what; do
    [[ -n $name ]] || continue
    before=$(measure before "$name")
    after=$(measure after "$name")
    message=$(grep -m1 -a . "$OUT/runs/after-$name.stderr" | sed "s|$CASES/||g; s/|/\\\\|/g")
    [[ -n $message ]] || message="(nothing on stderr)"
    ROWS+=("| \`$name\` | $before | $after | $message |")
done <"$CASES/cases.tsv"

AVAIL_MB=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
{
    echo "## JSON bombs within the caps: before and after"
    echo
    echo "$(date '+%Y-%m-%d %H:%M %Z'); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),"
    echo "$(awk '/MemTotal/ { print int($2 / 1048576) }' /proc/meminfo) GiB memory ($((AVAIL_MB / 1024)) GiB available at the end); before: $(sha256sum "$OUT/bin/before" | cut -c1-12), after: $(sha256sum "$OUT/bin/after" | cut -c1-12)."
    echo "\`warpline-stats CASE --report kernels\`, each build in turn, $RUNS run(s) each (median seconds, largest peak RSS); \`timeout $TIMEOUT\`."
    echo
    echo "| case | before: exit, time, peak | after: exit, time, peak | after: first line of stderr |"
    echo "|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Cases:"
    echo
    while IFS=$'\t' read -r name size what; do
        [[ -n $name ]] && echo "- \`$name\` ($(echo "$size" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta') bytes): $what"
    done <"$CASES/cases.tsv"
    echo
    echo "Whole run (writing the cases included): $((SECONDS - START)) s."
} | tee "$OUT/report.md"

if [[ ${WARPLINE_BOMBS_KEEP:-0} != 1 ]]; then
    rm -rf "${CASES:?}"
fi
