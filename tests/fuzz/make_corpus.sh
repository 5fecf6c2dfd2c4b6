#!/usr/bin/env bash
# Seed corpus for the raw-bytes fuzzer: small copies of the recorded traces (tests/data, cut to a
# few rows per table, 512-byte pages so that every byte is near some structure) and damaged
# variants of them (truncated in the header, mid-page, on the last page; bad page size; another
# application's database; a newer format version; a trace still "recording"), and a trace of the
# older format 1.0 (driver calls in a table of their own).
# Usage: make_corpus.sh OUT_DIR
set -euo pipefail
out=${1:?usage: make_corpus.sh OUT_DIR}
data="$(cd "$(dirname "$0")/../data" && pwd)"
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Cuts a trace down to a few rows per table, with 512-byte pages; $2: more statements to run.
shrink() {
    sqlite3 "$1" >/dev/null <<SQL
PRAGMA journal_mode=DELETE;
DELETE FROM StringIds WHERE id > 60;
DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE rowid > 12;
DELETE FROM WARPLINE_KERNELS WHERE rowid > 12;
DELETE FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE rowid > 4;
DELETE FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE rowid > 4;
DELETE FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE rowid > 4;
DELETE FROM NVTX_EVENTS WHERE rowid > 8;
DELETE FROM WARPLINE_OVERHEAD;
${2:-}
PRAGMA page_size=512;
VACUUM;
SQL
}

for name in gelu matmul softmax streams runahead sync-stall; do
    [ -f "$data/$name.warpline" ] || continue
    small="$tmp/$name.warpline"
    cp "$data/$name.warpline" "$small"
    shrink "$small"
    cp "$small" "$out/$name-small.warpline"
    size=$(stat -c %s "$small")
    head -c 100 "$small" >"$out/$name-header-only.warpline"
    head -c 700 "$small" >"$out/$name-mid-first-page.warpline"
    head -c $((size / 2 + 100)) "$small" >"$out/$name-mid-page.warpline"
    head -c $((size - 512)) "$small" >"$out/$name-no-last-page.warpline"
    head -c $((size - 200)) "$small" >"$out/$name-mid-last-page.warpline"
done

small="$out/gelu-small.warpline"
if [ -f "$small" ]; then
    cp "$small" "$tmp/v.warpline" && sqlite3 "$tmp/v.warpline" "PRAGMA user_version=300"
    cp "$tmp/v.warpline" "$out/gelu-format-3.0.warpline"
    cp "$small" "$tmp/r.warpline" &&
        sqlite3 "$tmp/r.warpline" "UPDATE WARPLINE_META SET value='recording' WHERE key='status'"
    cp "$tmp/r.warpline" "$out/gelu-recording.warpline"
    cp "$small" "$tmp/n.warpline" && sqlite3 "$tmp/n.warpline" \
        "UPDATE WARPLINE_KERNELS SET start = -1 WHERE rowid % 2 = 0; UPDATE WARPLINE_KERNELS SET \"end\" = start - 5 WHERE rowid % 3 = 0"
    cp "$tmp/n.warpline" "$out/gelu-backwards.warpline"
    # Page size field set to an invalid value (bytes 16-17).
    { head -c 16 "$small"; printf '\x03\x00'; tail -c +19 "$small"; } >"$out/gelu-bad-page-size.warpline"
fi
old="$data/format-1.0/torch-ddp-one-rank.format-1.0.sqlite"
if [ -f "$old" ]; then
    cp "$old" "$tmp/format1.warpline"
    shrink "$tmp/format1.warpline" "DELETE FROM CUPTI_ACTIVITY_KIND_DRIVER WHERE rowid > 4;"
    cp "$tmp/format1.warpline" "$out/ddp-format-1.0-small.warpline"
fi
sqlite3 "$tmp/other.sqlite" "PRAGMA page_size=512; CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('Ada');"
cp "$tmp/other.sqlite" "$out/other-application.sqlite"
: >"$out/empty.warpline"
printf 'hello, this is not SQLite\n' >"$out/text.warpline"
echo "corpus: $(ls "$out" | wc -l) files, $(du -sh "$out" | cut -f1) in $out"
