#!/usr/bin/env python3
"""Writes hostile trace files for the robustness benchmark (bench/run_robustness.sh).

    bench/crafted_traces.py OUTDIR [--only SUBSTRING ...]

Every case starts from a copy of a real trace in tests/data (tests/data itself is never
written): the Nsight Systems export pipit-cloverleaf-nsys2024.5.sqlite, the Warpline trace
sync-stall.warpline and the PyTorch profiler trace kineto-v100-old-names.pt.trace.json (plus
hta-simple-add.pt.trace.json.gz for the truncated gzip). Each case is one function below; its
docstring says what it tests. The script prints one line per case (name, size, what it tests)
and writes OUTDIR/cases.tsv with the same fields, which run_robustness.sh reads.

Standard library only. The largest outputs: nsys-300mb-name.sqlite (about 300 MB) and
pt-3gb-string.json.gz (a few MB on disk, 3 GB inflated; written in chunks, never held whole).
"""

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data")
NSYS_SEED = os.path.join(DATA, "nsys", "pipit-cloverleaf-nsys2024.5.sqlite")
WARPLINE_SEED = os.path.join(DATA, "sync-stall.warpline")
PYTORCH_SEED = os.path.join(DATA, "pytorch", "kineto-v100-old-names.pt.trace.json")
PYTORCH_GZ_SEED = os.path.join(DATA, "pytorch", "hta-simple-add.pt.trace.json.gz")

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT32_MAX = 2**32 - 1

# An endless recursive CTE: it never yields a row, and SQLite materializes it into a temporary
# table that keeps growing (in memory, then in a temp file under /var/tmp).
ENDLESS = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) "
           "SELECT {rows}.* FROM {rows}, c WHERE x < 0")


# --- helpers ------------------------------------------------------------------------------------

def remove(path):
    """Removes PATH and any SQLite journal of it left by an earlier, interrupted run (a hot
    journal would be rolled back into the new file)."""
    for p in (path, path + "-journal", path + "-wal", path + "-shm"):
        if os.path.lexists(p):
            os.remove(p)


def copy_seed(seed, path):
    """A private, writable copy of a seed trace (tests/data is only read)."""
    remove(path)
    shutil.copyfile(seed, path)
    os.chmod(path, 0o644)
    return path


def connect(path):
    # Autocommit: transactions are explicit. legacy_alter_table keeps ALTER TABLE RENAME from
    # rewriting the views that name a table (a Warpline trace's CUPTI_ACTIVITY_KIND_KERNEL view
    # names WARPLINE_KERNELS): they keep naming the hostile object that takes the table's place.
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA legacy_alter_table = ON")
    return con


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def tables_of(con):
    return [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name")]


def replace_with_view(con, table, stored, body):
    """Renames TABLE to STORED and creates a view named TABLE over it."""
    con.execute("BEGIN")
    con.execute(f"ALTER TABLE {quote(table)} RENAME TO {quote(stored)}")
    con.execute(f"CREATE VIEW {quote(table)} AS {body}")
    con.execute("COMMIT")


def endless_view(seed, path, table, stored):
    copy_seed(seed, path)
    con = connect(path)
    replace_with_view(con, table, stored, ENDLESS.format(rows=quote(stored)))
    con.close()


def set_rows(con, table, rows):
    """Sets columns of the first rows of TABLE: rows is a list of {column: value}, the n-th dict
    for the n-th row (rowid order). Values keep their Python type: str is stored as TEXT, bytes as
    a BLOB, float as REAL (the tables are not STRICT, so any type is accepted)."""
    rowids = [r[0] for r in con.execute(
        f"SELECT rowid FROM {quote(table)} ORDER BY rowid LIMIT ?", (len(rows),))]
    if len(rowids) < len(rows):
        raise RuntimeError(f"{table} has only {len(rowids)} rows, {len(rows)} needed")
    for rowid, values in zip(rowids, rows):
        assignments = ", ".join(f"{quote(c)} = ?" for c in values)
        con.execute(f"UPDATE {quote(table)} SET {assignments} WHERE rowid = ?",
                    (*values.values(), rowid))


def rebuild_with_generated(con, table, column, expression):
    """Rebuilds TABLE with COLUMN computed as a VIRTUAL generated column from EXPRESSION, whose
    stored input is COLUMN0 (column + '0'). Other columns, types and NOT NULL are kept."""
    info = con.execute(f"PRAGMA table_info({quote(table)})").fetchall()
    defs, stored, source = [], [], []
    for _cid, name, ctype, notnull, _default, _pk in info:
        null = " NOT NULL" if notnull else ""
        if name == column:
            defs.append(f"{quote(name + '0')} {ctype}{null}")
            defs.append(f"{quote(name)} {ctype} GENERATED ALWAYS AS ({expression}) VIRTUAL")
            stored.append(quote(name + "0"))
            source.append(f"{quote(name)} - 100000000")  # the expression adds 10^8 back
        else:
            defs.append(f"{quote(name)} {ctype}{null}")
            stored.append(quote(name))
            source.append(quote(name))
    new = table + "_REBUILT"
    con.execute("BEGIN")
    con.execute(f"CREATE TABLE {quote(new)} ({', '.join(defs)})")
    con.execute(f"INSERT INTO {quote(new)} ({', '.join(stored)}) "
                f"SELECT {', '.join(source)} FROM {quote(table)}")
    con.execute(f"DROP TABLE {quote(table)}")  # its indexes go with it; none may cover COLUMN
    con.execute(f"ALTER TABLE {quote(new)} RENAME TO {quote(table)}")
    con.execute("COMMIT")


def json_with_raw(document, raw):
    """JSON text of DOCUMENT, UTF-8 bytes, where each string value "KEY" of RAW is replaced by
    the raw bytes RAW[KEY]: numbers and bytes Python's json module would not write."""
    text = json.dumps(document, ensure_ascii=False).encode("utf-8")
    for key, value in raw.items():
        marker = json.dumps(key).encode("utf-8")
        if marker not in text:
            raise RuntimeError(f"marker {key} not found")
        text = text.replace(marker, value)
    return text


def pytorch_seed():
    with open(PYTORCH_SEED, "rb") as f:
        return json.load(f)


def first_event(doc, cat):
    return next(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == cat)


# --- Nsight Systems export: views ---------------------------------------------------------------

def nsys_kernel_view_endless(path):
    """nsys: CUPTI_ACTIVITY_KIND_KERNEL is a view over an endless recursive CTE (a read never
    ends; SQLite fills a temp file meanwhile)"""
    endless_view(NSYS_SEED, path, "CUPTI_ACTIVITY_KIND_KERNEL", "K0")


def nsys_stringids_view_endless(path):
    """nsys: StringIds is a view over an endless recursive CTE"""
    endless_view(NSYS_SEED, path, "StringIds", "S0")


def nsys_runtime_view_endless(path):
    """nsys: CUPTI_ACTIVITY_KIND_RUNTIME is a view over an endless recursive CTE (read by the
    loader's API helper thread)"""
    endless_view(NSYS_SEED, path, "CUPTI_ACTIVITY_KIND_RUNTIME", "R0")


def nsys_kernel_view_fanout(path):
    """nsys: CUPTI_ACTIVITY_KIND_KERNEL is a view cross-joining the 1312 kernels with themselves
    three times: 2.3 billion rows that arrive at once (memory, not a hang)"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    replace_with_view(con, "CUPTI_ACTIVITY_KIND_KERNEL", "K0",
                      "SELECT a.* FROM K0 a, K0 b, K0 c")
    con.close()


# --- Warpline trace: views ----------------------------------------------------------------------

def wl_kernels_view_endless(path):
    """Warpline: WARPLINE_KERNELS (and so the CUPTI_ACTIVITY_KIND_KERNEL view over it) is a view
    over an endless recursive CTE"""
    endless_view(WARPLINE_SEED, path, "WARPLINE_KERNELS", "K0")


def wl_nvtx_view_endless(path):
    """Warpline: NVTX_EVENTS is a view over an endless recursive CTE"""
    endless_view(WARPLINE_SEED, path, "NVTX_EVENTS", "N0")


# --- triggers -----------------------------------------------------------------------------------

def add_triggers(path):
    """Triggers on every table that log and delete rows; a reader must never fire them."""
    con = connect(path)
    con.execute("BEGIN")
    con.execute("CREATE TABLE TRIGGER_LOG (what TEXT)")
    for table in tables_of(con):
        if table == "TRIGGER_LOG":
            continue
        t = quote(table)
        for event in ("INSERT", "UPDATE", "DELETE"):
            name = quote(f"trg_{event.lower()}_{table}")
            con.execute(
                f"CREATE TRIGGER {name} AFTER {event} ON {t} BEGIN "
                f"INSERT INTO TRIGGER_LOG VALUES ('{event} on ' || {json.dumps(table)}); "
                f"DELETE FROM {t}; END")
    con.execute("COMMIT")
    con.close()


def nsys_triggers(path):
    """nsys: AFTER INSERT/UPDATE/DELETE triggers on every table (they log and delete every row);
    a read fires none: the file must stay byte for byte the same"""
    copy_seed(NSYS_SEED, path)
    add_triggers(path)


def wl_triggers(path):
    """Warpline: AFTER INSERT/UPDATE/DELETE triggers on every table (they log and delete every
    row); a read fires none: the file must stay byte for byte the same"""
    copy_seed(WARPLINE_SEED, path)
    add_triggers(path)


# --- generated columns --------------------------------------------------------------------------

# About 100 MB of allocation and hex formatting per evaluation; the result is the stored value
# (start0 holds start - 10^8), so a reader that evaluates it gets correct, very slow, data.
BOMB = "start0 + length(hex(zeroblob(50000000)))"


def check_bomb(path, table):
    """The schema is accepted by this SQLite, also with trusted_schema off (as the loader opens
    files): zeroblob, hex and length are innocuous built-ins."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    con.execute("PRAGMA trusted_schema = OFF")
    t0 = time.monotonic()
    con.execute(f"SELECT start FROM {quote(table)} LIMIT 1").fetchone()
    seconds = time.monotonic() - t0
    con.close()
    return seconds


def wl_generated_start(path):
    """Warpline: WARPLINE_KERNELS.start is a VIRTUAL generated column costing ~100 MB of work per
    row read (1604 rows)"""
    copy_seed(WARPLINE_SEED, path)
    con = connect(path)
    rebuild_with_generated(con, "WARPLINE_KERNELS", "start", BOMB)
    con.close()
    return f"one row {check_bomb(path, 'WARPLINE_KERNELS'):.2f} s in python sqlite3"


def nsys_generated_start(path):
    """nsys: CUPTI_ACTIVITY_KIND_KERNEL.start is a VIRTUAL generated column costing ~100 MB of
    work per row read (1312 rows)"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    rebuild_with_generated(con, "CUPTI_ACTIVITY_KIND_KERNEL", "start", BOMB)
    con.close()
    return f"one row {check_bomb(path, 'CUPTI_ACTIVITY_KIND_KERNEL'):.2f} s in python sqlite3"


# --- wrong types and extreme values ------------------------------------------------------------

def nsys_wrong_types(path):
    """nsys: text, blobs and reals where integers belong (times, ids, sizes, names; kernel,
    runtime, memcpy, StringIds rows)"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    con.execute("BEGIN")
    set_rows(con, "CUPTI_ACTIVITY_KIND_KERNEL", [
        {"start": "abc"}, {"end": b"\xde\xad\xbe\xef"}, {"start": 1.5e300, "end": 1.5e300},
        {"streamId": "7"}, {"correlationId": 3.75}, {"demangledName": "kernel name as text"},
        {"shortName": b"\x00\x01"}, {"deviceId": -0.5, "contextId": "ctx"},
        {"gridX": 1e30, "blockX": "256"}, {"end": float("inf")}, {"start": float("-inf")},
        {"globalPid": b""}])
    set_rows(con, "CUPTI_ACTIVITY_KIND_RUNTIME", [
        {"nameId": "cudaLaunchKernel"}, {"correlationId": b"\x01"}, {"globalTid": 1e300},
        {"start": "", "end": "xyz"}, {"start": 2.5, "end": 3.5}, {"returnValue": "error"}])
    set_rows(con, "CUPTI_ACTIVITY_KIND_MEMCPY", [
        {"bytes": "lots"}, {"bytes": -1.5}, {"copyKind": b"\xff"}, {"bytes": 1e300}])
    set_rows(con, "StringIds", [
        {"value": b"\xff\xfe\x00blob"}, {"value": 12345}, {"value": 6.25}])
    con.execute("COMMIT")
    con.close()


def wl_wrong_types(path):
    """Warpline: text, blobs and reals where integers belong (kernels, configs, runtime,
    memcpy, NVTX, StringIds, WARPLINE_META)"""
    copy_seed(WARPLINE_SEED, path)
    con = connect(path)
    con.execute("BEGIN")
    set_rows(con, "WARPLINE_KERNELS", [
        {"start": "abc"}, {"end": b"\xde\xad\xbe\xef"}, {"start": 1.5e300, "end": 1.5e300},
        {"streamId": "7"}, {"correlationId": 3.75}, {"configId": "zero"}, {"configId": b"\x00"},
        {"graphId": "x"}, {"configId": 0.5}, {"end": float("inf")}])
    set_rows(con, "WARPLINE_KERNEL_CONFIGS", [
        {"demangledName": "name as text", "gridX": "big"}, {"blockX": b"\x01", "deviceId": 0.5}])
    set_rows(con, "CUPTI_ACTIVITY_KIND_RUNTIME", [
        {"nameId": "cudaLaunchKernel"}, {"correlationId": b"\x01"}, {"globalTid": 1e300},
        {"start": "", "end": "xyz"}])
    set_rows(con, "CUPTI_ACTIVITY_KIND_MEMCPY", [
        {"bytes": "lots"}, {"bytes": -1.5}, {"copyKind": b"\xff"}])
    set_rows(con, "NVTX_EVENTS", [
        {"text": b"\xff\xfe"}, {"textId": "abc"}, {"eventType": "59"}, {"start": 1e300},
        {"globalTid": "main"}])
    set_rows(con, "StringIds", [{"value": b"\xff\xfe\x00blob"}, {"value": 12345}])
    # WARPLINE_META is WITHOUT ROWID: by key. A blob status, an integer key.
    con.execute("UPDATE WARPLINE_META SET value = ? WHERE key = 'status'", (b"complete\x00\xff",))
    con.execute("UPDATE WARPLINE_META SET key = 7 WHERE key = 'exit_code'")
    con.execute("COMMIT")
    con.close()


EXTREMES = [INT64_MIN, INT64_MAX, -1, UINT32_MAX, 0, 2**32, 2**31, -(2**31)]


def nsys_extreme_values(path):
    """nsys: INT64_MIN/MAX, -1, 2^32-1, 2^32 in times, ids (stream, correlation, device,
    context, name ids, StringIds ids) and sizes (grid, block, shared memory, copy bytes)"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    con.execute("BEGIN")
    kernel = []
    for v in EXTREMES:
        kernel += [{"start": v}, {"end": v}, {"start": v, "end": v}, {"streamId": v},
                   {"correlationId": v}, {"deviceId": v, "contextId": v},
                   {"demangledName": v, "shortName": v}, {"gridX": v, "blockX": v},
                   {"dynamicSharedMemory": v, "staticSharedMemory": v,
                    "registersPerThread": v}, {"globalPid": v}]
    set_rows(con, "CUPTI_ACTIVITY_KIND_KERNEL", kernel)
    runtime = []
    for v in EXTREMES:
        runtime += [{"start": v}, {"end": v}, {"correlationId": v}, {"globalTid": v},
                    {"nameId": v}]
    set_rows(con, "CUPTI_ACTIVITY_KIND_RUNTIME", runtime)
    set_rows(con, "CUPTI_ACTIVITY_KIND_MEMCPY", [{"bytes": v} for v in EXTREMES] +
             [{"copyKind": v} for v in EXTREMES])
    # String ids at the ends of the range, used as kernel names (a dense id table of 2^63?).
    con.execute("INSERT INTO StringIds VALUES (?, 'name at INT64_MAX')", (INT64_MAX,))
    con.execute("INSERT INTO StringIds VALUES (?, 'name at INT64_MIN')", (INT64_MIN,))
    con.execute("INSERT INTO StringIds VALUES (?, 'name at 2^32-1')", (UINT32_MAX,))
    con.execute("COMMIT")
    con.close()


def wl_extreme_values(path):
    """Warpline: INT64_MIN/MAX, -1, 2^32-1, 2^32 in times, ids (stream, correlation, config,
    graph, thread, StringIds ids) and sizes (grid, block, copy bytes)"""
    copy_seed(WARPLINE_SEED, path)
    con = connect(path)
    con.execute("BEGIN")
    kernels = []
    for v in EXTREMES:
        kernels += [{"start": v}, {"end": v}, {"start": v, "end": v}, {"streamId": v},
                    {"correlationId": v}, {"configId": v}, {"gridId": v, "graphId": v}]
    set_rows(con, "WARPLINE_KERNELS", kernels)
    configs = con.execute("SELECT count(*) FROM WARPLINE_KERNEL_CONFIGS").fetchone()[0]
    set_rows(con, "WARPLINE_KERNEL_CONFIGS", [
        {"gridX": INT64_MAX, "blockX": -1, "dynamicSharedMemory": INT64_MIN},
        {"gridX": UINT32_MAX, "blockX": UINT32_MAX, "registersPerThread": -1},
        {"deviceId": INT64_MAX, "contextId": -1}][:configs])
    runtime = []
    for v in EXTREMES:
        runtime += [{"start": v}, {"end": v}, {"correlationId": v}, {"globalTid": v},
                    {"nameId": v}]
    set_rows(con, "CUPTI_ACTIVITY_KIND_RUNTIME", runtime)
    set_rows(con, "CUPTI_ACTIVITY_KIND_MEMCPY", [{"bytes": v} for v in EXTREMES])
    set_rows(con, "NVTX_EVENTS", [{"start": v, "globalTid": v, "textId": v} for v in EXTREMES])
    con.execute("INSERT INTO StringIds VALUES (?, 'name at INT64_MAX')", (INT64_MAX,))
    con.execute("INSERT INTO StringIds VALUES (?, 'name at INT64_MIN')", (INT64_MIN,))
    con.execute("COMMIT")
    con.close()


# --- size and fan-out ---------------------------------------------------------------------------

def nsys_correlation_fanout(path):
    """nsys: one launch call and 500,000 kernels that all carry its correlationId"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    kernel_cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_KERNEL)")]
    api_cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
    template = con.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS (SELECT 1 "
                           "FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.correlationId = "
                           "k.correlationId) ORDER BY start LIMIT 1").fetchone()
    launch = con.execute("SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = ?",
                         (template[kernel_cols.index("correlationId")],)).fetchone()
    correlation = 1 + con.execute(
        "SELECT max(m) FROM (SELECT max(correlationId) m FROM CUPTI_ACTIVITY_KIND_KERNEL "
        "UNION ALL SELECT max(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME)").fetchone()[0]
    t0 = con.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] + 1000
    con.execute("BEGIN")
    call = list(launch)
    call[api_cols.index("start")], call[api_cols.index("end")] = t0 - 500, t0 - 100
    call[api_cols.index("correlationId")] = correlation
    con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES "
                f"({', '.join('?' * len(call))})", call)
    i_start, i_end = kernel_cols.index("start"), kernel_cols.index("end")
    i_corr = kernel_cols.index("correlationId")

    def rows():
        row = list(template)
        row[i_corr] = correlation
        for i in range(500_000):
            row[i_start], row[i_end] = t0 + 1000 * i, t0 + 1000 * i + 500
            yield row

    con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
                    f"({', '.join('?' * len(template))})", rows())
    con.execute("COMMIT")
    con.close()


def nsys_100k_tables(path):
    """nsys: 100,000 extra empty tables in the schema (each with its own empty root page)"""
    copy_seed(NSYS_SEED, path)
    count = 100_000
    con = connect(path)
    con.execute("PRAGMA page_size = 512")  # keeps the file small: one 512-byte page per table
    con.execute("VACUUM")
    if con.execute("PRAGMA auto_vacuum").fetchone()[0] != 0:
        raise RuntimeError("the seed uses auto_vacuum: pointer-map pages would be needed")
    con.close()
    # CREATE TABLE scans the whole schema each time (100,000 of them take about 15 minutes), so
    # the root pages are appended by hand (empty table leaf pages) and the schema rows inserted
    # with writable_schema. PRAGMA integrity_check below proves the result a valid database.
    with open(path, "r+b") as f:
        header = bytearray(f.read(100))
        page_size = int.from_bytes(header[16:18], "big")
        pages = int.from_bytes(header[28:32], "big")
        if page_size != 512 or os.path.getsize(path) != pages * page_size:
            raise RuntimeError("unexpected database header after VACUUM")
        empty_leaf = bytes([0x0D, 0, 0, 0, 0]) + page_size.to_bytes(2, "big")
        empty_leaf += bytes(page_size - len(empty_leaf))
        f.seek(pages * page_size)
        f.write(empty_leaf * count)
        counter = (int.from_bytes(header[24:28], "big") + 1) & 0xFFFFFFFF
        header[24:28] = counter.to_bytes(4, "big")            # file change counter
        header[28:32] = (pages + count).to_bytes(4, "big")    # database size in pages
        header[92:96] = counter.to_bytes(4, "big")            # version-valid-for
        f.seek(0)
        f.write(header)
    con = connect(path)
    con.execute("PRAGMA writable_schema = ON")
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql) "
        "VALUES ('table', ?1, ?1, ?2, 'CREATE TABLE ' || ?1 || ' (start INTEGER, end INTEGER, "
        "value TEXT)')", ((f"EMPTY_{i:06d}", pages + 1 + i) for i in range(count)))
    con.execute("COMMIT")
    con.close()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    check = con.execute("PRAGMA integrity_check").fetchone()[0]
    tables = con.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
    con.close()
    if check != "ok":
        raise RuntimeError(f"integrity_check: {check}")
    return f"{tables:,} tables, integrity_check ok"


def nsys_300mb_name(path):
    """nsys: one 300 MB string in StringIds, the demangled and short name of a kernel"""
    copy_seed(NSYS_SEED, path)
    con = connect(path)
    name_id = con.execute("SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL "
                          "ORDER BY start LIMIT 1").fetchone()[0]
    con.execute("BEGIN")
    # 300,000,000 'k' characters, built inside SQLite (hex of 150 MB of zeros, 0 -> k).
    con.execute("UPDATE StringIds SET value = replace(hex(zeroblob(150000000)), '0', 'k') "
                "WHERE id = ?", (name_id,))
    con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = demangledName "
                "WHERE demangledName = ?", (name_id,))
    con.execute("COMMIT")
    con.close()


# --- PyTorch profiler JSON ----------------------------------------------------------------------

def pt_3gb_string(path):
    """PyTorch: a .json.gz inflating to 3 GB, one JSON string: {"traceEvents": "aaaa..."}
    (zlib level 9, written in chunks)"""
    total = 3_000_000_000
    chunk = b"a" * (64 << 20)
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # gzip wrapper
    with open(path, "wb") as f:
        f.write(z.compress(b'{"traceEvents": "'))
        left = total
        while left > 0:
            n = min(left, len(chunk))
            f.write(z.compress(chunk if n == len(chunk) else chunk[:n]))
            left -= n
        f.write(z.compress(b'"}'))
        f.write(z.flush())
    return f"inflates to {total + 19:,} bytes"


def pt_deep_nesting(path):
    """PyTorch: traceEvents is 10,000,000 nested arrays ([[[...]]], well-formed)"""
    depth = 10_000_000
    with open(path, "wb") as f:
        f.write(b'{"traceEvents": ')
        f.write(b"[" * depth)
        f.write(b"]" * depth)
        f.write(b"}")


def pt_invalid_utf8(path):
    """PyTorch: invalid UTF-8 in names (raw bytes FF FE, a cut sequence, an encoded surrogate)
    and an escaped lone surrogate \\ud800"""
    doc = pytorch_seed()
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "Kernel"]
    kernels[0]["name"] = "@BAD1@"
    kernels[1]["name"] = "@BAD2@"
    first_event(doc, "Runtime")["name"] = "@BAD3@"
    with open(path, "wb") as f:
        f.write(json_with_raw(doc, {
            "@BAD1@": b'"bad \xff\xfe name"',
            "@BAD2@": b'"cut \xe2\x82 and surrogate \xed\xa0\x80"',
            "@BAD3@": b'"lone \\ud800 surrogate"'}))


def pt_number_range(path):
    """PyTorch: numbers out of range: "ts": 1e999, "dur": -1e300, 400-digit integers in ts, dur,
    pid, tid and the correlation id"""
    doc = pytorch_seed()
    kernels = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "Kernel"]
    big = b"9" * 400
    kernels[0]["ts"] = "@TS_INF@"
    kernels[1]["dur"] = "@DUR_NEG@"
    kernels[2]["ts"] = "@TS_BIG@"
    kernels[3]["dur"] = "@DUR_BIG@"
    kernels[4]["pid"] = "@PID_BIG@"
    kernels[4]["tid"] = "@TID_BIG@"
    kernels[5].setdefault("args", {})["correlation"] = "@CORR_BIG@"
    kernels[6]["ts"] = "@TS_NEG_BIG@"
    with open(path, "wb") as f:
        f.write(json_with_raw(doc, {
            "@TS_INF@": b"1e999", "@DUR_NEG@": b"-1e300", "@TS_BIG@": big,
            "@DUR_BIG@": big, "@PID_BIG@": big, "@TID_BIG@": big, "@CORR_BIG@": big,
            "@TS_NEG_BIG@": b"-" + big}))


def pt_duplicate_keys(path):
    """PyTorch: duplicate keys: "traceEvents" twice (the seed's events, then again shifted by
    one second), "ts" twice in one kernel event"""
    doc = pytorch_seed()
    first_event(doc, "Kernel")["ts"] = "@TS_TWICE@"
    events = json_with_raw(doc["traceEvents"], {"@TS_TWICE@": b'1000, "ts": 2000000000'})
    shifted = [dict(e, ts=e["ts"] + 1_000_000) if isinstance(e.get("ts"), (int, float)) else e
               for e in pytorch_seed()["traceEvents"]]
    with open(path, "wb") as f:
        f.write(b'{"traceEvents": ' + events + b', "traceEvents": ' +
                json.dumps(shifted).encode() + b"}")


def pt_truncated_gz(path):
    """PyTorch: a .json.gz cut in the middle of its compressed data"""
    with open(PYTORCH_GZ_SEED, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


# --- seeds, unmodified: the reference figures ---------------------------------------------------

# --- beside and inside the file (issue 27) --------------------------------------------------------

JOURNAL_MAGIC = bytes([0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])


def killed_recording(path):
    """A copy of the Warpline seed and the hot journal a recorder killed mid-batch leaves (the
    batch deleted every kernel; a 2-page cache spilled it into the file)."""
    source = copy_seed(WARPLINE_SEED, path + ".source")
    con = sqlite3.connect(source, isolation_level=None)
    con.execute("PRAGMA cache_size=2")
    con.execute("BEGIN")
    con.execute("DELETE FROM WARPLINE_KERNELS")
    con.execute("INSERT INTO StringIds SELECT id + 100000, value || value FROM StringIds")
    remove(path)
    shutil.copyfile(source, path)
    shutil.copyfile(source + "-journal", path + "-journal")
    con.close()
    remove(source)


def name_super_journal(journal, super_path):
    """Appends a super-journal record naming SUPER_PATH (pager.c, writeSuperJournal)."""
    name = super_path.encode()
    checksum = sum(b - 256 if b > 127 else b for b in name) & 0xFFFFFFFF
    with open(journal, "ab") as f:
        f.write((0x40000000 // 4096 + 1).to_bytes(4, "big") + name +
                len(name).to_bytes(4, "big") + checksum.to_bytes(4, "big") + JOURNAL_MAGIC)


def wl_super_journal(path):
    """hot journal naming a super-journal: SQLite's playback deletes the file it names (here
    victim.txt beside the cases: a removed file shows under the table)"""
    killed_recording(path)
    victim = os.path.join(os.path.dirname(path), "victim.txt")
    with open(victim, "w") as f:
        f.write("a file of the user's\n")
    name_super_journal(path + "-journal", victim)


def wal_with_frames(path):
    """The Warpline seed in WAL mode with its kernels doubled in committed WAL frames."""
    source = copy_seed(WARPLINE_SEED, path + ".source")
    con = sqlite3.connect(source, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.execute("INSERT INTO WARPLINE_KERNELS SELECT * FROM WARPLINE_KERNELS")
    remove(path)
    shutil.copyfile(source, path)
    shutil.copyfile(source + "-wal", path + "-wal")
    con.close()
    remove(source)


def wl_wal_rollback_header(path):
    """a -wal with committed rows beside a file whose header says rollback mode: SQLite reads
    the WAL (twice the seed's kernels); a reader that trusts the header misses them"""
    wal_with_frames(path)
    with open(path, "r+b") as f:
        f.seek(18)
        f.write(bytes([1, 1]))


def wl_wal_mode(path):
    """a WAL-mode file, no -wal: SQLite makes a -wal and -shm beside it when it reads it"""
    copy_seed(WARPLINE_SEED, path)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()


def wl_decoy_schema(path):
    """the kernels' schema row typed 'Table', and a decoy row named WARPLINE_KERNELS (a CREATE
    TABLE IF NOT EXISTS SQLite skips) pointing at 10 other kernels"""
    copy_seed(WARPLINE_SEED, path)
    con = sqlite3.connect(path, isolation_level=None)
    con.executescript(
        "CREATE TABLE decoy AS SELECT * FROM WARPLINE_KERNELS LIMIT 10;"
        "PRAGMA writable_schema=ON;"
        "UPDATE sqlite_schema SET type = 'Table' WHERE name = 'WARPLINE_KERNELS';"
        "UPDATE sqlite_schema SET rowid = 100000, name = 'WARPLINE_KERNELS', "
        "tbl_name = 'WARPLINE_KERNELS', sql = 'CREATE TABLE IF NOT EXISTS WARPLINE_KERNELS(x)' "
        "WHERE name = 'decoy';")
    con.close()


def interior_page(child, cells=400, page_size=4096):
    """A table interior page whose cells and right-most pointer all name CHILD."""
    page = bytearray(page_size)
    page[0] = 0x05
    page[3:5] = cells.to_bytes(2, "big")
    content = page_size
    for i in range(cells):
        content -= 5
        page[content:content + 4] = child.to_bytes(4, "big")
        page[content + 4] = i & 0x7F
        page[12 + 2 * i:14 + 2 * i] = content.to_bytes(2, "big")
    page[5:7] = content.to_bytes(2, "big")
    page[8:12] = child.to_bytes(4, "big")
    return bytes(page)


def shared_pages(path, table, hole=0):
    """Three levels of interior pages over TABLE's leaf, each of whose 401 children is the page
    below: 401^3 paths, no cycle. HOLE bytes of sparse file follow."""
    copy_seed(WARPLINE_SEED, path)
    con = sqlite3.connect(path, isolation_level=None)
    con.executescript(f"DELETE FROM {table} WHERE rowid > 20; "
                      "UPDATE NVTX_EVENTS SET eventType = 12345; VACUUM;")
    leaf = con.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,)).fetchone()[0]
    pages = con.execute("PRAGMA page_count").fetchone()[0]
    con.executescript(f"PRAGMA writable_schema=ON; UPDATE sqlite_schema SET rootpage = "
                      f"{pages + 3} WHERE name = '{table}';")
    con.close()
    with open(path, "r+b") as f:
        f.seek(pages * 4096)
        f.write(interior_page(leaf) + interior_page(pages + 1) + interior_page(pages + 2))
        f.seek(28)
        f.write((pages + 3).to_bytes(4, "big"))
        if hole:
            f.truncate((pages + 3) * 4096 + hole)


def wl_dag_kernels(path):
    """kernel b-tree pages shared by many parents (401^3 paths to one leaf): SQLite returns
    rows along every path"""
    shared_pages(path, "WARPLINE_KERNELS")


def wl_dag_nvtx_filtered_sparse(path):
    """the same over NVTX_EVENTS, whose rows the loader's filter rejects (no row ever comes),
    followed by a 2 GiB hole (a budget sized by the file's length is 107 s)"""
    shared_pages(path, "NVTX_EVENTS", hole=2 << 30)


def wl_sparse_hot_journal(path):
    """a 2 GiB hole after the file's pages, and a hot journal: a copy for the rollback that
    writes the hole out writes 2 GiB of zeros"""
    killed_recording(path)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) + (2 << 30))


def seed_nsys(path):
    """reference: the nsys seed, unmodified (1312 kernels, 3048 API calls)"""
    copy_seed(NSYS_SEED, path)


def seed_warpline(path):
    """reference: the Warpline seed, unmodified (1604 kernels, 1829 API calls)"""
    copy_seed(WARPLINE_SEED, path)


def seed_pytorch(path):
    """reference: the PyTorch seed, unmodified"""
    copy_seed(PYTORCH_SEED, path)


CASES = [
    ("seed-nsys.sqlite", seed_nsys),
    ("seed-warpline.warpline", seed_warpline),
    ("seed-pytorch.json", seed_pytorch),
    ("nsys-kernel-view-endless.sqlite", nsys_kernel_view_endless),
    ("nsys-stringids-view-endless.sqlite", nsys_stringids_view_endless),
    ("nsys-runtime-view-endless.sqlite", nsys_runtime_view_endless),
    ("wl-kernels-view-endless.warpline", wl_kernels_view_endless),
    ("wl-nvtx-view-endless.warpline", wl_nvtx_view_endless),
    ("nsys-kernel-view-fanout.sqlite", nsys_kernel_view_fanout),
    ("nsys-triggers.sqlite", nsys_triggers),
    ("wl-triggers.warpline", wl_triggers),
    ("wl-generated-start.warpline", wl_generated_start),
    ("nsys-generated-start.sqlite", nsys_generated_start),
    ("nsys-wrong-types.sqlite", nsys_wrong_types),
    ("wl-wrong-types.warpline", wl_wrong_types),
    ("nsys-extreme-values.sqlite", nsys_extreme_values),
    ("wl-extreme-values.warpline", wl_extreme_values),
    ("nsys-correlation-fanout.sqlite", nsys_correlation_fanout),
    ("nsys-100k-tables.sqlite", nsys_100k_tables),
    ("nsys-300mb-name.sqlite", nsys_300mb_name),
    ("pt-3gb-string.json.gz", pt_3gb_string),
    ("pt-deep-nesting.json", pt_deep_nesting),
    ("pt-invalid-utf8.json", pt_invalid_utf8),
    ("pt-number-range.json", pt_number_range),
    ("pt-duplicate-keys.json", pt_duplicate_keys),
    ("pt-truncated.json.gz", pt_truncated_gz),
    ("wl-super-journal.warpline", wl_super_journal),
    ("wl-wal-rollback-header.warpline", wl_wal_rollback_header),
    ("wl-wal-mode.warpline", wl_wal_mode),
    ("wl-decoy-schema.warpline", wl_decoy_schema),
    ("wl-dag-kernels.warpline", wl_dag_kernels),
    ("wl-dag-nvtx-filtered-sparse.warpline", wl_dag_nvtx_filtered_sparse),
    ("wl-sparse-hot-journal.warpline", wl_sparse_hot_journal),
]


def describe(function):
    return " ".join(function.__doc__.split())


def main():
    parser = argparse.ArgumentParser(description="Write hostile trace files for "
                                     "bench/run_robustness.sh.")
    parser.add_argument("outdir")
    parser.add_argument("--only", nargs="*", default=[], metavar="SUBSTRING",
                        help="only the cases whose file name contains one of these")
    args = parser.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for seed in (NSYS_SEED, WARPLINE_SEED, PYTORCH_SEED, PYTORCH_GZ_SEED):
        if not os.path.isfile(seed):
            sys.exit(f"crafted_traces.py: seed trace missing: {seed}")
    manifest = []
    for name, function in CASES:
        if args.only and not any(s in name for s in args.only):
            continue
        path = os.path.join(args.outdir, name)
        t0 = time.monotonic()
        note = function(path)
        seconds = time.monotonic() - t0
        size = os.path.getsize(path)
        what = describe(function)
        print(f"{name:36} {size:>13,} B  {what}" + (f" [{note}]" if note else "") +
              f"  ({seconds:.1f} s to write)", flush=True)
        manifest.append(f"{name}\t{size}\t{what}")
    with open(os.path.join(args.outdir, "cases.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
