// For tests/python_stacks.py: PythonStacks (collector/pythonstacks.h) in a library Python loads
// with ctypes.PyDLL (which keeps the GIL during the call, as a CUDA call from PyTorch does).
#include "pythonstacks.h"

#include <dlfcn.h>
#include <string>
#include <thread>

namespace {
warpline::collector::PythonStacks g_stacks;
std::string g_text;
} // namespace

// "id|function file:line;function file:line;..." (innermost first) of the caller's stack, or
// "0|why" when there is none.
extern "C" const char* warpline_probe_capture() {
    std::string why;
    if (!g_stacks.ready() && !g_stacks.init(&why)) {
        g_text = "0|" + why;
        return g_text.c_str();
    }
    const uint32_t id = g_stacks.capture();
    g_text = std::to_string(id) + "|";
    for (const auto& chain : g_stacks.takeNew())
        for (const auto& f : chain.frames)
            g_text += f.function + " " + f.file + ":" + std::to_string(f.line) + ";";
    return g_text.c_str();
}

// The same from a thread without a Python thread state: "0|" (no stack, and no GIL taken).
extern "C" const char* warpline_probe_capture_cpp_thread() {
    uint32_t id = 1;
    std::thread([&id] { id = g_stacks.capture(); }).join();
    g_text = std::to_string(id) + "|";
    return g_text.c_str();
}

// The same from a thread like PyTorch's autograd threads: it has a Python thread state (made once,
// the GIL released) but no Python code running. Called with the GIL released (ctypes.CDLL), as
// loss.backward() waits for the engine.
extern "C" const char* warpline_probe_capture_autograd_thread() {
    using Ensure = int (*)();
    using Release = void (*)(int);
    using Save = void* (*)();
    using Restore = void (*)(void*);
    const auto ensure = reinterpret_cast<Ensure>(::dlsym(RTLD_DEFAULT, "PyGILState_Ensure"));
    const auto release = reinterpret_cast<Release>(::dlsym(RTLD_DEFAULT, "PyGILState_Release"));
    const auto save = reinterpret_cast<Save>(::dlsym(RTLD_DEFAULT, "PyEval_SaveThread"));
    const auto restore = reinterpret_cast<Restore>(::dlsym(RTLD_DEFAULT, "PyEval_RestoreThread"));
    uint32_t id = 0;
    std::thread([&] {
        const int gil = ensure();
        void* state = save(); // keeps the thread state, lets the GIL go
        id = g_stacks.capture();
        restore(state);
        release(gil);
    }).join();
    g_text = std::to_string(id) + "|";
    for (const auto& chain : g_stacks.takeNew())
        for (const auto& f : chain.frames)
            g_text += f.function + " " + f.file + ":" + std::to_string(f.line) + ";";
    return g_text.c_str();
}

// For bench/python_stacks_cost.py: the capture alone (its chain id), and a call that does nothing,
// to time the difference.
extern "C" unsigned warpline_probe_capture_id() {
    if (!g_stacks.ready() && !g_stacks.init(nullptr))
        return 0;
    const uint32_t id = g_stacks.capture();
    g_stacks.takeNew();
    return id;
}

extern "C" unsigned warpline_probe_noop() {
    return 0;
}
