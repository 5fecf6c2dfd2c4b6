#!/usr/bin/env python3
"""Mutation check of Warpline's analyses (issue 33): do the tests fail when the product is wrong?

Applies each mutation of tests/mutation/mutations.txt alone to the source tree, builds
incrementally, runs the test suite, and reports which mutations no test caught:

  caught     the build succeeded and at least one test failed (or timed out)
  survived   the build succeeded and every test passed
  invalid    the mutated tree did not build: the mutation list needs fixing

The unmutated tree is built and tested first; a failure there stops the run (every mutant would
look caught). Each file is restored after its mutant, also on Ctrl-C or SIGTERM; after a SIGKILL
the next run restores it from the backup it left in BUILD/mutation/.

Usage (from the repository root, after a build of BUILD, `make mutation` does this):
  tests/mutation/run.py [--build-dir build] [--only ID ...] [--check]

Writes BUILD/mutation-report.md (the table) and BUILD/mutation/ID.log (each mutant's build and
test output). Exit status: 0 when the score (caught / valid mutants) reaches --min-score, 1 when
it does not, 2 when the list or the tree is wrong (an invalid mutant, a failing baseline).
"""

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_LIST = Path(__file__).resolve().parent / "mutations.txt"
FIELDS = {"file", "what", "find", "replace", "tests", "accepted"}


@dataclass
class Mutation:
    id: str
    line: int
    file: str = ""
    what: str = ""
    find: str = ""
    replace: str = ""
    tests: list = field(default_factory=list)
    accepted: str = ""


@dataclass
class Result:
    mutation: Mutation
    status: str = ""  # caught, survived, invalid
    caught_by: list = field(default_factory=list)
    seconds: float = 0.0
    build_seconds: float = 0.0


class Interrupted(BaseException):
    pass


def fail(message):
    print(f"mutation: {message}", file=sys.stderr)
    sys.exit(2)


def parse_list(path):
    mutations, current = [], None
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if m := re.fullmatch(r"\[([a-z0-9-]+)\]", line):
            current = Mutation(m.group(1), number)
            mutations.append(current)
            continue
        m = re.fullmatch(r"([a-z]+) = ?(.*)", line)
        if not m or current is None or m.group(1) not in FIELDS:
            fail(f"{path}:{number}: not a `[id]` or `key = value` line: {line}")
        key, value = m.group(1), m.group(2)
        if key in ("find", "replace"):
            value = value.replace("\\n", "\n")
        if key == "tests":
            value = value.split()
        setattr(current, key, value)
    return mutations


def validate(mutations, known_tests):
    problems, seen = [], set()
    for m in mutations:
        where = f"[{m.id}] (line {m.line})"
        if m.id in seen:
            problems.append(f"{where}: the id is used twice")
        seen.add(m.id)
        for key in ("file", "what", "find"):
            if not getattr(m, key):
                problems.append(f"{where}: no `{key}`")
        if m.find == m.replace:
            problems.append(f"{where}: `replace` is the same as `find`")
        path = ROOT / m.file
        if m.file and not path.is_file():
            problems.append(f"{where}: no file {m.file}")
        elif m.file and m.find:
            count = path.read_text().count(m.find)
            if count != 1:
                problems.append(f"{where}: `find` occurs {count} times in {m.file}, not once")
        for t in m.tests:
            if known_tests is not None and t not in known_tests:
                problems.append(f"{where}: no test named {t} (ctest -N)")
    if problems:
        fail("the mutation list is wrong:\n  " + "\n  ".join(problems))


class Tree:
    """The source files a mutant changes, restored on every way out; a backup in `state` covers a
    run that was killed outright."""

    def __init__(self, state):
        self.state = state
        self.marker = state / "applied.json"
        self.original = {}

    def recover(self):
        if not self.marker.exists():
            return
        applied = json.loads(self.marker.read_text())
        for rel, backup in applied.items():
            (ROOT / rel).write_bytes(Path(backup).read_bytes())
            print(f"mutation: restored {rel}, left mutated by a run that was killed")
        self.marker.unlink()

    def apply(self, m):
        path = ROOT / m.file
        text = path.read_bytes()
        backup = self.state / ("backup-" + m.file.replace("/", "_"))
        backup.write_bytes(text)
        self.original[m.file] = text
        self.marker.write_text(json.dumps({m.file: str(backup)}))
        path.write_bytes(text.decode().replace(m.find, m.replace, 1).encode())

    def restore(self):
        for rel, text in self.original.items():
            (ROOT / rel).write_bytes(text)
        self.original.clear()
        if self.marker.exists():
            self.marker.unlink()


def run(cmd, log, timeout=None):
    log.write(f"$ {shlex.join(cmd)}\n")
    log.flush()
    begin = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace", timeout=timeout)
    log.write(proc.stdout)
    log.flush()
    return proc.returncode, proc.stdout, time.monotonic() - begin


def failed_tests(output):
    names = []
    after = False
    for line in output.splitlines():
        if line.startswith("The following tests FAILED"):
            after = True
        elif after and (m := re.match(r"\s*\d+ - (\S+) \((.*)\)", line)):
            names.append(m.group(1) if m.group(2) == "Failed" else f"{m.group(1)} ({m.group(2)})")
    return names


class Suite:
    def __init__(self, args):
        self.build = args.build_dir
        self.base = ["ctest", "--test-dir", str(self.build), "--timeout", str(args.timeout),
                     "--parallel", str(args.jobs)]
        if args.exclude_labels:
            self.base += ["-LE", args.exclude_labels]
        self.exclude = args.exclude_tests

    def known(self):
        proc = subprocess.run(["ctest", "--test-dir", str(self.build), "-N"], cwd=ROOT,
                              capture_output=True, text=True)
        return set(re.findall(r"Test +#\d+: (\S+)", proc.stdout))

    def select(self, only=None, skip=()):
        exclude = [self.exclude] if self.exclude else []
        exclude += [re.escape(t) for t in skip]
        cmd = list(self.base)
        if only:
            cmd += ["-R", "^(" + "|".join(re.escape(t) for t in only) + ")$"]
        if exclude:
            cmd += ["-E", "^(" + "|".join(exclude) + ")$"]
        return cmd

    def run(self, log, first=(), stop=True):
        """Runs `first`, then (if they pass) the rest. Returns (passed, failed test names)."""
        stop_flag = ["--stop-on-failure"] if stop else []
        if first:
            rc, out, _ = run(self.select(only=first) + stop_flag, log)
            failed = failed_tests(out)
            if rc != 0:
                return False, failed or [f"ctest exit {rc}"]
        rc, out, _ = run(self.select(skip=first) + stop_flag, log)
        if rc != 0:
            return False, failed_tests(out) or [f"ctest exit {rc}"]
        return True, []


def commit_text():
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return head + (" (with uncommitted changes)" if dirty else "")


def write_report(path, args, results, suite, started, baseline_seconds, total_seconds):
    valid = [r for r in results if r.status != "invalid"]
    caught = [r for r in valid if r.status == "caught"]
    survived = [r for r in valid if r.status == "survived"]
    score = 100.0 * len(caught) / len(valid) if valid else 0.0
    lines = [
        "# Mutation check",
        "",
        f"- date: {started:%Y-%m-%d %H:%M}, commit {commit_text()}, build dir {args.build_dir}",
        f"- tests: `{shlex.join(suite.select() + ['--stop-on-failure'])}`, each mutant's "
        "likely tests first",
        f"- baseline (unmutated build and tests): {baseline_seconds:.0f} s; whole run "
        f"{total_seconds / 60:.1f} min",
        f"- **score: {len(caught)} / {len(valid)} caught ({score:.0f}%)**, {len(survived)} "
        f"survived, {len(results) - len(valid)} invalid",
        "",
        "| id | mutation | result | caught by | seconds |",
        "|---|---|---|---|---|",
    ]
    for r in results:
        by = ", ".join(r.caught_by)
        lines.append(f"| {r.mutation.id} | {r.mutation.what} | {r.status} | {by} | "
                     f"{r.seconds:.0f} |")
    if survived:
        lines += ["", "## Survivors", ""]
        for r in survived:
            why = r.mutation.accepted or "NOT ACCEPTED: add a test that catches it"
            lines.append(f"- {r.mutation.id} ({r.mutation.file}): {r.mutation.what}. {why}")
    path.write_text("\n".join(lines) + "\n")
    return len(caught), len(valid), score


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", type=Path, default=ROOT / "build")
    parser.add_argument("--list", type=Path, default=DEFAULT_LIST)
    parser.add_argument("--only", nargs="+", metavar="ID", help="run these mutations alone")
    parser.add_argument("--check", action="store_true",
                        help="check the list (each `find` occurs once) and stop")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="ctest --parallel")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a test may run")
    parser.add_argument("--exclude-labels", default="gpu|network",
                        help="ctest -LE: the GPU tests need a GPU, network ones the network")
    parser.add_argument("--exclude-tests", default="tst_package",
                        help="ctest -E: tst_package checks the .deb of `make package`, which a "
                        "mutant does not rebuild")
    parser.add_argument("--min-score", type=float, default=90.0)
    parser.add_argument("--report", type=Path, help="default: BUILD/mutation-report.md")
    args = parser.parse_args()
    args.build_dir = args.build_dir.resolve()
    report = args.report or args.build_dir / "mutation-report.md"

    mutations = parse_list(args.list)
    if args.only:
        unknown = set(args.only) - {m.id for m in mutations}
        if unknown:
            fail("no mutation named " + ", ".join(sorted(unknown)))
        mutations = [m for m in mutations if m.id in args.only]
    suite = Suite(args)
    have_build = (args.build_dir / "build.ninja").exists()
    state = args.build_dir / "mutation"
    state.mkdir(parents=True, exist_ok=True)
    tree = Tree(state)
    tree.recover()
    validate(mutations, suite.known() if have_build else None)
    if args.check:
        print(f"mutation: {len(mutations)} mutations, each `find` occurs once in its file")
        return 0
    if not have_build:
        fail(f"no build in {args.build_dir}: configure and build it first (make build)")

    def interrupt(signum, _frame):
        raise Interrupted(signal.Signals(signum).name)

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupt)

    started = datetime.datetime.now()
    begin = time.monotonic()
    results = []
    try:
        with open(state / "baseline.log", "w") as log:
            print("mutation: baseline: building and testing the unmutated tree ...", flush=True)
            rc, _, _ = run(["ninja", "-C", str(args.build_dir)], log)
            if rc != 0:
                fail(f"the unmutated tree does not build: see {state / 'baseline.log'}")
            ok, failed = suite.run(log, stop=False)
            if not ok:
                fail("the unmutated tree fails tests (" + ", ".join(failed) +
                     f"): fix them first; see {state / 'baseline.log'}")
        baseline_seconds = time.monotonic() - begin
        print(f"mutation: baseline passes ({baseline_seconds:.0f} s); {len(mutations)} mutants",
              flush=True)
        for k, m in enumerate(mutations, 1):
            r = Result(m)
            t0 = time.monotonic()
            with open(state / f"{m.id}.log", "w") as log:
                tree.apply(m)
                try:
                    rc, _, r.build_seconds = run(["ninja", "-C", str(args.build_dir)], log)
                    if rc != 0:
                        r.status = "invalid"
                    else:
                        ok, r.caught_by = suite.run(log, first=m.tests)
                        r.status = "survived" if ok else "caught"
                finally:
                    tree.restore()
            r.seconds = time.monotonic() - t0
            results.append(r)
            print(f"mutation: [{k}/{len(mutations)}] {m.id}: {r.status}"
                  f"{' by ' + ', '.join(r.caught_by) if r.caught_by else ''} "
                  f"({r.seconds:.0f} s)", flush=True)
            write_report(report, args, results, suite, started, baseline_seconds,
                         time.monotonic() - begin)
    except Interrupted as e:
        tree.restore()
        print(f"mutation: {e}: stopped; the tree is restored", file=sys.stderr)
        if results:
            print(f"mutation: the mutants so far are in {report}", file=sys.stderr)
        return 130
    finally:
        tree.restore()

    # Leave the build matching the tree again.
    with open(state / "final.log", "w") as log:
        run(["ninja", "-C", str(args.build_dir)], log)
    caught, valid, score = write_report(report, args, results, suite, started, baseline_seconds,
                                        time.monotonic() - begin)
    invalid = [r.mutation.id for r in results if r.status == "invalid"]
    survivors = [r.mutation for r in results if r.status == "survived"]
    print(f"mutation: score {caught} / {valid} caught ({score:.0f}%); report: {report}")
    for m in survivors:
        print(f"mutation: survived: {m.id}: {m.what}" +
              (f" (accepted: {m.accepted})" if m.accepted else " (NOT ACCEPTED)"))
    if invalid:
        print("mutation: invalid (does not build; fix the list): " + ", ".join(invalid))
        return 2
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    sys.exit(main())
