#pragma once

// TraceLoader::StackReaders: the readers of call stacks and what was sampled with them:
// CUDA_CALLCHAINS (the stacks of API calls, --python-stacks) and the CPU samples of
// COMPOSITE_EVENTS and SAMPLING_CALLCHAINS with the thread states of SCHED_EVENTS. The loader's
// (traceloader.cpp) only. Nested in TraceLoader because Callchains and CpuSamples let only it
// fill their columns.
//
// A stack's frames are kept in depth order, a repeated depth once (its first row); a
// CUDA_CALLCHAINS module "file.py:123" (a Python frame) splits into file and line, and CPU sample
// stacks are deduplicated (at most 512 frames each). What a file can make them hold is bounded
// (10 million callchain frames; 20 million CPU samples and sample frames, 50 million thread
// switches): past a bound the rest is left out, for CPU samples with a warning.
//
// Cost: CUDA_CALLCHAINS costs a second pass over CUPTI_ACTIVITY_KIND_RUNTIME's callchainId
// column, made only when there are stacks; CPU samples cost a sort per thread by time.
// Thread affinity: the loading thread.

#include "readsource.h"
#include "traceloader.h"
#include "tracestrings.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace warpline::model {

class TraceLoader::StackReaders {
public:
    // CUDA_CALLCHAINS and the API calls that refer to them (by correlation id, source 0).
    static void readCallchains(const ReadSource& in, TraceStrings& strings, Callchains& out);
    // CPU samples and thread states, by thread; `threadNames` (ThreadNames) name the threads,
    // `fileName` the file in a warning.
    static void readCpuSamples(const ReadSource& in, TraceStrings& strings,
                               const std::map<int64_t, NameId>& threadNames,
                               const std::string& fileName, CpuSamples& out,
                               std::vector<std::string>& warnings);
};

} // namespace warpline::model
