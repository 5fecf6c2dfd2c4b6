#pragma once

// ActivityDecoder: turns CUPTI activity records into Warpline records and feeds a TraceWriter.
//
// Runs on the collector's writer thread only (not thread-safe). Timestamps become nanoseconds
// relative to the session's start timestamp. Driver API calls made by the CUDA runtime inside a
// runtime call (cuLaunchKernel under cudaLaunchKernel) are dropped, so the trace holds the calls
// the program itself made: driver records are held per thread until the enclosing runtime call,
// if any, arrives (inner calls complete, and are delivered, before the outer one).

#include "records.h"

#include <cstdint>
#include <cupti_activity.h>
#include <deque>
#include <functional>
#include <set>
#include <unordered_map>
#include <utility>

namespace warpline::format {
class TraceWriter;
}

namespace warpline::collector {

class ActivityDecoder {
public:
    ActivityDecoder(format::TraceWriter& writer, uint64_t sessionStartTimestamp);

    // Decodes one record; unknown kinds are ignored.
    void decode(const CUpti_Activity* record);
    // Writes held-back driver calls that ended over a second before the newest record seen: by
    // then any enclosing runtime call has arrived. finish() writes all of them.
    void flushHeldDriverCalls();
    void finish();

    uint64_t recordsDecoded() const { return m_decoded; }
    // Gives each API call the Python stack captured when it entered (--python-stacks).
    void setCallchains(std::function<uint32_t(uint32_t correlationId)> callchainOf) {
        m_callchainOf = std::move(callchainOf);
    }

private:
    int64_t rel(uint64_t timestamp) const;
    void noteThread(uint32_t pid, uint32_t tid);
    void decodeApi(const CUpti_ActivityAPI& api, bool runtime);
    void writeHeldDriverCalls(int64_t endedBefore);

    format::TraceWriter& m_writer;
    uint64_t m_start;
    uint64_t m_decoded = 0;
    int64_t m_latest = 0; // newest API end seen, relative ns
    std::set<std::pair<uint32_t, uint32_t>> m_threadsSeen;
    std::unordered_map<uint32_t, std::deque<format::ApiRecord>> m_heldDriverCalls; // by thread id
    std::unordered_map<uint64_t, std::string> m_apiNames; // (domain << 32 | cbid) -> name
    std::function<uint32_t(uint32_t)> m_callchainOf;
};

} // namespace warpline::collector
