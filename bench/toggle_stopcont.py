#!/usr/bin/env python3
"""Runs a sampler command and pauses it in turns, for bench/sampling_toggle_cost.py (issue 28).

  bench/toggle_stopcont.py --period-ms 500 --log TOGGLE_LOG -- py-spy record --nonblocking ... -- PROGRAM

The sampler (py-spy, which reads the program's memory from outside and does not pause it with
--nonblocking) runs while floor(CLOCK_MONOTONIC / period) is even and is stopped with SIGSTOP
otherwise, so that the program's steps with and without it are compared inside one run, as
warpline-record's WARPLINE_CPU_SAMPLING_TUNING=toggle=MS does for Warpline's sampler. Writes one
line a toggle, "begin_ns end_ns on|off", the format warpline-record writes. Exits with the
command's status.
"""
import argparse
import os
import signal
import subprocess
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--period-ms", type=int, default=500)
    p.add_argument("--log", required=True)
    p.add_argument("--settle-s", type=float, default=1.0, help="no toggle before this (start-up)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        sys.exit("toggle_stopcont: no command")
    period = a.period_ms * 1_000_000
    child = subprocess.Popen(command)
    start = time.monotonic_ns() + int(a.settle_s * 1e9)
    toggles, state = [], None
    try:
        while child.poll() is None:
            now = time.monotonic_ns()
            time.sleep(max(0.0, ((now // period + 1) * period - now) / 1e9))
            now = time.monotonic_ns()
            on = (now // period) % 2 == 0
            if now < start or on == state or child.poll() is not None:
                continue
            os.kill(child.pid, signal.SIGCONT if on else signal.SIGSTOP)
            toggles.append((now, time.monotonic_ns(), on))
            state = on
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
    code = child.wait()
    with open(a.log, "w") as f:
        f.writelines(f"{b} {e} {'on' if on else 'off'}\n" for b, e, on in toggles)
    sys.exit(code)


if __name__ == "__main__":
    main()
