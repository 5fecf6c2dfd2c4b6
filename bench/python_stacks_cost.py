"""What --python-stacks costs per CUDA call, without a GPU: PythonStacks::capture()
(collector/pythonstacks.cpp, built into the python_stacks test's probe library) called through
ctypes.CDLL, which releases the GIL as PyTorch does around its C++ work, from a model-like call
depth with fresh frames each time, against the same call to a function that does nothing.

    python3 bench/python_stacks_cost.py build/tests/libwarpline_pythonstacks_probe.so [more.so ...]

Several probe libraries (say one built from an older commit) are timed side by side, alternating.
"""
import ctypes
import statistics
import sys
import time

CALLS = 200_000
DEPTH = 12  # frames under the capture, about a PyTorch module's forward inside a training loop


def nest(depth, fn, n):
    if depth:
        return nest(depth - 1, fn, n)
    for _ in range(n):
        fn()


class Layer:
    def __init__(self, fn):
        self.fn = fn

    def forward(self, x):
        # Launches from several lines, as a module's forward makes them.
        self.fn()
        x += 1
        self.fn()
        return x + 1


def model_step(layers):
    x = 0
    for layer in layers:
        x = layer.forward(x)
    return x


def time_per_call(fn, inner):
    start = time.perf_counter_ns()
    if inner:
        nest(DEPTH, fn, CALLS)
    else:
        layers = [Layer(fn) for _ in range(8)]
        steps = CALLS // 16

        def loop():
            for _ in range(steps):
                model_step(layers)

        nest(DEPTH, loop, 1)
    return (time.perf_counter_ns() - start) / CALLS


def main():
    libs = [ctypes.CDLL(path) for path in sys.argv[1:]]
    if not libs:
        raise SystemExit(__doc__)
    noop = libs[0].warpline_probe_noop
    captures = [lib.warpline_probe_capture_id for lib in libs]
    for capture in captures:
        if capture() == 0:
            raise SystemExit("the probe library read no stack")
    print(f"Python {sys.version.split()[0]}, {CALLS} calls per run, {DEPTH} frames deep")
    for label, inner in (("same frames", True), ("fresh frames (module forward)", False)):
        results = {name: [] for name in ["no-op"] + sys.argv[1:]}
        for _ in range(5):
            results["no-op"].append(time_per_call(noop, inner))
            for path, capture in zip(sys.argv[1:], captures):
                results[path].append(time_per_call(capture, inner))
        base = statistics.median(results["no-op"])
        print(f"{label}: no-op call {base:.0f} ns")
        for path in sys.argv[1:]:
            ns = statistics.median(results[path])
            print(f"  {path}: {ns:.0f} ns per call, capture {ns - base:.0f} ns")


main()
