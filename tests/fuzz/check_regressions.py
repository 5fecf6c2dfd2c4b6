"""Every regression input of the fuzz targets still reproduces the condition it was kept for.

Replaying an input (`TARGET -runs=0 DIR`, ctest's *_regressions) only shows that it no longer
crashes; an input whose edits stopped applying, or whose file the loader now refuses before the
code it once broke, passes that replay while it tests nothing. This check runs each input once with
WARPLINE_FUZZ_VERBOSE=1 and matches what the run says, and what the edited trace holds, against
tests/fuzz/regressions/conditions.txt:

    TARGET/INPUT  out  TEXT    the run prints a line containing TEXT
    TARGET/INPUT  re   REGEX   the run prints a line REGEX matches (Python re.search)
    TARGET/INPUT  sql  QUERY   on the trace the run loaded (fuzz_trace_sql: the edited trace, kept
                               through WARPLINE_FUZZ_KEEP; fuzz_trace: the input itself), the first
                               value QUERY returns is true

An input without a condition fails, as does a condition naming no input. A fuzz_trace_sql input
made from a script (regressions/scripts/fuzz_trace_sql/INPUT, WARPLINE_FUZZ_SCRIPT) must be the
bytes that script makes, so that what it does can be read.

    check_regressions.py FUZZ_TARGET_DIR REGRESSIONS_DIR
"""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

TARGETS = ("fuzz_trace", "fuzz_trace_sql", "fuzz_pagereader")


def main():
    bin_dir, regressions = sys.argv[1], sys.argv[2]
    conditions = {}
    problems = []
    with open(os.path.join(regressions, "conditions.txt")) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) != 3 or parts[1] not in ("out", "re", "sql"):
                problems.append(f"conditions.txt:{number}: not INPUT out|re|sql TEXT: {line}")
                continue
            conditions.setdefault(parts[0], []).append((parts[1], parts[2]))
    inputs = []
    for target in TARGETS:
        folder = os.path.join(regressions, target)
        if os.path.isdir(folder):
            inputs += [f"{target}/{name}" for name in sorted(os.listdir(folder))]
    for name in inputs:
        if name not in conditions:
            problems.append(f"{name}: no condition in conditions.txt: what was it kept for?")
    for name in conditions:
        if name not in inputs:
            problems.append(f"conditions.txt names {name}, which is not there")

    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in inputs:
            if name not in conditions:
                continue
            target, input_name = name.split("/", 1)
            path = os.path.join(regressions, name)
            kept = os.path.join(tmp, "edited.warpline")
            if os.path.exists(kept):
                os.remove(kept)
            env = dict(os.environ, WARPLINE_FUZZ_VERBOSE="1", WARPLINE_FUZZ_KEEP=kept)
            run = subprocess.run([os.path.join(bin_dir, target), "-runs=0", path], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
            output = run.stdout.decode("utf-8", "replace")
            failed = []
            if run.returncode != 0:
                failed.append(f"exit {run.returncode}")
            trace = path if target == "fuzz_trace" else kept
            for kind, text in conditions[name]:
                if kind == "out":
                    if not any(text in line for line in output.splitlines()):
                        failed.append(f"no line contains: {text}")
                    continue
                if kind == "re":
                    if not any(re.search(text, line) for line in output.splitlines()):
                        failed.append(f"no line matches: {text}")
                    continue
                try:
                    db = sqlite3.connect(f"file:{trace}?mode=ro", uri=True)
                    row = db.execute(text).fetchone()
                    db.close()
                    if not row or not row[0]:
                        failed.append(f"false: {text}")
                except sqlite3.Error as e:
                    failed.append(f"{text}: {e}")
            script = os.path.join(regressions, "scripts", target, input_name)
            if os.path.exists(script):
                made = os.path.join(tmp, "made")
                env = dict(os.environ, WARPLINE_FUZZ_SCRIPT=made)
                subprocess.run([os.path.join(bin_dir, target), "-runs=0", script], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
                with open(path, "rb") as a:
                    same = os.path.exists(made) and open(made, "rb").read() == a.read()
                if not same:
                    failed.append(f"its script {script} no longer makes these bytes")
            checked += 1
            if failed:
                problems.append(f"{name}: " + "; ".join(failed) + "\n--- its run said:\n" +
                                "\n".join(l for l in output.splitlines()
                                          if l.startswith(("load:", "warning:", "fact:", "pages:",
                                                           "base ", "  ", "fuzz")))[-6000:])
            else:
                print(f"ok   {name}: {len(conditions[name])} conditions")
    for p in problems:
        print("FAIL " + p)
    print(f"{checked} inputs run, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
