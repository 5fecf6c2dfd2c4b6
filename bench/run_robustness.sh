#!/usr/bin/env bash
# Robustness benchmark: how warpline-stats handles hostile trace files.
#
#   bench/run_robustness.sh [BUILD_DIR] [OUTDIR]
#
# BUILD_DIR (default build) holds app/warpline_stats/warpline-stats; OUTDIR (default a fresh
# mktemp directory) receives the crafted cases (bench/crafted_traces.py), the per-run stderr
# and the report. For every case it runs
#
#   /usr/bin/time -f '%e %M' timeout -k 5 60 warpline-stats CASE --report kernels
#
# (time outside timeout, so that a case that runs into the limit still has its seconds and peak
# RSS; timeout signals its whole process group, warpline-stats included) under `ulimit -v`
# (8 GiB; not for AddressSanitizer builds, which reserve terabytes of address space), and
# records the exit status, seconds, peak RSS, the first warning or error line of stderr, the
# peak size of SQLite temp files the process held (polled /proc/PID/fd) and whether the file's
# SHA-256 is unchanged. Then two writing cases: -o onto a symlink to an existing file without
# --force, and a Chrome export killed with SIGKILL mid-write.
#
# The Markdown report goes to stdout and OUTDIR/report.md; progress goes to stderr.
# Environment: WARPLINE_ROBUSTNESS_TIMEOUT (seconds per case, 60), WARPLINE_ROBUSTNESS_VMEM_MB
# (address-space cap per case, 8192; 0 = none), WARPLINE_ROBUSTNESS_ONLY (substrings passed to
# crafted_traces.py --only).
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
BUILD=${1:-build}
[[ -d $BUILD ]] || BUILD=$REPO/$BUILD
OUT=${2:-$(mktemp -d /tmp/warpline-robustness.XXXXXX)}
TIMEOUT=${WARPLINE_ROBUSTNESS_TIMEOUT:-60}
VMEM_MB=${WARPLINE_ROBUSTNESS_VMEM_MB:-8192}
STATS=$BUILD/app/warpline_stats/warpline-stats

if [[ ! -x $STATS ]]; then
    echo "run_robustness.sh: no $STATS (build the warpline-stats target first)" >&2
    exit 2
fi
mkdir -p "$OUT"/{bin,cases,runs,write}
OUT=$(cd "$OUT" && pwd)
CASES=$OUT/cases
RUNS=$OUT/runs
REPORT=$OUT/report.md
START=$SECONDS

log() { echo "[$(date +%T)] $*" >&2; }

# A copy of the binary: a rebuild in BUILD_DIR during the run does not change what is measured.
BIN=$OUT/bin/warpline-stats
cp "$STATS" "$BIN"
BIN_SHA=$(sha256sum "$BIN" | cut -c1-12)
BIN_DATE=$(date -r "$STATS" '+%Y-%m-%d %H:%M')

CAP_NOTE="each case under \`ulimit -v $((VMEM_MB / 1024)) GiB\` (address space) and \`timeout $TIMEOUT\`"
if grep -q __asan_init "$BIN"; then
    VMEM_MB=0
    CAP_NOTE="AddressSanitizer build: no \`ulimit -v\` (ASan reserves terabytes of address space); \`timeout $TIMEOUT\` per case"
elif [[ $VMEM_MB -eq 0 ]]; then
    CAP_NOTE="no memory cap; \`timeout $TIMEOUT\` per case"
fi
AVAIL_MB=$(awk '/MemAvailable/ { print int($2 / 1024) }' /proc/meminfo)
TOTAL_MB=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
if [[ $VMEM_MB -gt 0 && $AVAIL_MB -lt $((VMEM_MB + 2048)) ]]; then
    log "warning: only $AVAIL_MB MiB available for a cap of $VMEM_MB MiB per case"
fi

log "writing the crafted cases into $CASES"
# shellcheck disable=SC2086 # WARPLINE_ROBUSTNESS_ONLY is a list of words
python3 "$HERE/crafted_traces.py" "$CASES" ${WARPLINE_ROBUSTNESS_ONLY:+--only $WARPLINE_ROBUSTNESS_ONLY} >&2 ||
    { echo "run_robustness.sh: crafted_traces.py failed" >&2; exit 2; }

ROWS=()  # Markdown table rows
NOTES=() # lines under the table

# "124 (timed out)", "137 (SIGKILL)", ... from an exit status.
describe_exit() {
    local rc=$1
    if [[ $rc -eq 124 ]]; then
        echo "124 (timed out)"
    elif [[ $rc -gt 128 && $rc -lt 160 ]]; then
        echo "$rc (SIG$(kill -l $((rc - 128))))"
    else
        echo "$rc"
    fi
}

# The first warning or error line of a stderr file, made fit for a table cell.
first_message() {
    local file=$1 line count # $2: the exit status
    line=$(grep -m1 -aiE 'warning|error|warpline-stats:|terminate|what\(\)|sanitizer|abort' "$file")
    [[ -n $line ]] || line=$(grep -m1 -a . "$file")
    count=$(grep -c -a . "$file")
    line=${line//"$CASES/"/}
    line=${line//"$OUT/"/}
    line=${line//|/\\|}
    [[ ${#line} -gt 220 ]] && line="${line:0:220}…"
    [[ $count -gt 1 ]] && line="$line (+$((count - 1)) more lines)"
    [[ -n $line ]] || line="(nothing on stderr)"
    [[ $line == "(nothing on stderr)" && $2 -eq 124 ]] && line="(nothing on stderr before the timeout)"
    printf '%s' "$line"
}

descendants() {
    local child
    for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$child"
        descendants "$child"
    done
}

# Bytes of SQLite temporary files (etilqs_*, unlinked, under /var/tmp or TMPDIR) held now by the
# processes below PID.
temp_bytes() {
    local total=0 p fd target
    for p in $(descendants "$1"); do
        for fd in /proc/"$p"/fd/*; do
            target=$(readlink "$fd" 2>/dev/null) || continue
            [[ $target == *etilqs_* ]] && total=$((total + $(stat -L -c %s "$fd" 2>/dev/null || echo 0)))
        done
    done
    echo "$total"
}

commas() { echo "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }

mib() { awk -v kb="$1" 'BEGIN { m = kb / 1024; printf(m < 10 ? "%.1f" : "%.0f", m) }'; }

# run_case LABEL CHECKED_FILE ARGS...: one measured run of warpline-stats ARGS; CHECKED_FILE is
# the file whose SHA-256 must not change. Adds a table row.
run_case() {
    local label=$1 checked=$2
    shift 2
    local safe=${label//[^A-Za-z0-9._-]/_}
    local tf=$RUNS/$safe.time ef=$RUNS/$safe.stderr
    local before after listing_before listing_after pid rc temp=0 now
    before=$(sha256sum "$checked" | cut -d' ' -f1)
    listing_before=$(ls -A "$CASES")
    log "run $label"
    (
        [[ $VMEM_MB -gt 0 ]] && ulimit -v $((VMEM_MB * 1024))
        exec /usr/bin/time -o "$tf" -f '%e %M' timeout -k 5 "$TIMEOUT" "$BIN" "$@" >/dev/null 2>"$ef"
    ) &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        now=$(temp_bytes "$pid")
        [[ $now -gt $temp ]] && temp=$now
        sleep 0.25
    done
    wait "$pid"
    rc=$?
    after=$(sha256sum "$checked" | cut -d' ' -f1)
    listing_after=$(ls -A "$CASES")
    local seconds="?" peak="?" last
    last=$(tail -n1 "$tf" 2>/dev/null)
    if [[ $last =~ ^([0-9.]+)\ ([0-9]+)$ ]]; then
        seconds=${BASH_REMATCH[1]}
        peak=$(mib "${BASH_REMATCH[2]}")
    fi
    local unchanged=yes
    [[ $before == "$after" ]] || unchanged="**no**"
    ROWS+=("| $label | $(describe_exit "$rc") | $seconds | $peak | $(first_message "$ef" "$rc") | $unchanged |")
    if [[ $temp -gt 0 ]]; then
        NOTES+=("- $label: SQLite temp files held by the process reached $(mib $((temp / 1024))) MiB (polled every 0.25 s).")
    fi
    if [[ -n $(comm -13 <(echo "$listing_before") <(echo "$listing_after")) ]]; then
        NOTES+=("- $label: new files next to the cases: $(comm -13 <(echo "$listing_before") <(echo "$listing_after") | tr '\n' ' ')")
    fi
    if [[ -n $(comm -23 <(echo "$listing_before") <(echo "$listing_after")) ]]; then
        NOTES+=("- $label: **files removed** next to the cases: $(comm -23 <(echo "$listing_before") <(echo "$listing_after") | tr '\n' ' ')")
    fi
}

# --- reading: every crafted case ----------------------------------------------------------------
while IFS=$'\t' read -r name _size _what; do
    [[ -n $name ]] || continue
    run_case "$name" "$CASES/$name" "$CASES/$name" --report kernels
done <"$CASES/cases.tsv"

# --- writing: -o onto a symlink to an existing file, no --force (expected: exit 2, target kept) --
W=$OUT/write
rm -rf "${W:?}"/*
SEED=$REPO/tests/data/sync-stall.warpline
cp "$SEED" "$W/trace.warpline"
printf 'an existing file: it must not be replaced\n' >"$W/target.txt"
ln -s target.txt "$W/link.txt"
run_case "write: -o link.txt (symlink to an existing file), no --force" "$W/target.txt" \
    "$W/trace.warpline" --report kernels -o "$W/link.txt"
if [[ -L $W/link.txt ]]; then
    NOTES+=("- -o onto a symlink: link.txt is still a symlink to $(readlink "$W/link.txt").")
else
    NOTES+=("- -o onto a symlink: **link.txt was replaced** (no longer a symlink).")
fi

# --- writing: a Chrome export killed with SIGKILL -------------------------------------------------
# A trace big enough that the export takes a while: a synthetic 1M-event trace if this build has
# warpline-gen-trace, else the crafted 500,000-kernel trace, else torch-gpt-train.warpline.
BIG=$W/big.warpline
if [[ -x $BUILD/bench/warpline-gen-trace ]]; then
    log "generating a 1,000,000-event trace with warpline-gen-trace"
    "$BUILD/bench/warpline-gen-trace" "$BIG" --events 1000000 --force >/dev/null 2>&1 ||
        rm -f "$BIG"
fi
if [[ ! -f $BIG && -f $CASES/nsys-correlation-fanout.sqlite ]]; then
    BIG=$W/big.sqlite
    cp "$CASES/nsys-correlation-fanout.sqlite" "$BIG"
elif [[ ! -f $BIG ]]; then
    cp "$REPO/tests/data/torch-gpt-train.warpline" "$BIG"
fi
BIG_NAME=$(basename "$BIG")
BIG_DESC="$BIG_NAME, $(du -m "$BIG" | cut -f1) MB"
[[ $BIG_NAME == big.warpline ]] && BIG_DESC="$BIG_DESC, 1,000,000 events from warpline-gen-trace"

run_case "write: --export chrome -o full.json ($BIG_DESC), complete" "$BIG" \
    "$BIG" --export chrome -o "$W/full.json"
FULL_SECONDS=$(tail -n1 "$RUNS/"*complete.time 2>/dev/null | awk 'NF == 2 { print $1 }')
FULL_BYTES=
if [[ -f $W/full.json ]]; then
    FULL_BYTES=$(stat -c %s "$W/full.json")
    NOTES+=("- The complete export wrote $(commas "$FULL_BYTES") bytes.")
    rm -f "$W/full.json"
fi

# kill_export DELAY: starts the export into a fresh directory, with TMPDIR there too, sends
# SIGKILL after DELAY seconds and reports what is left.
kill_export() {
    local delay=$1 dir=$W/killed-$1 pid rc hwm before after left json state
    mkdir -p "$dir/tmp"
    before=$(sha256sum "$BIG" | cut -d' ' -f1)
    log "export killed after $delay s"
    (TMPDIR=$dir/tmp exec "$BIN" "$BIG" --export chrome -o "$dir/out.json" >/dev/null 2>"$dir/stderr") &
    pid=$!
    sleep "$delay"
    hwm=$(awk '/VmHWM/ { print $2 }' /proc/"$pid"/status 2>/dev/null)
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=$?
    after=$(sha256sum "$BIG" | cut -d' ' -f1)
    left=$(cd "$dir" && find . -mindepth 1 -type f ! -name stderr ! -name out.json -printf '%P (%s bytes), ' |
        sed 's/, $//; :a; s/\B[0-9]\{3\}\(,[0-9]\{3\}\)* bytes/,&/; ta')
    if [[ -f $dir/out.json ]]; then
        json=$(stat -c %s "$dir/out.json")
        if [[ $json -eq 0 ]]; then
            state="empty"
        elif [[ $(tail -c 256 "$dir/out.json" | tr -d ' \n\r\t' | tail -c 2) == "]}" ]]; then
            state="complete: ends with the closing ]}"
        else
            state="cut off: no closing ]}"
        fi
        left="out.json ($(commas "$json")${FULL_BYTES:+ of $(commas "$FULL_BYTES")} bytes, $state)${left:+, $left}"
    fi
    [[ -n $left ]] || left="nothing (no out.json, no temp file)"
    [[ $rc -eq 137 ]] || left="$left; the export had ended (status $rc) before the kill"
    local unchanged=yes
    [[ $before == "$after" ]] || unchanged="**no**"
    ROWS+=("| write: --export chrome -o out.json, SIGKILL after $delay s | $(describe_exit "$rc") | $delay | ${hwm:+$(mib "$hwm")} | left: $left | $unchanged |")
    rm -rf "$dir"
}
kill_export 0.2
if [[ -n $FULL_SECONDS ]] && awk -v s="$FULL_SECONDS" 'BEGIN { exit !(s * 0.75 > 0.3) }'; then
    kill_export "$(awk -v s="$FULL_SECONDS" 'BEGIN { printf("%.2f", s * 0.75) }')"
fi

# --- report -------------------------------------------------------------------------------------
{
    echo "## warpline-stats on crafted traces"
    echo
    echo "$(date '+%Y-%m-%d %H:%M %Z'); $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),"
    echo "$((TOTAL_MB / 1024)) GiB memory ($((AVAIL_MB / 1024)) GiB available at the start); warpline-stats built $BIN_DATE (sha256 $BIN_SHA...);"
    echo "$CAP_NOTE. \`warpline-stats CASE --report kernels\` unless the case says otherwise."
    echo "Seconds: wall clock; peak MiB: maximum RSS (for a killed export, VmHWM just before the kill)."
    echo
    echo "| case | exit | seconds | peak MiB | message | file unchanged |"
    echo "|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    if [[ ${#NOTES[@]} -gt 0 ]]; then
        printf '%s\n' "${NOTES[@]}"
        echo
    fi
    echo "Cases:"
    echo
    while IFS=$'\t' read -r name size what; do
        [[ -n $name ]] && echo "- \`$name\` ($(commas "$size") bytes): $what"
    done <"$CASES/cases.tsv"
    echo
    echo "Whole run (writing the cases included): $((SECONDS - START)) s. Files: $OUT"
} | tee "$REPORT"
