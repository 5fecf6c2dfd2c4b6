#!/usr/bin/env python3
"""Checks warpline-stats' nsys-style reports against the SQL of Nsight Systems' own reports.

Usage: nsys_stats_sql.py WARPLINE_STATS TRACE...

For each trace this runs, with Python's sqlite3 on the trace file itself (opened read-only), the
queries of the `nsys stats` reports that cover what Warpline records, and compares them row by
row with `WARPLINE_STATS TRACE --report R --format json`:

    nsys report             warpline-stats report   rows keyed by
    cuda_gpu_kern_sum       kernels                 Name (demangled kernel name)
    cuda_api_sum            api                     Name (API name, version suffix stripped)
    nvtx_sum                nvtx                    (Style, Range)
    cuda_gpu_mem_time_sum   memops                  Operation
    cuda_gpu_mem_size_sum   memsize                 Operation

For every row the instance count and the total are compared exactly, and Min, Max and Med where
both sides have them (memsize: Warpline prints MB = 10^6 bytes; its values are turned back into
bytes and must agree to within half a byte). A row that only one side has is a mismatch. Every
mismatch is printed with the file, report, row and both values; the script prints one summary
line per trace and report, and exits 1 on any mismatch (or a warpline-stats failure), 0 otherwise.

Where the SQL comes from: the report scripts that nsys ships (`reports/*.py` in the Nsight Systems
installation, NVIDIA proprietary). A public copy of the 2020-2024 versions (header "Copyright (c)
2020-2024 NVIDIA CORPORATION") is in github.com/singularitti/nsys-recipe, src/nsys_recipe/reports/
(cuda_gpu_kern_sum.py, cuda_api_sum.py, nvtx_sum.py, cuda_gpu_mem_time_sum.py,
cuda_gpu_mem_size_sum.py). The queries below follow those, with these differences:

- nsys registers its own SQLite aggregates median(), stdev(), lower_quartile() and
  upper_quartile(). Their code is not in the report scripts; median() here is the usual one (the
  middle value, the mean of the two middle values for an even count) and stdev() the sample
  standard deviation. The hidden quartile columns (_Q1, _Q3) are left out: Warpline has none.
- cuda_gpu_kern_sum reads the view CUPTI_ACTIVITY_KIND_KERNEL_NAMED that nsys's kernel_helper.py
  creates; kernel_helper.py itself was not found. Its definition here is taken from the older
  cuda_gpu_kern_sum.py, which inlines it: the name is StringIds[demangledName] (the default; the
  :base option would use shortName, :mangled mangledName). It is a CTE, so nothing is written.

Name mapping (documented differences in how the two sides print a name, not in the figures):

- nvtx_sum names a range `domain:text`, so a range of the default domain (no domain name) shows
  as `:text`; Warpline shows `text` there and `domain:text` elsewhere (docs/analyses.md). A
  leading ':' is dropped from nsys's name before matching.
- Everything else is matched exactly. nsys's cuda_api_sum strips a version suffix only when `_v`
  is the sixth character from the end (`cudaLaunchKernel_v7000` -> `cudaLaunchKernel`, but
  `cudaGraphLaunch_v10000` and `cudaEventRecordWithFlags_v11010` stay as they are, as real
  `nsys stats` output shows them); Warpline does the same (model/loading/traceloader.cpp
  stripVersionSuffix). Should the two ever differ again, a row left unmatched on both sides is
  paired with the other side's row of the same name without any `_vN...` suffix, reported as a
  name mismatch with both sides' figures, and its figures are compared too.
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import urllib.parse


# ---------------------------------------------------------------------------------------------
# nsys's SQLite aggregate functions (see the module docstring).

class Median:
    def __init__(self):
        self.values = []

    def step(self, value):
        if value is not None:
            self.values.append(value)

    def finalize(self):
        if not self.values:
            return None
        v = sorted(self.values)
        n = len(v)
        if n % 2:
            return v[n // 2]
        return (v[n // 2 - 1] + v[n // 2]) / 2.0


class Stdev:
    def __init__(self):
        self.values = []

    def step(self, value):
        if value is not None:
            self.values.append(value)

    def finalize(self):
        n = len(self.values)
        if n == 0:
            return None
        if n == 1:
            return 0.0
        mean = sum(self.values) / n
        return (sum((x - mean) ** 2 for x in self.values) / (n - 1)) ** 0.5


# ---------------------------------------------------------------------------------------------
# The reports' SQL, as in nsys's reports/*.py (2020-2024 versions).

# cuda_gpu_kern_sum.py; CUPTI_ACTIVITY_KIND_KERNEL_NAMED as kernel_helper.py would create it for
# the default (demangled) names.
CUDA_GPU_KERN_SUM = """
WITH
    CUPTI_ACTIVITY_KIND_KERNEL_NAMED AS (
        SELECT
            k.*,
            dname.value AS name
        FROM
            CUPTI_ACTIVITY_KIND_KERNEL AS k
        LEFT JOIN
            StringIds AS dname
            ON dname.id == k.demangledName
    ),
    summary AS (
        SELECT
            name,
            sum(end - start) AS total,
            count(*) AS num,
            avg(end - start) AS avg,
            median(end - start) AS med,
            min(end - start) AS min,
            max(end - start) AS max,
            stdev(end - start) AS stddev
        FROM
            CUPTI_ACTIVITY_KIND_KERNEL_NAMED
        GROUP BY 1
    ),
    totals AS (
        SELECT sum(total) AS total
        FROM summary
    )
SELECT
    round(summary.total * 100.0 / (SELECT total FROM totals), 1) AS "Time:ratio_%",
    summary.total AS "Total Time:dur_ns",
    summary.num AS "Instances",
    round(summary.avg, 1) AS "Avg:dur_ns",
    round(summary.med, 1) AS "Med:dur_ns",
    summary.min AS "Min:dur_ns",
    summary.max AS "Max:dur_ns",
    round(summary.stddev, 1) AS "StdDev:dur_ns",
    summary.name AS "Name"
FROM
    summary
ORDER BY 2 DESC, 3, "Name"
;
"""

# cuda_api_sum.py: every row of CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver calls, eventClass
# 0 and 1), grouped by nameId; `_vNNNN` stripped only when '_v' is 6 characters from the end.
CUDA_API_SUM = """
WITH
    summary AS (
        SELECT
            nameId AS nameId,
            sum(end - start) AS total,
            count(*) AS num,
            avg(end - start) AS avg,
            median(end - start) AS med,
            min(end - start) AS min,
            max(end - start) AS max,
            stdev(end - start) AS stddev
        FROM
            CUPTI_ACTIVITY_KIND_RUNTIME
        GROUP BY 1
    ),
    totals AS (
        SELECT sum(total) AS total
        FROM summary
    )
SELECT
    round(summary.total * 100.0 / (SELECT total FROM totals), 1) AS "Time:ratio_%",
    summary.total AS "Total Time:dur_ns",
    summary.num AS "Num Calls",
    round(summary.avg, 1) AS "Avg:dur_ns",
    round(summary.med, 1) AS "Med:dur_ns",
    summary.min AS "Min:dur_ns",
    summary.max AS "Max:dur_ns",
    round(summary.stddev, 1) AS "StdDev:dur_ns",
    CASE substr(ids.value, -6, 2)
        WHEN '_v'
            THEN substr(ids.value, 1, length(value)-6)
        ELSE ids.value
    END AS "Name"
FROM
    summary
LEFT JOIN
    StringIds AS ids
    ON ids.id == summary.nameId
ORDER BY 2 DESC
;
"""

# nvtx_sum.py: push/pop (59) and start/end (60) ranges, and their NVTXT forms (70, 71); the name
# is `domain:text`; an unclosed range lasts to the latest start or end in NVTX_EVENTS.
NVTX_SUM = """
WITH
    domains AS (
        SELECT
            min(ne.start),
            ne.domainId AS id,
            ne.globalTid AS globalTid,
            coalesce(sid.value, ne.text) AS name
        FROM
            NVTX_EVENTS AS ne
        LEFT JOIN
            StringIds AS sid
            ON ne.textId == sid.id
        WHERE
            ne.eventType == 75
        GROUP BY 2, 3
    ),
    maxts AS(
        SELECT max(max(start), max(end)) AS m
        FROM   NVTX_EVENTS
    ),
    nvtx AS (
        SELECT
            coalesce(ne.end, (SELECT m FROM maxts)) - ne.start AS duration,
            coalesce(d.name, '') || ':' || coalesce(sid.value, ne.text, '') AS tag,
            CASE ne.eventType
                WHEN 59
                    THEN 'PushPop'
                WHEN 60
                    THEN 'StartEnd'
                WHEN 70
                    THEN 'PushPop'
                WHEN 71
                    THEN 'StartEnd'
                ELSE 'Unknown'
            END AS style
        FROM
            NVTX_EVENTS AS ne
        LEFT JOIN
            domains AS d
            ON ne.domainId == d.id
                AND (ne.globalTid & 0x0000FFFFFF000000) == (d.globalTid & 0x0000FFFFFF000000)
        LEFT JOIN
            StringIds AS sid
            ON ne.textId == sid.id
        WHERE
               ne.eventType == 59
            OR ne.eventType == 60
            OR ne.eventType == 70
            OR ne.eventType == 71
    ),
    summary AS (
        SELECT
            tag AS name,
            style AS style,
            sum(duration) AS total,
            count(*) AS num,
            avg(duration) AS avg,
            median(duration) AS med,
            min(duration) AS min,
            max(duration) AS max,
            stdev(duration) AS stddev
        FROM
            nvtx
        GROUP BY 1, 2
    ),
    totals AS (
        SELECT sum(total) AS total
        FROM summary
    )
    SELECT
        round(total * 100.0 / (SELECT total FROM totals), 1) AS "Time:ratio_%",
        total AS "Total Time:dur_ns",
        num AS "Instances",
        round(avg, 1) AS "Avg:dur_ns",
        round(med, 1) AS "Med:dur_ns",
        min AS "Min:dur_ns",
        max AS "Max:dur_ns",
        round(stddev, 1) AS "StdDev:dur_ns",
        style AS "Style",
        name AS "Range"
    FROM
        summary
    ORDER BY 2 DESC
;
"""

# cuda_gpu_mem_time_sum.py and cuda_gpu_mem_size_sum.py: one query stub, memcpys named by
# ENUM_CUDA_MEMCPY_OPER's label (an INNER JOIN), all memsets as one row.
MEM_TIME_STUB = """
WITH
    memops AS (
        {MEM_SUB_QUERY}
    ),
    summary AS (
        SELECT
            name AS name,
            sum(duration) AS total,
            count(*) AS num,
            avg(duration) AS avg,
            median(duration) AS med,
            min(duration) AS min,
            max(duration) AS max,
            stdev(duration) AS stddev
        FROM
            memops
        GROUP BY 1
    ),
    totals AS (
        SELECT sum(total) AS total
        FROM summary
    )
SELECT
    round(summary.total * 100.0 / (SELECT total FROM totals), 1) AS "Time:ratio_%",
    summary.total AS "Total Time:dur_ns",
    summary.num AS "Count",
    round(summary.avg, 1) AS "Avg:dur_ns",
    round(summary.med, 1) AS "Med:dur_ns",
    summary.min AS "Min:dur_ns",
    summary.max AS "Max:dur_ns",
    round(summary.stddev, 1) AS "StdDev:dur_ns",
    summary.name AS "Operation"
FROM
    summary
ORDER BY 2 DESC
;
"""

MEM_TIME_MEMCPY = """
        SELECT
            '[CUDA memcpy ' || mos.label || ']' AS name,
            mcpy.end - mcpy.start AS duration
        FROM
            CUPTI_ACTIVITY_KIND_MEMCPY as mcpy
        INNER JOIN
            ENUM_CUDA_MEMCPY_OPER AS mos
            ON mos.id == mcpy.copyKind
"""

MEM_TIME_MEMSET = """
        SELECT
            '[CUDA memset]' AS name,
            end - start AS duration
        FROM
            CUPTI_ACTIVITY_KIND_MEMSET
"""

MEM_SIZE_STUB = """
WITH
    memops AS (
        {MEM_SUB_QUERY}
    ),
    summary AS (
        SELECT
            name AS name,
            sum(size) AS total,
            count(*) AS num,
            avg(size) AS avg,
            median(size) AS med,
            min(size) AS min,
            max(size) AS max,
            stdev(size) AS stddev
        FROM memops
        GROUP BY 1
    )
SELECT
    summary.total AS "Total:mem_B",
    summary.num AS "Count",
    summary.avg AS "Avg:mem_B",
    summary.med AS "Med:mem_B",
    summary.min AS "Min:mem_B",
    summary.max AS "Max:mem_B",
    summary.stddev AS "StdDev:mem_B",
    summary.name AS "Operation"
FROM
    summary
ORDER BY 1 DESC
;
"""

MEM_SIZE_MEMCPY = """
        SELECT
            '[CUDA memcpy ' || mos.label || ']' AS name,
            mcpy.bytes AS size
        FROM
            CUPTI_ACTIVITY_KIND_MEMCPY as mcpy
        INNER JOIN
            ENUM_CUDA_MEMCPY_OPER AS mos
            ON mos.id == mcpy.copyKind
"""

MEM_SIZE_MEMSET = """
        SELECT
            '[CUDA memset]' AS name,
            bytes AS size
        FROM
            CUPTI_ACTIVITY_KIND_MEMSET
"""

MEM_UNION = """
        UNION ALL
"""


def table_exists(db, name):
    return db.execute("SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                      (name,)).fetchone() is not None


class NsysRefuses(Exception):
    """nsys's report would print this error instead of a table."""


def mem_query(db, stub, memcpy, memset):
    """As the mem reports' setup(): a sub-query per table the file has, or None."""
    subs = []
    if table_exists(db, 'CUPTI_ACTIVITY_KIND_MEMCPY'):
        if not table_exists(db, 'ENUM_CUDA_MEMCPY_OPER'):
            raise NsysRefuses('the file does not contain ENUM_CUDA_MEMCPY_OPER table')
        subs.append(memcpy)
    if table_exists(db, 'CUPTI_ACTIVITY_KIND_MEMSET'):
        subs.append(memset)
    return stub.format(MEM_SUB_QUERY=MEM_UNION.join(subs)) if subs else None


# ---------------------------------------------------------------------------------------------
# How the two sides' rows line up.

def nvtx_range_name(tag):
    # nsys's `:text` for the default domain is Warpline's `text` (module docstring).
    return tag[1:] if tag is not None and tag.startswith(':') else tag


def without_version(name):
    return re.sub(r'_v\d+$', '', name) if isinstance(name, str) else name


# name: warpline-stats report; nsys: nsys report; sql(db): the query or None when the file has no
# such data; key_*: a row's key on each side; count_*: the count column; cols: (nsys column,
# warpline column) pairs compared after the count; scale: multiplies Warpline's values into the
# nsys unit; tol: the allowed difference in nsys units (0 = exact).
REPORTS = [
    dict(name='kernels', nsys='cuda_gpu_kern_sum',
         sql=lambda db: (CUDA_GPU_KERN_SUM if table_exists(db, 'CUPTI_ACTIVITY_KIND_KERNEL')
                         else None),
         key_nsys=lambda r: r['Name'], key_wl=lambda r: r['Name'],
         count=('Instances', 'Instances'),
         cols=[('Total Time:dur_ns', 'Total Time (ns)'), ('Min:dur_ns', 'Min (ns)'),
               ('Max:dur_ns', 'Max (ns)'), ('Med:dur_ns', 'Med (ns)')],
         scale=1, tol=0, loose=None),
    dict(name='api', nsys='cuda_api_sum',
         sql=lambda db: CUDA_API_SUM if table_exists(db, 'CUPTI_ACTIVITY_KIND_RUNTIME') else None,
         key_nsys=lambda r: r['Name'], key_wl=lambda r: r['Name'],
         count=('Num Calls', 'Num Calls'),
         cols=[('Total Time:dur_ns', 'Total Time (ns)'), ('Min:dur_ns', 'Min (ns)'),
               ('Max:dur_ns', 'Max (ns)'), ('Med:dur_ns', 'Med (ns)')],
         scale=1, tol=0, loose=without_version),
    dict(name='nvtx', nsys='nvtx_sum',
         sql=lambda db: NVTX_SUM if table_exists(db, 'NVTX_EVENTS') else None,
         key_nsys=lambda r: (r['Style'], nvtx_range_name(r['Range'])),
         key_wl=lambda r: (r['Style'], r['Range']),
         count=('Instances', 'Instances'),
         cols=[('Total Time:dur_ns', 'Total Time (ns)'), ('Min:dur_ns', 'Min (ns)'),
               ('Max:dur_ns', 'Max (ns)'), ('Med:dur_ns', 'Med (ns)')],
         scale=1, tol=0, loose=None),
    dict(name='memops', nsys='cuda_gpu_mem_time_sum',
         sql=lambda db: mem_query(db, MEM_TIME_STUB, MEM_TIME_MEMCPY, MEM_TIME_MEMSET),
         key_nsys=lambda r: r['Operation'], key_wl=lambda r: r['Operation'],
         count=('Count', 'Count'),
         cols=[('Total Time:dur_ns', 'Total Time (ns)'), ('Min:dur_ns', 'Min (ns)'),
               ('Max:dur_ns', 'Max (ns)'), ('Med:dur_ns', 'Med (ns)')],
         scale=1, tol=0, loose=None),
    dict(name='memsize', nsys='cuda_gpu_mem_size_sum',
         sql=lambda db: mem_query(db, MEM_SIZE_STUB, MEM_SIZE_MEMCPY, MEM_SIZE_MEMSET),
         key_nsys=lambda r: r['Operation'], key_wl=lambda r: r['Operation'],
         count=('Count', 'Count'),
         cols=[('Total:mem_B', 'Total (MB)'), ('Min:mem_B', 'Min (MB)'),
               ('Max:mem_B', 'Max (MB)'), ('Med:mem_B', 'Med (MB)')],
         scale=1e6, tol=0.5, loose=None),
]


def open_trace(path):
    uri = 'file:' + urllib.parse.quote(os.path.abspath(path)) + '?mode=ro'
    db = sqlite3.connect(uri, uri=True)
    db.row_factory = sqlite3.Row
    db.create_aggregate('median', 1, Median)
    db.create_aggregate('stdev', 1, Stdev)
    return db


def run_stats(stats, trace, report):
    """warpline-stats' rows for one report, or raises RuntimeError."""
    cmd = [stats, trace, '--report', report, '--format', 'json']
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{' '.join(cmd)}: {e}")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    try:
        rows = json.loads(p.stdout)
    except ValueError as e:
        raise RuntimeError(f"{' '.join(cmd)}: output is not JSON ({e}): {p.stdout[:200]!r}")
    if not isinstance(rows, list):
        raise RuntimeError(f"{' '.join(cmd)}: output is not a JSON array")
    return rows


def fmt(v):
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v) if isinstance(v, str) else str(v)


def key_text(key):
    if isinstance(key, tuple):
        return ' '.join(fmt(k) for k in key)
    return fmt(key)


def index_rows(rows, key_of):
    """key -> the rows with that key (more than one when two groups print the same name)."""
    by_key = {}
    for r in rows:
        by_key.setdefault(key_of(r), []).append(r)
    return by_key


def figures(spec, rows, side):
    """'Num Calls 15, 15; Total Time 100, 98' for the rows of one key on one side."""
    c = spec['count'][0 if side == 'nsys' else 1]
    t = spec['cols'][0][0 if side == 'nsys' else 1]
    return (f"{c} {', '.join(fmt(r.get(c)) for r in rows)}; "
            f"{t} {', '.join(fmt(r.get(t)) for r in rows)}")


def compare_row(spec, nrow, wrow):
    """Differences between one nsys row and one warpline-stats row, as text."""
    diffs = []
    nc, wc = spec['count']
    if nrow[nc] != wrow.get(wc):
        diffs.append(f"{nc}: nsys {fmt(nrow[nc])}, warpline {fmt(wrow.get(wc))}")
    for ncol, wcol in spec['cols']:
        nv, wv = nrow[ncol], wrow.get(wcol)
        if wv is None or nv is None:
            if wcol in wrow and (nv is None) != (wv is None):
                diffs.append(f"{ncol}: nsys {fmt(nv)}, warpline {fmt(wv)}")
            continue
        wv_n = wv * spec['scale']
        if abs(wv_n - nv) > spec['tol']:
            shown = fmt(wv) if spec['scale'] == 1 else f"{fmt(wv)} MB = {wv_n:.1f} B"
            diffs.append(f"{ncol}: nsys {fmt(nv)}, warpline {shown}")
    return diffs


def check_report(stats, trace, db, spec):
    """Prints the report's summary line and its mismatches; returns the number of mismatches."""
    label = f"{os.path.basename(trace)} {spec['nsys']} / {spec['name']}"
    try:
        sql = spec['sql'](db)
    except NsysRefuses as e:
        print(f"{label}: SKIPPED: nsys's report would not run: {e}")
        return 0
    nsys_rows = [dict(r) for r in db.execute(sql)] if sql else []
    try:
        wl_rows = run_stats(stats, trace, spec['name'])
    except RuntimeError as e:
        print(f"{label}: FAIL: {e}")
        return 1

    nsys_by = index_rows(nsys_rows, spec['key_nsys'])
    wl_by = index_rows(wl_rows, spec['key_wl'])

    mismatches = []
    # A name printed on more than one row (nsys's cuda_api_sum groups by nameId, so
    # `cudaMalloc` and `cudaMalloc_v3020` both print as cudaMalloc): its rows cannot be paired.
    for k in sorted(set(nsys_by) | set(wl_by), key=key_text):
        n, w = nsys_by.get(k, []), wl_by.get(k, [])
        if len(n) > 1 or len(w) > 1:
            mismatches.append(f"{key_text(k)}: nsys SQL has {len(n)} rows of this name "
                              f"({figures(spec, n, 'nsys')}), warpline-stats {len(w)} "
                              f"({figures(spec, w, 'warpline')})")
            nsys_by.pop(k, None)
            wl_by.pop(k, None)
    nsys_by = {k: v[0] for k, v in nsys_by.items()}
    wl_by = {k: v[0] for k, v in wl_by.items()}

    for k, nrow in nsys_by.items():
        if k in wl_by:
            for d in compare_row(spec, nrow, wl_by[k]):
                mismatches.append(f"{key_text(k)}: {d}")
    only_nsys = [k for k in nsys_by if k not in wl_by]
    only_wl = [k for k in wl_by if k not in nsys_by]

    # Rows left on both sides: pair those equal but for a `_vN...` suffix, to show both names
    # with their figures.
    loose = spec['loose']
    if loose:
        wl_loose = {}
        for k in only_wl:
            wl_loose.setdefault(loose(k), []).append(k)
        for k in list(only_nsys):
            cands = wl_loose.get(loose(k), [])
            if len(cands) == 1:
                wk = cands[0]
                nrow, wrow = nsys_by[k], wl_by[wk]
                mismatches.append(f"{key_text(k)}: name: nsys {fmt(k)}, warpline {fmt(wk)} "
                                  f"(nsys {figures(spec, [nrow], 'nsys')}; warpline "
                                  f"{figures(spec, [wrow], 'warpline')})")
                for d in compare_row(spec, nrow, wrow):
                    mismatches.append(f"{key_text(k)}: {d}")
                only_nsys.remove(k)
                only_wl.remove(wk)
                wl_loose[loose(k)] = []

    nc, wc = spec['count']
    tn, tw = spec['cols'][0]
    for k in only_nsys:
        r = nsys_by[k]
        mismatches.append(f"{key_text(k)}: only in nsys SQL ({nc} {fmt(r[nc])}, {tn} {fmt(r[tn])})")
    for k in only_wl:
        r = wl_by[k]
        mismatches.append(f"{key_text(k)}: only in warpline-stats ({wc} {fmt(r.get(wc))}, "
                          f"{tw} {fmt(r.get(tw))})")

    count = sum(r[nc] for r in nsys_rows)
    total = sum(r[tn] for r in nsys_rows)
    unit = 'B' if spec['scale'] != 1 else 'ns'
    status = 'OK' if not mismatches else f"{len(mismatches)} MISMATCH(ES)"
    print(f"{label}: {len(nsys_rows)} rows (nsys SQL) / {len(wl_rows)} rows (warpline-stats), "
          f"{count} {nc.lower()}, {total} {unit}: {status}")
    for m in mismatches:
        print(f"  MISMATCH {os.path.basename(trace)} {spec['nsys']} / {spec['name']}: {m}")
    return len(mismatches)


def main(argv):
    if len(argv) < 3:
        print(f"usage: {os.path.basename(argv[0])} WARPLINE_STATS TRACE...", file=sys.stderr)
        return 2
    stats, traces = argv[1], argv[2:]
    if not (os.path.isfile(stats) and os.access(stats, os.X_OK)):
        print(f"FAIL: {stats} is not an executable file")
        return 1
    failures = 0
    for trace in traces:
        if not os.path.isfile(trace):
            print(f"{trace}: FAIL: no such file")
            failures += 1
            continue
        db = open_trace(trace)
        try:
            for spec in REPORTS:
                failures += check_report(stats, trace, db, spec)
        finally:
            db.close()
    if failures:
        print(f"FAIL: {failures} mismatch(es) or failure(s) between nsys's report SQL "
              f"and warpline-stats")
        return 1
    print(f"OK: warpline-stats agrees with nsys's report SQL on {len(traces)} trace(s)")
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
