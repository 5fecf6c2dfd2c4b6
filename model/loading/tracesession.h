#pragma once

// TraceSession: several traces (one per rank of a distributed job, or any set of files) opened as
// one TraceStore on one time axis, so the timeline, the tables and every analysis see all ranks at
// once.
//
// Each file is opened with TraceOpener (Warpline traces, nsys exports, PyTorch profiler JSON), on
// its own thread, then the stores are merged:
//  - sources(): one TraceSource per file, ordered by rank (unknown ranks last), then host, then
//    path; rank, local rank and world size come from the file's env_RANK, env_LOCAL_RANK and
//    env_WORLD_SIZE (or OMPI_COMM_WORLD_* / PMI_*) meta, or a PyTorch profiler trace's
//    distributedInfo; host from its hostname meta.
//  - clocks: the first source is the reference. A source on the same host shares its clock: its
//    offset is the difference of their session_start_timestamp (CUPTI timestamps on one host come
//    from one clock). A source on another host is aligned at the first common sync point: the end
//    of its first communication kernel (communication.h; the one that starts first) is put at the
//    end of the reference's first one (a collective ends on every rank at about the same time);
//    without communication kernels, wall-clock start times (utcEpochNs) are used, and without those
//    nothing is shifted. TraceSource::clockOffset and ::alignment say what was done, for the window
//    to show. An offset that would put a source's times beyond +-2^62 ns is not used (the next way
//    is tried). Times stay relative to the reference's t = 0, so a source that started earlier has
//    negative times.
//  - ids: processes keep their pid, but globalPid/globalTid carry the source index in bits 48 and
//    up; devices are renumbered (DeviceInfo::id) and keep their own id in DeviceInfo::cudaId;
//    names are re-interned; correlation links stay within their source. A file lists every GPU
//    of its host: a session keeps only the devices its sources ran work on.
//  - meta() and path() are the first source's; warnings() holds, source by source, its warnings
//    prefixed with its label ("rank 1: 12 records dropped") and a sentence when it was placed by
//    wall clock or not aligned at all; then one for each rank found in several files.
//
// A store opened from one file through TraceLoader or TraceOpener also has one source (offset 0),
// so code can treat a single trace and a session alike.

#include "traceloader.h"
#include "tracestore.h"

#include <string>
#include <vector>

namespace warpline::model {

class TraceSession {
public:
    // Opens every path (at least one) and merges them; files load in parallel, up to one per
    // hardware thread. A path that fails to open throws its TraceError with the path named (the
    // first failing path in the order given); no paths throw TraceError. Progress is over all
    // files together (each weighted by its size), called from the loading threads one call at a
    // time; returning false cancels every load (LoadCancelled).
    static TraceStore open(const std::vector<std::string>& paths,
                           const TraceLoader::Options& options);
    static TraceStore open(const std::vector<std::string>& paths) {
        return open(paths, TraceLoader::Options{});
    }

    // Merges stores already loaded (each with one source, or sessions themselves) as open() does:
    // sources are ordered and aligned again, one by one. One store is returned as it is; none
    // throws TraceError.
    static TraceStore merge(std::vector<TraceStore> stores);

    // Command-line and dialog arguments to trace files: a file stays as it is; a folder becomes
    // the trace files directly in it (*.warpline, *.sqlite, *.json, *.json.gz, *.pt.trace.json),
    // sorted by name. Throws TraceError when a path does not exist or a folder holds no trace.
    static std::vector<std::string> expandPaths(const std::vector<std::string>& paths);

private:
    class Merger;
};

} // namespace warpline::model
