#pragma once

// SourceText: how the viewer names one trace file of a session (TraceStore::sources()) for
// people: the timeline's rank headers, the details panel and the window title. Pure functions of
// the store; plain text (host names and paths come from the trace).

#include "tracestore.h"

#include <QString>
#include <cstdint>

namespace warpline::views {

class SourceText {
public:
    // "Rank 1 · node0"; the file name when the rank is unknown; the host left out when unknown.
    static QString label(const model::TraceStore& store, uint32_t source);
    // The source's GPUs by the id the program used: "GPU 1 NVIDIA H200", comma-separated; empty
    // when the file lists no device.
    static QString devices(const model::TraceStore& store, uint32_t source);
    // How its clock was put on the session's time axis: "clock +1.234 ms (shared clock)",
    // "reference clock", "clock not aligned: times as recorded" ...
    static QString clock(const model::TraceSource& source);
    // "GPU 1 NVIDIA H200 · clock +1.234 ms (shared clock)": devices() and clock(), the parts that
    // are known.
    static QString detail(const model::TraceStore& store, uint32_t source);
    // "Rank 1 · node0 · GPU 1 NVIDIA H200 · clock +1.234 ms (shared clock)": label() and detail().
    static QString summary(const model::TraceStore& store, uint32_t source);
    // True when the times of this source cannot be compared with the others' (Unaligned).
    static bool isUnaligned(const model::TraceSource& source);

    // The source a thread (index into threads()) or a device (index into devices()) was read
    // from; 0 for a store read from one file.
    static uint32_t ofThread(const model::TraceStore& store, uint32_t thread);
    static uint32_t ofDevice(const model::TraceStore& store, uint32_t device);
    // "GPU <n>" with the id the program used (cudaId in a session, id otherwise).
    static QString gpuName(const model::TraceStore& store, const model::DeviceInfo& device);
    // "GPU <n> · NVIDIA H100 80GB HBM3"; gpuName() alone when the device has no name.
    static QString deviceLabel(const model::TraceStore& store, const model::DeviceInfo& device);

    // "8 ranks" when every source has a rank, else "8 traces".
    static QString count(const model::TraceStore& store);
};

} // namespace warpline::views
