#!/usr/bin/env python3
"""What CPU sampling costs a training step, measured inside one run (issue 28).

  bench/sampling_toggle_cost.py STEP_LOG TOGGLE_LOG [--skip 0.1] [--margin-ms 2] [--label NAME]

The run is recorded with WARPLINE_CPU_SAMPLING_TUNING=toggle=MS and
WARPLINE_CPU_SAMPLING_TOGGLE_LOG=TOGGLE_LOG, so the recorder turns sampling on and off in turns
of MS milliseconds (collector/cpusampling.h); the program writes each step's CLOCK_MONOTONIC start
and end to STEP_LOG (tests/gpu/torch_gpt.py and torch_cnn.py, --step-log). The spread between
runs of a PyTorch loop on the GPU machine (15-30%) hides a cost of a few percent; the spread
between neighbouring half-seconds of one run does not.

A step counts for a turn when it lies inside it, at least --margin-ms from either toggle (the
ioctls that toggle interrupt the program's threads). The first --skip of the steps (start-up,
warm-up) are left out. Each turn with sampling on is compared with the mean of the two off turns
either side of it (a drift linear over the three cancels), each turn's figure the 10%-trimmed mean
of its steps: the mean of those differences is the cost, with two standard errors and the share of
on turns that were slower. Prints one line of figures and, with --turns, each turn.
"""
import argparse
import bisect
import statistics
import sys


def read_pairs(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 2:
                rows.append(parts)
    return rows


def trimmed(values, cut=0.1):
    v = sorted(values)
    k = int(len(v) * cut)
    return statistics.fmean(v[k:len(v) - k] if len(v) > 2 * k else v)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("step_log")
    p.add_argument("toggle_log")
    p.add_argument("--skip", type=float, default=0.1, help="share of the first steps left out")
    p.add_argument("--margin-ms", type=float, default=2.0)
    p.add_argument("--label", default="")
    p.add_argument("--turns", action="store_true", help="print each turn")
    a = p.parse_args()

    steps = [(int(s), int(e)) for s, e, *_ in read_pairs(a.step_log)]
    toggles = [(int(b), int(e), state == "on") for b, e, state in read_pairs(a.toggle_log)]
    if len(steps) < 20 or len(toggles) < 3:
        sys.exit(f"sampling_toggle_cost: too little data ({len(steps)} steps, {len(toggles)} toggles)")
    steps = steps[int(len(steps) * a.skip):]
    margin = int(a.margin_ms * 1e6)

    # Turn i runs from toggle i's end to toggle i+1's begin, in toggle i's state.
    turns = [(toggles[i][1] + margin, toggles[i + 1][0] - margin, toggles[i][2], [])
             for i in range(len(toggles) - 1)]
    starts = [t[0] for t in turns]
    for start, end in steps:
        i = bisect.bisect_right(starts, start) - 1
        if i >= 0 and end <= turns[i][1]:
            turns[i][3].append((end - start) / 1e6)

    on = [ms for t in turns if t[2] for ms in t[3]]
    off = [ms for t in turns if not t[2] for ms in t[3]]
    # Each on turn against the mean of the off turns either side of it, which cancels a drift
    # that is linear over the three; a turn's figure is its steps' 10%-trimmed mean.
    diffs = []
    for before, now, after in zip(turns, turns[1:], turns[2:]):
        if now[2] and not before[2] and not after[2] and min(len(before[3]), len(now[3]), len(after[3])) >= 5:
            diffs.append(trimmed(now[3]) - (trimmed(before[3]) + trimmed(after[3])) / 2)
    if not on or not off or len(diffs) < 2:
        sys.exit("sampling_toggle_cost: fewer than two on turns between off turns hold steps")
    off_mean = trimmed(off)
    cost = statistics.fmean(diffs)
    error = 2 * statistics.stdev(diffs) / len(diffs) ** 0.5
    slower = sum(d > 0 for d in diffs)
    label = f"{a.label}: " if a.label else ""
    print(f"{label}steps on {len(on)} off {len(off)}; median step on {statistics.median(on):.3f} ms, "
          f"off {statistics.median(off):.3f} ms; trimmed mean on {trimmed(on):.3f}, off {off_mean:.3f}; "
          f"{len(diffs)} on turns against their neighbours: cost {cost:+.3f} ms +- {error:.3f} "
          f"({100 * cost / off_mean:+.2f}% +- {100 * error / off_mean:.2f}%), "
          f"median {statistics.median(diffs):+.3f} ms, on slower in {slower} of {len(diffs)}")
    if a.turns:
        for begin, end, state, ms in turns:
            if ms:
                print(f"  {begin} {'on ' if state else 'off'} {len(ms):4d} steps, median {statistics.median(ms):.3f} ms")


if __name__ == "__main__":
    main()
