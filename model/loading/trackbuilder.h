#pragma once

// TraceLoader::TrackBuilder: turns the staged rows of each thread and stream (loaderstage.h)
// into the store's threads, streams and tracks. The loader's (traceloader.cpp) only. Nested in
// TraceLoader because TraceStore and its tracks let only it fill their columns.
//
// Invariants it establishes (spantrack.h): every track is sorted by start (ties: the longer span
// first, then file order) and holds no overlapping spans. API calls and push/pop ranges go one
// track per nesting depth (a span's depth: the spans still open when it starts); start/end
// ranges and a stream's overlapping GPU ops one per first-fit lane; marks one track a thread.
// Threads are listed by globalTid, streams by (device, stream, context, process), devices by id.
//
// Cost: a stage still in columns (TrackStage: rows came in order, the usual case) becomes its
// track without a copy; one in rows is sorted (when not sorted already), then moved once into
// columns reserved to size. Every staged row is released as its track is made.
// Thread affinity: buildThreads and buildStreams touch disjoint parts of the store and may run on
// two threads at once; buildNvtx after buildThreads, on the thread that reports progress.

#include "loaderstage.h"
#include "loadprogress.h"
#include "traceloader.h"

#include <cstdint>
#include <map>
#include <vector>

namespace warpline::model {

class TraceLoader::TrackBuilder {
public:
    // One ThreadInfo per staged thread (named from `names`, the ThreadNames) with its API tracks.
    static void buildThreads(std::map<int64_t, ThreadStage>& threads,
                             const std::map<int64_t, NameId>& names, TraceStore& store);
    // The NVTX tracks of every thread (after buildThreads, which made the threads), then releases
    // `threads`. An unclosed range ends at `traceEnd`, the end of every event read. Moves progress
    // on to 0.9 of building's share as threads are done (set() may throw LoadCancelled).
    static void buildNvtx(std::map<int64_t, ThreadStage>& threads, int64_t traceEnd,
                          LoadProgress& progress, TraceStore& store);

    // What linking needs of the streams built.
    struct Streams {
        std::vector<uint32_t> pids; // each store stream's process (StreamKey), by stream index
        GpuOverlaps overlaps;       // noteOverlaps of every stream whose ops overlap
    };
    // One StreamInfo per staged stream (ops of a stream without a process join the one stream of
    // the same device, stream and context that has one), its GPU tracks and kernel, memcpy and
    // memset counts, named from `names` or "Stream N"; then the devices seen only in GPU records
    // ("GPU N"). Releases `streams`.
    static Streams buildStreams(std::map<StreamKey, StreamStage>& streams, const StreamNames& names,
                                const StreamPriorities& priorities, TraceStore& store);

private:
    template <typename Row, typename Track, typename Setup>
    static void distribute(std::vector<Row>& rows, const std::vector<uint32_t>& level,
                           std::vector<Track>& tracks, std::vector<uint32_t>& trackOfLevel,
                           Setup setup);
    // Moves staged columns into a track.
    static void take(ApiTrack& t, ApiColumns& c);
    static void take(GpuTrack& t, GpuColumns& c);
    static void take(NvtxTrack& t, NvtxColumns& c);
};

} // namespace warpline::model
