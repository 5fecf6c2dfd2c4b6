#include "pythonstacks.h"

#include <chrono>
#include <dlfcn.h>

namespace warpline::collector {

// The interpreter's functions, as this process exports them (python3 and libpython export the
// C API for extension modules).
struct PythonStacks::Fns {
    int (*isInitialized)() = nullptr;
    int (*gilCheck)() = nullptr;
    int (*gilEnsure)() = nullptr; // PyGILState_STATE
    void (*gilRelease)(int) = nullptr;
    int (*isFinalizing)() = nullptr; // Py_IsFinalizing (3.13) or _Py_IsFinalizing; may be absent
    void* (*thisThreadState)() = nullptr;
    void* (*interpreterOf)(void*) = nullptr; // PyThreadState_GetInterpreter
    void* (*threadHead)(void*) = nullptr;    // PyInterpreterState_ThreadHead
    void* (*threadNext)(void*) = nullptr;    // PyThreadState_Next
    void* (*threadFrame)(void*) = nullptr;   // new reference
    void* (*frameBack)(void*) = nullptr;     // new reference
    void* (*frameCode)(void*) = nullptr;     // new reference
    int (*frameLine)(void*) = nullptr;
    int (*frameLasti)(void*) = nullptr; // PyFrame_GetLasti, 3.11+; may be absent
    void (*incRef)(void*) = nullptr;
    void (*decRef)(void*) = nullptr;
    void* (*getAttr)(void*, const char*) = nullptr; // new reference
    const char* (*utf8)(void*) = nullptr;
    void (*errClear)() = nullptr;
};

namespace {

template <typename F> bool find(F& f, const char* name) {
    f = reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
    return f != nullptr;
}

} // namespace

size_t PythonStacks::SiteHash::operator()(const Site& s) const {
    return (reinterpret_cast<uintptr_t>(s.first) >> 4) ^ (static_cast<size_t>(s.second) << 20);
}

size_t PythonStacks::KeyHash::operator()(const std::vector<Site>& k) const {
    size_t h = k.size();
    for (const Site& s : k)
        h = (h * 1000003u) ^ SiteHash()(s);
    return h;
}

bool PythonStacks::init(std::string* whyNot) {
    static Fns fns;
    bool ok =
        find(fns.isInitialized, "Py_IsInitialized") && find(fns.gilCheck, "PyGILState_Check") &&
        find(fns.thisThreadState, "PyGILState_GetThisThreadState") &&
        find(fns.incRef, "Py_IncRef") && find(fns.decRef, "Py_DecRef") &&
        find(fns.getAttr, "PyObject_GetAttrString") && find(fns.utf8, "PyUnicode_AsUTF8") &&
        find(fns.errClear, "PyErr_Clear") && find(fns.frameLine, "PyFrame_GetLineNumber") &&
        find(fns.gilEnsure, "PyGILState_Ensure") && find(fns.gilRelease, "PyGILState_Release");
    // For backward calls: the thread waiting in torch.autograd (optional).
    if (!find(fns.interpreterOf, "PyThreadState_GetInterpreter") ||
        !find(fns.threadHead, "PyInterpreterState_ThreadHead") ||
        !find(fns.threadNext, "PyThreadState_Next"))
        fns.threadHead = nullptr;
    find(fns.frameLasti, "PyFrame_GetLasti");
    if (!find(fns.isFinalizing, "Py_IsFinalizing"))
        find(fns.isFinalizing, "_Py_IsFinalizing");
    if (!ok) {
        if (whyNot)
            *whyNot = "not a Python process (no CPython functions found in it)";
        return false;
    }
    if (!find(fns.threadFrame, "PyThreadState_GetFrame") ||
        !find(fns.frameBack, "PyFrame_GetBack") || !find(fns.frameCode, "PyFrame_GetCode")) {
        if (whyNot)
            *whyNot = "this Python is older than 3.9 (PyThreadState_GetFrame missing)";
        return false;
    }
    m_fns = &fns;
    m_names.emplace_back(); // index 0: unknown
    m_ready = true;
    return true;
}

bool PythonStacks::wantsStack(const char* apiName) {
    const std::string name = apiName ? apiName : "";
    for (const char* prefix : {"cudaLaunch",
                               "cuLaunch",
                               "cudaGraphLaunch",
                               "cuGraphLaunch",
                               "cudaMemcpy",
                               "cuMemcpy",
                               "cudaMemset",
                               "cuMemset",
                               "cudaStreamSynchronize",
                               "cuStreamSynchronize",
                               "cudaDeviceSynchronize",
                               "cuCtxSynchronize",
                               "cudaEventSynchronize",
                               "cuEventSynchronize",
                               "cudaStreamWaitEvent",
                               "cuStreamWaitEvent",
                               "cudaMalloc",
                               "cuMemAlloc",
                               "cudaFree",
                               "cuMemFree"})
        if (name.rfind(prefix, 0) == 0)
            return true;
    return false;
}

uint32_t PythonStacks::nameIndex(const std::string& s) {
    const auto it = m_nameIndex.find(s);
    if (it != m_nameIndex.end())
        return it->second;
    const auto index = static_cast<uint32_t>(m_names.size());
    m_names.push_back(s);
    m_nameIndex.emplace(s, index);
    return index;
}

const PythonStacks::Code& PythonStacks::rememberCode(void* code) {
    if (const auto known = m_codes.find(code); known != m_codes.end())
        return known->second;
    // First sight: its names, and a reference that keeps the object (and so its address, which
    // the line and chain tables are keyed on) alive for the rest of the recording.
    const Fns& f = *m_fns;
    const auto text = [&f](void* object, const char* attribute) {
        std::string s;
        if (void* value = f.getAttr(object, attribute)) {
            if (const char* utf8 = f.utf8(value))
                s = utf8;
            f.decRef(value);
        }
        f.errClear();
        return s;
    };
    Code c;
    std::string function = text(code, "co_qualname");
    if (function.empty())
        function = text(code, "co_name");
    c.function = nameIndex(function);
    const std::string file = text(code, "co_filename");
    c.file = nameIndex(file);
    c.autograd = file.find("/torch/autograd/") != std::string::npos;
    f.incRef(code);
    return m_codes.emplace(code, c).first->second;
}

uint32_t PythonStacks::capture() {
    if (!m_ready)
        return 0;
    const auto start = std::chrono::steady_clock::now();
    const uint32_t chain = walk();
    m_captureNs += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - start)
                                             .count());
    return chain;
}

uint32_t PythonStacks::walk() {
    const Fns& f = *m_fns;
    if (!f.isInitialized() || (f.isFinalizing && f.isFinalizing()))
        return 0;
    // A thread without a Python thread state (a CUDA callback thread, a C++ worker) has no
    // Python stack: nothing to read, and no GIL to take. A thread with one but no Python code
    // running (PyTorch's autograd threads in backward) takes the GIL and finds no frame.
    void* state = f.thisThreadState();
    if (!state)
        return 0;
    static thread_local bool inside = false;
    if (inside)
        return 0;
    inside = true;
    // PyTorch releases the GIL around its C++ work, so a launch usually comes from a Python
    // thread that does not hold it: take it back for the walk (at once when no other Python
    // thread runs). With the GIL no Python code runs anywhere, the frames cannot change, and the
    // code and chain tables (touched only here) need no lock. Reading a frame may allocate and so
    // run the garbage collector, whose finalizers may make CUDA calls: those get no stack.
    const bool held = f.gilCheck() != 0;
    const int gil = held ? 0 : f.gilEnsure();
    struct Leave {
        bool& flag;
        const Fns& f;
        bool held;
        int gil;
        ~Leave() {
            if (!held)
                f.gilRelease(gil);
            flag = false;
        }
    } leave{inside, f, held, gil};
    m_key.clear();
    readFrames(f.threadFrame(state));
    if (m_key.empty()) {
        ++m_frameless; // a thread state with no Python code running
        // PyTorch's autograd engine runs backward on a thread of its own while the thread that
        // called loss.backward() (or torch.autograd.grad) waits in torch/autograd: that
        // thread's stack, under a frame saying so, is where the call comes from.
        void* waiting = waitingInAutograd(state);
        if (!waiting)
            return 0;
        m_key.emplace_back(nullptr, 0); // the frame "<autograd backward>"
        readFrames(f.threadFrame(waiting));
        ++m_fromBackward;
    } else {
        ++m_captures;
    }
    const auto it = m_chainIds.find(m_key);
    if (it != m_chainIds.end())
        return it->second;
    const auto id = static_cast<uint32_t>(m_chainIds.size() + 1);
    PythonChain chain;
    chain.id = id;
    for (const auto& [code, line] : m_key) {
        if (!code) {
            chain.frames.push_back({kAutogradFrame, "", 0});
            continue;
        }
        const Code& c = m_codes[code];
        chain.frames.push_back({m_names[c.function], m_names[c.file], line});
    }
    m_chainIds.emplace(m_key, id);
    m_chainCount = m_chainIds.size();
    std::lock_guard lock(m_mutex);
    m_new.push_back(std::move(chain));
    return id;
}

// Appends the frames from `frame` (a new reference, or null) outwards to m_key. Under the GIL.
void PythonStacks::readFrames(void* frame) {
    const Fns& f = *m_fns;
    while (frame && m_key.size() < kMaxDepth) {
        void* code = f.frameCode(frame);
        if (code) {
            // The line of the frame's current instruction: a lookup for an instruction seen
            // before, the interpreter's line-table walk otherwise (and always before 3.11).
            const int lasti = f.frameLasti ? f.frameLasti(frame) : -1;
            const auto known = lasti >= 0 ? m_lines.find({code, lasti}) : m_lines.end();
            int line = 0;
            if (known != m_lines.end()) {
                line = known->second;
            } else {
                rememberCode(code);
                line = f.frameLine(frame);
                if (lasti >= 0)
                    m_lines.emplace(Site{code, lasti}, line);
            }
            m_key.emplace_back(code, line);
            f.decRef(code);
        }
        void* back = f.frameBack(frame);
        f.decRef(frame);
        frame = back;
    }
    if (frame)
        f.decRef(frame);
}

// Another thread of the interpreter whose innermost frame is in torch/autograd (waiting there for
// the autograd engine), or null. Under the GIL, so no thread runs Python code meanwhile (as
// sys._current_frames() reads them).
void* PythonStacks::waitingInAutograd(void* self) {
    constexpr int kMaxThreads = 256;
    const Fns& f = *m_fns;
    if (!f.threadHead)
        return nullptr;
    int n = 0;
    for (void* t = f.threadHead(f.interpreterOf(self)); t && n < kMaxThreads;
         t = f.threadNext(t), ++n) {
        if (t == self)
            continue;
        void* frame = f.threadFrame(t);
        if (!frame)
            continue;
        bool autograd = false;
        if (void* code = f.frameCode(frame)) {
            autograd = rememberCode(code).autograd;
            f.decRef(code);
        }
        f.decRef(frame);
        if (autograd)
            return t;
    }
    return nullptr;
}

std::vector<PythonChain> PythonStacks::takeNew() {
    std::lock_guard lock(m_mutex);
    std::vector<PythonChain> out;
    out.swap(m_new);
    return out;
}

void PythonStacks::remember(uint32_t correlationId, uint32_t chain) {
    std::lock_guard lock(m_mutex);
    m_byCorrelation[correlationId] = chain;
}

uint32_t PythonStacks::take(uint32_t correlationId) {
    std::lock_guard lock(m_mutex);
    const auto it = m_byCorrelation.find(correlationId);
    if (it == m_byCorrelation.end())
        return 0;
    const uint32_t chain = it->second;
    m_byCorrelation.erase(it);
    return chain;
}

} // namespace warpline::collector
