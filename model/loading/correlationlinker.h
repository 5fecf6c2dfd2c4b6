#pragma once

// TraceLoader::CorrelationLinker: joins each GPU operation to the API call that launched it (the
// same correlation id in the same process), each call to the GPU operations it launched, and each
// synchronization to its call; then judges the GPU operations that overlap an earlier one on
// their stream (noteOverlaps, while building) as overlap CUDA allows or damage. The loader's
// (traceloader.cpp) only. Nested in TraceLoader because the tracks let only it fill their links.
//
// Invariants it establishes (tracestore.h): GpuTrack::launch(i) is the call of the op's
// correlation id, a runtime call over the driver call it made and an outer call over a nested one;
// ApiTrack::gpuOps(i) lists the call's ops in start order (a graph launch's come from several
// streams); a correlation id of 0 links nothing.
//
// Cost: a direct table per process indexed by correlation id (ids count up from 1; a damaged
// file's sparse ids get a hash map instead), one pass over the API and GPU tracks each, and the
// call-to-ops offsets in place (no copy of them). Looks at `cancel` every 2^20 events.
// Thread affinity: link() reads the API and GPU tracks and writes their links only, so it runs
// while the NVTX tracks are built on another thread; judgeOverlaps() after link().

#include "loaderstage.h"
#include "traceloader.h"

#include <atomic>
#include <cstdint>
#include <vector>

namespace warpline::model {

class TraceLoader::CorrelationLinker {
public:
    // Links launches both ways and syncs to their calls; `streamPids` is each store stream's
    // process (TrackBuilder::Streams). Returns the API calls that repeat the correlation id of
    // another call of their process and domain (the id's GPU work links to one of them). Throws
    // LoadCancelled once `cancel` is set.
    static uint64_t link(TraceStore& store, const std::vector<uint32_t>& streamPids,
                         const std::atomic<bool>& cancel);
    // Counts the overlaps CUDA allows (isAllowedOverlap: a dependent launch, branches of one
    // graph launch, a host-to-host copy) in the store, releases `overlaps` and returns how many
    // are none of those.
    static uint64_t judgeOverlaps(GpuOverlaps& overlaps, TraceStore& store);
};

// The ops of a stream that start before an earlier op ends (`rows` sorted by start; first-fit put
// them on lane 1, 2, ... unless lane 0 was free by then), each with the earlier op that ends last
// (the one it overlaps most), appended to `overlaps`. Refs are into the tracks
// TrackBuilder::buildStreams makes of `rows`: lane l becomes track firstTrack + l, and a row's
// index there is its rank among the rows of its lane.
void noteOverlaps(const std::vector<GpuRow>& rows, const std::vector<uint32_t>& lanes,
                  uint32_t firstTrack, GpuOverlaps& overlaps);

} // namespace warpline::model
