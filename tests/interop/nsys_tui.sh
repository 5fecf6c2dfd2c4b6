#!/usr/bin/env bash
# network-labelled interop test: a third-party reader of nsys SQLite exports opens Warpline traces.
# Installs nsys-tui 0.1.5 (github.com/GindaChen/nsys-tui, MIT; no required dependencies) from
# PyPI into a throw-away venv, then for each trace:
#   - `python -m nsys_tui info TRACE` exits 0 and prints, for every CUDA device the trace ran
#     kernels on, the line nsys-tui builds from TARGET_INFO_GPU (joined to the device's CUDA id
#     through TARGET_INFO_CUDA_DEVICE):
#       GPU <cudaId>: <name> | PCI=<busLocation> | SMs=<smCount> | Mem=<totalMemory/1e9>GB |
#       Kernels=<n> |
#     with the name, SM count and memory read from the trace (and required to be non-empty and
#     non-zero: an H100 trace has 132 SMs and 85017493504 bytes, "85GB");
#   - `python -m nsys_tui summary TRACE` exits 0 and lists first, under "Top kernels:" of that
#     device, the kernel with the largest total time, with its count. nsys-tui groups kernels by
#     StringIds[shortName], so the expected one is computed the same way with SQL.
# No GPU or display is needed. If the venv or the install fails (no network), it prints
# "SKIP: ..." and exits 77; any failed check prints "FAIL ..." and exits 1.
#   nsys_tui.sh TRACE...
set -u
if [ $# -lt 1 ]; then
    echo "usage: $(basename "$0") TRACE..." >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/warpline-nsys-tui.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT

if ! python3 -m venv "$work/venv" >"$work/venv.log" 2>&1; then
    echo "SKIP: cannot create a Python venv with python3 -m venv ($(tail -n 1 "$work/venv.log"))"
    exit 77
fi
py=$work/venv/bin/python
if ! "$py" -m pip install --disable-pip-version-check --no-input --timeout 30 --retries 2 \
        nsys-tui==0.1.5 >"$work/pip.log" 2>&1; then
    # pip's last error, after the network error behind it when there was one.
    reason=$(grep '^ERROR' "$work/pip.log" | tail -n 1)
    [ -n "$reason" ] || reason=$(grep -v '^[[:space:]]*$' "$work/pip.log" | tail -n 1)
    neterr=$(grep -oE "(Failed to establish a new connection|Read timed out|SSLError|ProxyError|\
Temporary failure in name resolution)[^')]*" "$work/pip.log" | tail -n 1)
    [ -z "$neterr" ] || reason="$neterr; $reason"
    echo "SKIP: cannot install nsys-tui from PyPI ($reason)"
    exit 77
fi
echo "installed nsys-tui $("$py" -m pip show nsys-tui 2>/dev/null | sed -n 's/^Version: *//p')" \
     "into $work/venv"

# q TRACE SQL [ARG...]: the rows of a query on the trace (opened read-only), one a line, fields
# separated by the unit separator \037 (names may hold spaces and '|'), NULL as "".
q() {
    "$py" - "$@" <<'EOF'
import sqlite3, sys, urllib.parse
db = sqlite3.connect('file:' + urllib.parse.quote(sys.argv[1]) + '?mode=ro', uri=True)
try:
    for row in db.execute(sys.argv[2], sys.argv[3:]):
        print('\x1f'.join('' if v is None else str(v) for v in row))
except sqlite3.Error as e:
    sys.exit(f"sqlite3 on {sys.argv[1]}: {e}")
EOF
}
# nsys_tui COMMAND TRACE: runs nsys-tui from the temp folder (so that no nsys_tui folder in the
# current directory shadows the installed one), UTF-8 output whatever the locale.
nsys_tui() {
    (cd "$work" && PYTHONIOENCODING=utf-8 "$py" -m nsys_tui "$@" 2>&1)
}

failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
us=$'\037'

for arg in "$@"; do
    if [ ! -f "$arg" ]; then
        fail "$arg: no such file"
        continue
    fi
    trace=$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")
    base=$(basename "$trace")
    before=$failures

    devices=$(q "$trace" 'SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1')
    if [ -z "$devices" ]; then
        fail "$base: the trace has no kernels, so nsys-tui lists no GPU"
        continue
    fi

    info=$(nsys_tui info "$trace")
    rc=$?
    [ $rc = 0 ] || fail "$base: nsys-tui info exited $rc: $(tail -n 3 <<<"$info")"
    summary=$(nsys_tui summary "$trace")
    rc=$?
    [ $rc = 0 ] || fail "$base: nsys-tui summary exited $rc: $(tail -n 3 <<<"$summary")"

    shown=""
    for dev in $devices; do
        # The GPU as TARGET_INFO_GPU describes it.
        row=$(q "$trace" "SELECT g.name, g.busLocation, g.smCount, g.totalMemory,
                                 (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL
                                  WHERE deviceId = ?1)
                          FROM TARGET_INFO_CUDA_DEVICE c JOIN TARGET_INFO_GPU g ON g.id = c.gpuId
                          WHERE c.cudaId = ?1 LIMIT 1" "$dev")
        if [ -z "$row" ]; then
            fail "$base: no TARGET_INFO_GPU row for CUDA device $dev" \
                 "(through TARGET_INFO_CUDA_DEVICE.cudaId = $dev)"
            continue
        fi
        IFS=$us read -r name bus sms mem kernels <<<"$row"
        if [ -z "$name" ] || ! [ "${sms:-0}" -gt 0 ] 2>/dev/null \
                || ! [ "${mem:-0}" -gt 0 ] 2>/dev/null; then
            fail "$base: TARGET_INFO_GPU of CUDA device $dev has name '$name', smCount '$sms'," \
                 "totalMemory '$mem': a name and non-zero SM count and memory expected"
            continue
        fi
        gb=$("$py" -c 'import sys; print(f"{int(sys.argv[1]) / 1e9:.0f}")' "$mem")
        want="GPU $dev: $name | PCI=$bus | SMs=$sms | Mem=${gb}GB | Kernels=$kernels |"
        if grep -qF -- "$want" <<<"$info"; then
            shown="$shown; GPU $dev: $name, $sms SMs, ${gb}GB"
        else
            fail "$base: nsys-tui info does not show '$want'; its GPU lines:" \
                 "$(grep -E '^ *GPU [0-9]+:' <<<"$info" | sed 's/^ *//' | tr '\n' ';')"
        fi

        # The top kernel by total time on this device, by shortName as nsys-tui groups them.
        tops=$(q "$trace" "SELECT s.value, COUNT(*), SUM(k.end - k.start)
                           FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName
                           WHERE k.deviceId = ?1 GROUP BY s.value ORDER BY 3 DESC" "$dev")
        IFS=$us read -r top_name top_count top_total <<<"$(head -n 1 <<<"$tops")"
        # The first line under "Top kernels:" in this device's block of the summary:
        # "    15.4%      11.3ms  ×2289  name".
        line=$(awk -v head="GPU $dev: " '
            index($0, head) == 1 { inblock = 1; next }
            /^GPU [0-9]+: / { inblock = 0 }
            inblock && /Top kernels:/ { getline; print; exit }' <<<"$summary")
        listed=$(sed -E 's/^ *[0-9.]+% +[0-9.]+ms +[^ 0-9]+([0-9]+) +(.*)$/\1'"$us"'\2/' \
                 <<<"$line")
        IFS=$us read -r listed_count listed_name <<<"$listed"
        # The listed kernel must have the largest total (any of them, if several tie).
        listed_total=$(awk -F "$us" -v n="$listed_name" '$1 == n { print $3; exit }' <<<"$tops")
        if [ -z "$line" ]; then
            fail "$base: nsys-tui summary lists no top kernel for GPU $dev"
        elif [ "$listed_total" != "$top_total" ]; then
            fail "$base: nsys-tui summary lists '$listed_name' first for GPU $dev;" \
                 "the top kernel by total time is '$top_name' ($top_count," \
                 "$top_total ns; '$listed_name': ${listed_total:-not in the trace} ns)"
        else
            want_count=$(awk -F "$us" -v n="$listed_name" '$1 == n { print $2; exit }' <<<"$tops")
            if [ "$listed_count" != "$want_count" ]; then
                fail "$base: nsys-tui summary shows ×$listed_count for '$listed_name' on GPU" \
                     "$dev; the trace has $want_count"
            else
                shown="$shown, top kernel $listed_name ×$listed_count ($top_total ns)"
            fi
        fi
    done
    if [ $failures = $before ]; then
        echo "ok   $base: nsys-tui info and summary${shown}"
    fi
done

if [ $failures != 0 ]; then
    echo "FAIL: $failures check(s) of nsys-tui on Warpline traces failed"
    exit 1
fi
echo "OK: nsys-tui 0.1.5 reads the GPU and the top kernel of $# trace(s)"
exit 0
