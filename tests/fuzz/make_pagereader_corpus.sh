#!/usr/bin/env bash
# Seeds for fuzz_pagereader (input: mode byte, file length, file, then a -wal or -journal):
# recorded traces as they are, and small files made to reach the reader's every branch: a table
# over several levels of pages, short records and column defaults, REAL and BLOB values, a record
# spilling to overflow pages, a WAL with committed frames, a hot journal.
# Usage: make_pagereader_corpus.sh DIR
set -euo pipefail
out=${1:?usage: make_pagereader_corpus.sh DIR}
data="$(cd "$(dirname "$0")/../data" && pwd)"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# seed NAME MODE FILE [BESIDE]
seed() {
    perl -e 'my ($m, $f, $b) = @ARGV; local $/; open(F, "<", $f) or die; binmode F; my $d = <F>;
             my $t = ""; if (defined $b && -e $b) { open(B, "<", $b) or die; binmode B; $t = <B>; }
             binmode STDOUT; print pack("CN", $m, length $d), $d, $t;' "$2" "$3" "${4:-}" >"$out/$1"
}

for t in gelu matmul softmax streams; do
    seed "$t" 0 "$data/$t.warpline"
done

db="$work/small.db"
sqlite3 "$db" <<'SQL'
PRAGMA page_size=512;
CREATE TABLE k (start INTEGER, "end" INTEGER, name TEXT, correlationId INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 400)
INSERT INTO k SELECT i * 1000, i * 1000 + 500, 'kernel_' || (i % 7), i FROM n;
INSERT INTO k VALUES (1.5, 2, 'real', 1), (3, 4, x'00ff', 2), (5, 6, NULL, NULL);
INSERT INTO k VALUES (7, 8, printf('%.*c', 900, 'x'), 9);
ALTER TABLE k ADD COLUMN extra INTEGER DEFAULT 7;
ALTER TABLE k ADD COLUMN other TEXT;
INSERT INTO k VALUES (9, 10, 'after', 11, 12, 'text');
CREATE TABLE s (id INTEGER PRIMARY KEY, value TEXT);
INSERT INTO s VALUES (1, 'a'), (2, 'b'), (1000000, 'c');
SQL
seed small 0 "$db"

cp "$db" "$work/wal.db"
sqlite3 "$work/wal.db" 'PRAGMA journal_mode=WAL;' >/dev/null
# A writer that keeps its WAL: copy the files while its connection is open.
python3 - "$work/wal.db" "$work" <<'PY'
import shutil, sqlite3, sys
db, work = sys.argv[1], sys.argv[2]
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA wal_autocheckpoint=0")
c.execute("INSERT INTO k SELECT start + 1000000, \"end\" + 1000000, name, correlationId, extra, other FROM k")
c.execute("DELETE FROM s WHERE id = 2")
shutil.copy(db, work + "/walcopy.db"); shutil.copy(db + "-wal", work + "/walcopy.db-wal")
# A hot journal: a transaction in the middle, files copied, then abandoned.
j = work + "/journal.db"
shutil.copy(work + "/small.db", j)
d = sqlite3.connect(j, isolation_level=None)
d.execute("PRAGMA cache_size=2"); d.execute("BEGIN"); d.execute("DELETE FROM k WHERE rowid % 3 = 0")
d.execute("UPDATE s SET value = value || value")
shutil.copy(j, work + "/hot.db"); shutil.copy(j + "-journal", work + "/hot.db-journal")
PY
seed wal 1 "$work/walcopy.db" "$work/walcopy.db-wal"
seed hot-journal 2 "$work/hot.db" "$work/hot.db-journal"
