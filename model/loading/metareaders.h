#pragma once

// The readers of what a trace says about itself and the things its events refer to: the session
// start time, WARPLINE_META (and the warnings its status and exit code give), StringIds,
// PROCESSES, ThreadNames, TARGET_INFO_GPU, stream priorities and names, and the collector's own
// diagnostics (WARPLINE_DROPPED, WARPLINE_ERRORS). The loader's (traceloader.cpp) only.
//
// Each reads its tables through `in` and writes only what its signature names; a table the file
// does not store (StoredSchema::hasTable) reads as empty. These tables are small (a row per
// string, process, thread, device or stream): one SQL scan each.
// Thread affinity: the loading thread.

#include "loaderstage.h"
#include "readsource.h"
#include "tracestrings.h"

#include <map>
#include <string>
#include <vector>

namespace warpline::model {

// TARGET_INFO_SESSION_START_TIME.utcEpochNs; 0 when absent.
int64_t readSessionStart(const ReadSource& in);
// WARPLINE_META into `meta`; a recording that did not finish, or a traced program that failed,
// adds a warning.
void readMeta(const ReadSource& in, std::map<std::string, std::string>& meta,
              std::vector<std::string>& warnings);
// StringIds into `strings`.
void readStrings(const ReadSource& in, TraceStrings& strings);
// PROCESSES, sorted by globalPid.
void readProcesses(const ReadSource& in, TraceStrings& strings,
                   std::vector<ProcessInfo>& processes);
// ThreadNames: each thread's name of the highest priority (the first of equals).
void readThreadNames(const ReadSource& in, TraceStrings& strings,
                     std::map<int64_t, NameId>& threadNames);
// TARGET_INFO_GPU, in file order; clockRate in kHz from every dialect.
void readDevices(const ReadSource& in, TraceStrings& strings, std::vector<DeviceInfo>& devices);
// TARGET_INFO_CUDA_STREAM priorities and WARPLINE_STREAM_NAMES.
void readStreamDetails(const ReadSource& in, TraceStrings& strings, StreamPriorities& priorities,
                       StreamNames& names);
// WARPLINE_DROPPED and WARPLINE_ERRORS, as warnings (the first 20 errors, then a count).
void readDiagnostics(const ReadSource& in, std::vector<std::string>& warnings);

} // namespace warpline::model
