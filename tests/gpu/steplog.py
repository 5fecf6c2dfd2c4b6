"""Step times for cost measurements, shared by torch_gpt.py and torch_cnn.py (issue 28).

StepLog(path, toggle_trampolines_ms) records each step's CLOCK_MONOTONIC start and end
(time.monotonic_ns) and writes them to path, one "start end" line a step, for
bench/sampling_toggle_cost.py. With toggle_trampolines_ms, CPython's perf trampolines (what
warpline-record's CPU sampling turns on with PYTHONPERFSUPPORT=1 to name Python functions) are
switched on while floor(CLOCK_MONOTONIC / ms) is even and off otherwise, at the start of a step,
and the switches are written to path + ".toggles" in warpline-record's toggle-log format, so that
one run compares its steps with and without them.
"""
import argparse
import sys
import time


class StepLog:
    def __init__(self, path=None, toggle_trampolines_ms=0):
        self.path, self.spans, self.toggles, self.state = path, [], [], None
        self.period = toggle_trampolines_ms * 1_000_000
        if self.period and not hasattr(sys, "activate_stack_trampoline"):
            sys.exit("steplog: this Python has no perf trampolines (CPython 3.12+ on Linux)")

    @classmethod
    def from_args(cls, argv):
        """From the loop's remaining arguments: --step-log FILE, --toggle-trampolines MS."""
        p = argparse.ArgumentParser(prog="steplog options")
        p.add_argument("--step-log", metavar="FILE", help="write each step's CLOCK_MONOTONIC "
                       "start and end (ns) there, one line a step")
        p.add_argument("--toggle-trampolines", metavar="MS", type=int, default=0,
                       help="switch CPython's perf trampolines on and off in turns of MS")
        a = p.parse_args(argv)
        return cls(a.step_log, a.toggle_trampolines)

    def begin(self):
        if self.period:
            now = time.monotonic_ns()
            on = (now // self.period) % 2 == 0
            if on != self.state:
                if on:
                    sys.activate_stack_trampoline("perf")
                else:
                    sys.deactivate_stack_trampoline()
                self.toggles.append((now, time.monotonic_ns(), on))
                self.state = on
        self.start = time.monotonic_ns()

    def end(self):
        end = time.monotonic_ns()
        self.spans.append((self.start, end))
        return (end - self.start) / 1e6

    def write(self):
        if not self.path:
            return
        with open(self.path, "w") as f:
            f.writelines(f"{a} {b}\n" for a, b in self.spans)
        if self.period:
            with open(self.path + ".toggles", "w") as f:
                f.writelines(f"{b} {e} {'on' if on else 'off'}\n" for b, e, on in self.toggles)
