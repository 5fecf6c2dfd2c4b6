#pragma once

// PythonStacks: the Python call stack of the thread making a CUDA call, read from the CPython
// interpreter the injection library finds itself in (warpline-record --python-stacks). No change
// to the program and no link to libpython: the interpreter's public functions (3.9+:
// PyThreadState_GetFrame, PyFrame_GetBack/GetCode/GetLineNumber) are looked up in the process
// with dlsym, so a program that is not Python simply has no stacks.
//
// A stack is read on a Python thread (one with a Python thread state), with the GIL: PyTorch
// releases the GIL around its C++ work, so the reader takes it back for the walk (immediately
// when no other Python thread runs; otherwise it waits its turn). CUDA calls made with no Python
// code on the thread (PyTorch's autograd threads run backward in C++) get none, unless a thread
// waits for them (below). Only the calls
// that start or wait for GPU work are read (launches, copies, memsets, synchronizations; not
// allocations or event queries, which PyTorch's allocator makes under its own lock: taking the
// GIL there could deadlock against a Python thread waiting for that lock). A call from a thread
// with no Python code on it, while another Python thread waits in torch/autograd (in
// loss.backward(): PyTorch's engine runs backward on threads of its own), gets that thread's
// stack under a frame "<autograd backward>". Stacks are deduplicated
// into chains (the same frames, innermost first, give the same id), written as Nsight Systems'
// CUDA_CALLCHAINS rows and referenced from CUPTI_ACTIVITY_KIND_RUNTIME.callchainId
// (docs/trace-format.md).

#include "records.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warpline::collector {

using PythonChain = format::CallchainRecord;

class PythonStacks {
public:
    static constexpr int kMaxDepth = 64;
    // The innermost frame of a backward call's stack, above the waiting thread's frames.
    static constexpr const char* kAutogradFrame = "<autograd backward>";

    // Finds the interpreter's functions; false (and why) when this is not a CPython 3.9+ process.
    bool init(std::string* whyNot);
    bool ready() const { return m_ready; }

    // The calling thread's Python stack as a chain id, or 0 when it is not a Python thread (or
    // the interpreter is not running). Cheap for a stack seen before: one walk, one lookup.
    // Its time, GIL included, is added up: what the stacks cost the program, measured inside it.
    uint32_t capture();

    // Chains first seen since the last call (for the writer thread).
    std::vector<PythonChain> takeNew();

    // The chain captured when the API call with this correlation id entered (0 when none), and
    // forgets it. remember() is called from the API callback, take() from the writer thread.
    void remember(uint32_t correlationId, uint32_t chain);
    uint32_t take(uint32_t correlationId);

    // The API calls whose stacks are read: launches, copies, memsets, synchronizations, and
    // device memory allocations and frees (the allocator finding names empty_cache()'s caller).
    static bool wantsStack(const char* apiName);

    // Calls given the stack of their own thread.
    uint64_t captures() const { return m_captures; }
    // Calls on a thread with a Python thread state but no Python code running (PyTorch's autograd
    // threads): the GIL was taken, and no stack found.
    uint64_t framelessCalls() const { return m_frameless; }
    // Of those, the calls given the stack of the thread waiting in torch/autograd.
    uint64_t backwardCalls() const { return m_fromBackward; }
    uint64_t captureNanoseconds() const { return m_captureNs; }
    size_t chains() const { return m_chainCount; }

private:
    struct Fns;
    struct Code {
        uint32_t function = 0; // index into m_names
        uint32_t file = 0;
        bool autograd = false; // in torch/autograd/ (a thread waiting there for backward)
    };
    using Site = std::pair<const void*, int>; // a code object and an instruction offset, or a line
    struct SiteHash {
        size_t operator()(const Site& s) const;
    };
    struct KeyHash {
        size_t operator()(const std::vector<Site>& k) const;
    };
    uint32_t nameIndex(const std::string& s);
    uint32_t walk();
    const Code& rememberCode(void* code); // under the GIL; its names
    void readFrames(void* frame);
    void* waitingInAutograd(void* self);

    bool m_ready = false;
    const Fns* m_fns = nullptr;
    std::mutex m_mutex; // m_new and m_byCorrelation, shared with the writer thread
    // Touched only by capture(), under the GIL:
    std::unordered_map<const void*, Code> m_codes; // code objects seen (kept alive)
    // (code, instruction offset) -> line: the interpreter finds a line by walking the code's
    // line table, most of a capture's time; an instruction seen before is one lookup.
    std::unordered_map<Site, int, SiteHash> m_lines;
    std::vector<std::string> m_names;
    std::unordered_map<std::string, uint32_t> m_nameIndex;
    std::unordered_map<std::vector<Site>, uint32_t, KeyHash> m_chainIds;
    std::vector<PythonChain> m_new;
    std::vector<Site> m_key; // scratch: (code, line) per frame
    std::atomic<uint64_t> m_captures{0};
    std::atomic<uint64_t> m_frameless{0};
    std::atomic<uint64_t> m_fromBackward{0};
    std::atomic<uint64_t> m_captureNs{0};
    std::atomic<size_t> m_chainCount{0};
    std::unordered_map<uint32_t, uint32_t> m_byCorrelation;
};

} // namespace warpline::collector
