#pragma once

// The readers of what CPU threads recorded: CUDA API calls (CUPTI_ACTIVITY_KIND_RUNTIME, and
// CUPTI_ACTIVITY_KIND_DRIVER of Warpline 1.x traces) and NVTX ranges and marks (NVTX_EVENTS), to
// each thread's stage (LoadStage::threads, by globalTid). The loader's (traceloader.cpp) only.
//
// The API tables are about half the rows of a typical trace, so they are read on a helper thread
// with a connection of its own (readApiTables) while the loading thread reads everything else;
// mergeApi then hands the calls to their threads' stages. Rows without a sensible span are
// counted as skipped, never kept.
//
// Cost: both read from the tables' pages (TableRows), a few integer columns a row; a thread's
// calls and NVTX ranges go to its stage without a map lookup while consecutive rows share a
// thread.
// Thread affinity: readApiTables on the API reader thread, touching nothing but its arguments
// (the schema is read-only by then); mergeApi and readNvtx on the loading thread.

#include "loaderstage.h"
#include "readsource.h"
#include "tracestrings.h"

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <string>

namespace warpline::model {

// What the API reader thread collects; merged into the stage once it has joined.
struct ApiReadResult {
    std::map<int64_t, ApiStage> threads; // names are StringIds ids here
    std::map<std::string, uint64_t> skipped;
    bool haveTime = false;
    int64_t begin = 0;
    int64_t end = 0;
    std::exception_ptr error; // what stopped the reader, rethrown by mergeApi
};

// The API calls of both tables into `out`, on `db` (the reader thread's own connection). Adds
// the rows it read to `rowsRead` every LoadProgress::kProgressEvery rows, and stops when `cancel`
// is set; `expectedRows` (the larger table's row count) is what the first threads' stages
// reserve. Throws what reading throws (TraceError, LoadCancelled).
void readApiTables(Connection& db, const StoredSchema& schema, bool readPages,
                   uint64_t expectedRows, std::atomic<uint64_t>& rowsRead,
                   const std::atomic<bool>& cancel, ApiReadResult& out);
// The calls of `in` to their threads' stages (which hold no API rows before), their names
// resolved (TraceStrings::apiName); rethrows the reader's error first.
void mergeApi(ApiReadResult& in, TraceStrings& strings, LoadStage& stage);

// NVTX_EVENTS: push/pop and start/end ranges and marks of each thread, with their domains'
// names (eventType 75 rows, which may come after the ranges that use them). A range without an
// end is kept with NvtxTrack's unclosed flag, ending where it starts until building ends it with
// the trace.
void readNvtx(const ReadSource& in, TraceStrings& strings, LoadStage& stage);

} // namespace warpline::model
