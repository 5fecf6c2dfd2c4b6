"""PythonStacks (collector/pythonstacks.h) inside a real CPython: the stack of the calling thread,
innermost first, with file, line and function; the same stack gives the same id (and is handed to
the writer once); a thread without the GIL gets none. Run by ctest with the probe library's path.
"""
import ctypes
import sys
import threading

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


first, again = [outer() for _ in range(2)]  # one line: the same stack twice
chain, frames = first.split("|", 1)
assert chain != "0", first
frames = [f for f in frames.split(";") if f]
here = __file__
assert frames[0] == f"capture {here}:{line_of('LINE_CAPTURE')}", frames[0]
assert frames[1] == f"Model.forward {here}:{line_of('LINE_FORWARD')}", frames[1]
assert frames[2] == f"outer {here}:{line_of('LINE_OUTER')}", frames[2]
# The comprehension is a frame of its own before Python 3.12, inlined since.
assert frames[3].split()[0] in ("<listcomp>", "<module>"), frames[3]
assert frames[-1].startswith(f"<module> {here}:"), frames[-1]
assert again == chain + "|", again  # the same stack: the same id, not handed over twice
other = capture()  # LINE_TOP
assert other.split("|")[0] not in ("0", chain), other

# A call made with the GIL released (ctypes.CDLL, as PyTorch's C++ code runs) still gets its
# stack: the reader takes the GIL back for the walk. A thread Python never ran on gets none.
free = ctypes.CDLL(sys.argv[1])
free.warpline_probe_capture.restype = ctypes.c_char_p
released = free.warpline_probe_capture().decode()  # LINE_RELEASED
assert released.split("|")[0] != "0", released
assert f"<module> {here}:{line_of('LINE_RELEASED')}" in released, released
free.warpline_probe_capture_cpp_thread.restype = ctypes.c_char_p
assert free.warpline_probe_capture_cpp_thread().decode() == "0|", "a C++ thread has no stack"
print("python stacks: ok,", len(frames), "frames,", sys.version.split()[0])
