#!/usr/bin/env bash
# Every report of every trace, as warpline-stats prints it, and each trace's Chrome export, into
# one folder: run it before and after a change that must keep behaviour, then `diff -r A B`.
#   tests/tools/snapshot-reports.sh OUTDIR [TRACE_DIR] [STATS]
# TRACE_DIR: build/testdata (the unpacked test data, corpus included); STATS: the warpline-stats
# to run. Each file holds the report's CSV, then its stderr and exit status, so a changed message
# or failure shows in the diff too; a Chrome export is kept as its SHA-256. The files of one job in
# ranks/ (NAME.rankN.warpline, NAME-rankN.warpline) are read together as one session.
set -u
out=${1:?usage: snapshot-reports.sh OUTDIR [TRACE_DIR] [STATS]}
dir=${2:-build/testdata}
stats=${3:-build/app/warpline_stats/warpline-stats}
[ -x "$stats" ] || { echo "no warpline-stats at $stats" >&2; exit 2; }
[ -e "$out" ] && { echo "$out exists; give a new folder" >&2; exit 2; }
mkdir -p "$out"
reports=$("$stats" --help | awk '/^Reports:/ {on = 1; next} on && /^  [a-z]/ {print $1}')
{
    find "$dir" -type f \( -name '*.warpline' -o -name '*.sqlite' -o -name '*.json' \
        -o -name '*.json.gz' \) -not -path '*/ranks/*'
    find "$dir" -path '*/ranks/*rank0.warpline' | sed 's/rank0\.warpline$//'
} | sort >"$out/.traces"
one() {
    local name files
    name=$(printf '%s' "${1#"$dir"/}" | tr '/' '_')
    if [ -f "$1" ]; then files=("$1"); else files=("$1"rank*.warpline); fi
    for r in $reports; do
        {
            "$stats" "${files[@]}" --report "$r" --format csv 2>"$out/.err.$name"
            echo "# exit $?"
            cat "$out/.err.$name"
        } >"$out/$name.$r.csv"
    done
    "$stats" "${files[@]}" --export chrome -o "$out/.$name.json" >/dev/null 2>&1
    echo "# exit $?" >"$out/$name.chrome"
    sha256sum <"$out/.$name.json" >>"$out/$name.chrome"
    rm -f "$out/.err.$name" "$out/.$name.json"
}
export -f one
export out dir stats reports
xargs -a "$out/.traces" -d '\n' -P "${JOBS:-2}" -I{} bash -c 'one "$1"' _ {}
echo "$(wc -l <"$out/.traces") traces, $(ls "$out" | wc -l) files in $out"
