#!/usr/bin/env python3
"""Writes PyTorch profiler JSON bombs that stay within the importer's size caps, and real-shaped
traces to compare them with, for bench/run_json_bombs.sh (issue 27 item 5).

    bench/json_bombs.py OUTDIR [--only SUBSTRING ...] [--big-mb N]

The bombs inflate to gigabytes of whitespace or filler around at most one kernel. Gigabytes of
one repeated MiB are gzipped the fast way: the MiB is deflated once (ending in a full flush, so
that it refers to nothing before it) and those bytes are repeated, then the gzip trailer (CRC-32
and size of the whole) is computed: a 4.5 GiB bomb takes seconds to write and is never held
whole. The real-shaped traces repeat the events of tests/data/pytorch/torch-gpt-with-stack
(recorded on an H100 with torch.profiler) with shifted times and correlation ids until the JSON
passes --big-mb (default 400, like the 384 MB trace of 155k GPU events a user has), plain and
gzipped at level 9, as torch.profiler's export_chrome_trace writes a .json.gz (gzip.open).

Prints one line per case (name, size, what it tests) and writes OUTDIR/cases.tsv with the same
fields. Standard library only.
"""

import argparse
import gzip
import os
import re
import struct
import sys
import time
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = os.path.join(REPO, "tests", "data", "pytorch", "torch-gpt-with-stack.pt.trace.json.gz")
GIB = 1 << 30
UNIT = 1 << 20  # one deflated run, repeated

HEAD = b'{"traceEvents": [\n'
TAIL = b"\n]}\n"
# One launch and its kernel: what the bombs wrap in whitespace, so that they are valid traces.
KERNEL = (b'{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
          b'"ts": 10, "dur": 5, "args": {"correlation": 1}},\n'
          b'{"ph": "X", "cat": "kernel", "name": "bomb_kernel", "pid": 0, "tid": 7, "ts": 20, '
          b'"dur": 3, "args": {"correlation": 1, "device": 0, "stream": 7}}')


def write_pieces(path, pieces, gzipped, level=9):
    """Writes the concatenation of PIECES, each (bytes, times): plain, or as one gzip member
    whose pieces repeated more than once are deflated once and their output repeated."""
    with open(path, "wb") as f:
        if not gzipped:
            for data, times in pieces:
                for _ in range(times):
                    f.write(data)
            return
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03")  # gzip header, no name, Unix
        z = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        crc = 0
        size = 0
        for data, times in pieces:
            block = z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)
            for _ in range(times):
                f.write(block)
                crc = zlib.crc32(data, crc)
            size += len(data) * times
        f.write(z.flush(zlib.Z_FINISH))
        f.write(struct.pack("<II", crc & 0xFFFFFFFF, size & 0xFFFFFFFF))


def run(pattern, total):
    """PIECES for TOTAL bytes of PATTERN repeated (its length dividing UNIT), in UNIT runs."""
    assert UNIT % len(pattern) == 0 and total % len(pattern) == 0
    unit = pattern * (UNIT // len(pattern))
    whole, rest = divmod(total, UNIT)
    pieces = [(unit, whole)]
    if rest:
        pieces.append((unit[:rest], 1))
    assert sum(len(d) * n for d, n in pieces) == total
    return pieces


def ws_4_5g_gz(path):
    """bomb: .json.gz of 4.5 GiB of spaces inside "traceEvents" (zlib level 9), no event"""
    write_pieces(path, [(HEAD, 1)] + run(b" ", 4 * GIB + GIB // 2) + [(TAIL, 1)], True)
    return "inflates to 4.5 GiB"


def ws_kernel_3_5g_gz(path):
    """bomb: .json.gz of one launch and its kernel between 1.75 GiB of whitespace on each side
    (newlines and spaces, zlib level 9)"""
    half = run(b"\n" + b" " * 63, 7 * GIB // 4)
    write_pieces(path, [(HEAD, 1)] + half + [(KERNEL, 1)] + half + [(TAIL, 1)], True)
    return "inflates to 3.5 GiB"


def ws_kernel_3_5g_json(path):
    """bomb: the same as plain JSON, 3.5 GiB on disk"""
    half = run(b"\n" + b" " * 63, 7 * GIB // 4)
    write_pieces(path, [(HEAD, 1)] + half + [(KERNEL, 1)] + half + [(TAIL, 1)], False)


def zeros_3g_gz(path):
    """bomb: .json.gz of one kernel then 3 GiB of "0," array elements (no whitespace at all;
    no byte above 50%)"""
    pieces = [(HEAD + KERNEL + b",", 1)] + run(b"0,", 3 * GIB) + [(b"0]}", 1)]
    write_pieces(path, pieces, True)
    return "inflates to 3 GiB"


def zeros_1g_json(path):
    """bomb: plain JSON of one kernel then 1 GiB of "0," array elements"""
    write_pieces(path, [(HEAD + KERNEL + b",", 1)] + run(b"0,", GIB) + [(b"0]}", 1)], False)


def diluted_3g_gz(path):
    """bomb: .json.gz of 200 MiB of random hex in strings (it inflates 2 times), then one kernel
    and 3 GiB of spaces: the whole file inflates only 28 times"""
    pieces = [(HEAD, 1)]
    for _ in range(200):  # each MiB its own random text: nothing repeats
        rnd = os.urandom(UNIT // 2).hex().encode()
        pieces.append((b'{"ph": "i", "name": "' + rnd[: UNIT - 32] + b'"},\n', 1))
    pieces += [(KERNEL, 1), (b"\n", 1)] + run(b" ", 3 * GIB) + [(TAIL, 1)]
    write_pieces(path, pieces, True, level=6)
    return "inflates to 3.2 GiB"


def seed_gpt(path):
    """reference: the real torch.profiler trace torch-gpt-with-stack (H100, with_stack),
    unmodified"""
    with open(SEED, "rb") as src, open(path, "wb") as dst:
        dst.write(src.read())


_BIG_CACHE = {}


def big_json(target):
    """JSON text of the seed's events repeated until the JSON passes TARGET bytes: each copy's
    times shifted past the previous copy's end, its correlation and External ids past the
    previous copy's largest, as a longer run of the same program would record them."""
    if target in _BIG_CACHE:
        return _BIG_CACHE[target]
    text = gzip.decompress(open(SEED, "rb").read())
    start = text.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    end = text.rindex(b"]")
    events = text[start:end].rstrip().rstrip(b",")
    head, tail = text[:start], text[end:]
    times = [float(m) for m in re.findall(rb'"ts": ([0-9.]+)', events)]
    span = max(times) - min(times) + 1000.0
    ids = [int(m) for m in re.findall(rb'"(?:correlation|External id)": ([0-9]+)', events)]
    step = max(ids) + 1
    ts_re = re.compile(rb'("ts": )([0-9]+)(\.[0-9]+)?')
    id_re = re.compile(rb'("(?:correlation|External id)": )([0-9]+)')
    parts = [head, events]
    size = len(head) + len(events) + len(tail)
    copy = 1
    while size < target:
        dt = int(span * copy)
        di = step * copy
        shifted = ts_re.sub(lambda m: m.group(1) + str(int(m.group(2)) + dt).encode() +
                            (m.group(3) or b""), events)
        shifted = id_re.sub(lambda m: m.group(1) + str(int(m.group(2)) + di).encode(), shifted)
        parts.append(b",\n")
        parts.append(shifted)
        size += len(shifted) + 2
        copy += 1
    parts.append(tail)
    data = b"".join(parts)
    _BIG_CACHE[target] = data
    return data


def big_gz(path, target):
    data = big_json(target)
    with open(path, "wb") as f:
        f.write(gzip.compress(data, 9))
    return f"inflates to {len(data):,} bytes"


def big_plain(path, target):
    with open(path, "wb") as f:
        f.write(big_json(target))


def main():
    parser = argparse.ArgumentParser(description="Write JSON bombs and real-shaped traces for "
                                     "bench/run_json_bombs.sh.")
    parser.add_argument("outdir")
    parser.add_argument("--only", nargs="*", default=[], metavar="SUBSTRING",
                        help="only the cases whose file name contains one of these")
    parser.add_argument("--big-mb", type=int, default=400,
                        help="size of the real-shaped traces' JSON, MB (default 400)")
    args = parser.parse_args()
    if not os.path.isfile(SEED):
        sys.exit(f"json_bombs.py: seed trace missing: {SEED}")
    os.makedirs(args.outdir, exist_ok=True)
    big = args.big_mb * 1000 * 1000
    cases = [
        ("seed-gpt.pt.trace.json.gz", seed_gpt),
        (f"real-shaped-{args.big_mb}mb.json.gz", lambda p: big_gz(p, big)),
        (f"real-shaped-{args.big_mb}mb.json", lambda p: big_plain(p, big)),
        ("ws-4.5g.json.gz", ws_4_5g_gz),
        ("ws-kernel-3.5g.json.gz", ws_kernel_3_5g_gz),
        ("ws-kernel-3.5g.json", ws_kernel_3_5g_json),
        ("zeros-3g.json.gz", zeros_3g_gz),
        ("zeros-1g.json", zeros_1g_json),
        ("diluted-3g.json.gz", diluted_3g_gz),
    ]
    real_shaped = (f"reference: the events of torch-gpt-with-stack repeated (times and ids "
                   f"shifted) to a JSON of about {args.big_mb} MB")
    manifest = []
    for name, function in cases:
        if args.only and not any(s in name for s in args.only):
            continue
        path = os.path.join(args.outdir, name)
        t0 = time.monotonic()
        note = function(path)
        seconds = time.monotonic() - t0
        size = os.path.getsize(path)
        if name.startswith("real-shaped"):
            what = real_shaped + (", gzipped (level 9)" if name.endswith(".gz") else "")
        else:
            what = " ".join(function.__doc__.split())
        if note:
            what += f" [{note}]"
        print(f"{name:28} {size:>14,} B  {what}  ({seconds:.1f} s to write)", flush=True)
        manifest.append(f"{name}\t{size}\t{what}")
    with open(os.path.join(args.outdir, "cases.tsv"), "w") as f:
        f.write("\n".join(manifest) + "\n")


if __name__ == "__main__":
    main()
