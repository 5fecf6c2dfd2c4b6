"""PythonStacks (collector/pythonstacks.h) inside a real CPython: the stack of the calling thread,
innermost first, with file, line and function; the same stack gives the same id (and is handed to
the writer once); a thread without the GIL gets none; a thread with no Python code on it gets the
stack of the thread waiting in torch/autograd, as PyTorch's backward does. Run by ctest with the probe library's path,
under every CPython the build machine has (tests/collector.cmake): before 3.9 the reader declines
with a reason, and before 3.11 functions are named without their class (no co_qualname).
"""
import ctypes
import sys
import threading



def check(condition, detail=None):
    """What assert does, but kept under python3 -O and PYTHONOPTIMIZE, which strip assert: a check
    that does not hold fails the test, naming its line."""
    if not condition:
        line = sys._getframe(1).f_lineno
        raise SystemExit(f"python stacks: check failed at line {line}" +
                         ("" if detail is None else f": {detail!r}"))


lib = ctypes.PyDLL(sys.argv[1])  # PyDLL: the GIL stays held during the call
lib.warpline_probe_capture.restype = ctypes.c_char_p


def capture():
    return lib.warpline_probe_capture().decode()  # LINE_CAPTURE


class Model:
    def forward(self):
        return capture()  # LINE_FORWARD


def outer():
    return Model().forward()  # LINE_OUTER


def line_of(tag):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if "# " + tag in text and "def line_of" not in text:
                return number
    raise SystemExit("no line tagged " + tag)


if sys.version_info < (3, 9):
    check(capture() == "0|this Python is older than 3.9 (PyThreadState_GetFrame missing)")
    print("python stacks: declined, as expected,", sys.version.split()[0])
    sys.exit(0)

first, again = [outer() for _ in range(2)]  # one line: the same stack twice
chain, frames = first.split("|", 1)
check(chain != "0", first)
frames = [f for f in frames.split(";") if f]
here = __file__
check(frames[0] == f"capture {here}:{line_of('LINE_CAPTURE')}", frames[0])
method = "Model.forward" if sys.version_info >= (3, 11) else "forward"
check(frames[1] == f"{method} {here}:{line_of('LINE_FORWARD')}", frames[1])
check(frames[2] == f"outer {here}:{line_of('LINE_OUTER')}", frames[2])
# The comprehension is a frame of its own before Python 3.12, inlined since.
check(frames[3].split()[0] in ("<listcomp>", "<module>"), frames[3])
check(frames[-1].startswith(f"<module> {here}:"), frames[-1])
check(again == chain + "|", again)  # the same stack: the same id, not handed over twice


def two_lines():
    return capture(), capture()  # LINE_TWO_A
    # (one line, two calls: two instructions, one line, one stack)


def two_calls():
    a = capture()  # LINE_A
    b = capture()  # LINE_B
    return a, b


# Lines are looked up by instruction once seen: the second pass must give the same stacks, each
# call its own.
(a, b), (a2, b2) = two_calls(), two_calls()
check(f"two_calls {here}:{line_of('LINE_A')}" in a and f"two_calls {here}:{line_of('LINE_B')}" in b)
check(a2 == a.split("|")[0] + "|" and b2 == b.split("|")[0] + "|", (a, b, a2, b2))
x, y = two_lines()
check(f"two_lines {here}:{line_of('LINE_TWO_A')}" in x and y == x.split("|")[0] + "|", (x, y))
other = capture()  # LINE_TOP
check(other.split("|")[0] not in ("0", chain), other)

# A call made with the GIL released (ctypes.CDLL, as PyTorch's C++ code runs) still gets its
# stack: the reader takes the GIL back for the walk. A thread without a Python thread state gets none.
free = ctypes.CDLL(sys.argv[1])
free.warpline_probe_capture.restype = ctypes.c_char_p
released = free.warpline_probe_capture().decode()  # LINE_RELEASED
check(released.split("|")[0] != "0", released)
check(f"<module> {here}:{line_of('LINE_RELEASED')}" in released, released)
free.warpline_probe_capture_cpp_thread.restype = ctypes.c_char_p
check(free.warpline_probe_capture_cpp_thread().decode() == "0|", "a C++ thread has no stack")

# PyTorch's autograd threads: a thread state, no Python code. Alone, such a thread gets no stack;
# while another thread waits in torch/autograd (loss.backward()), it gets that thread's stack under
# "<autograd backward>". The waiting function lives in a file under torch/autograd/, made here.
free.warpline_probe_capture_autograd_thread.restype = ctypes.c_char_p
alone = free.warpline_probe_capture_autograd_thread().decode()
check(alone == "0|", alone)
import os
import tempfile

root = tempfile.mkdtemp()
os.makedirs(os.path.join(root, "torch", "autograd"))
engine = os.path.join(root, "torch", "autograd", "graph.py")
with open(engine, "w") as f:
    f.write("def _engine_run_backward(run):\n    return run()\n")
namespace = {}
exec(compile(open(engine).read(), engine, "exec"), namespace)


def backward():
    return namespace["_engine_run_backward"](free.warpline_probe_capture_autograd_thread)  # LINE_BACKWARD


waited = backward().decode().split("|")  # LINE_LOSS
check(waited[0] != "0", waited)
got = [f for f in waited[1].split(";") if f]
check(got[0] == "<autograd backward> :0", got)
check(got[1] == f"_engine_run_backward {engine}:2", got)
check(got[2] == f"backward {here}:{line_of('LINE_BACKWARD')}", got)
check(got[3] == f"<module> {here}:{line_of('LINE_LOSS')}", got)
os.remove(engine)
print("python stacks: ok,", len(frames), "frames,", sys.version.split()[0])
