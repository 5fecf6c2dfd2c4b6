#include "correlationlinker.h"

#include "traceerror.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <unordered_map>
#include <utility>

namespace warpline::model {

namespace {

// Linking looks at Cancel every this many + 1 events of a track (about a millisecond of work), so
// a cancel of a 100M-event load is honoured within moments.
constexpr size_t kCancelCheckMask = (size_t(1) << 20) - 1;

} // namespace

void noteOverlaps(const std::vector<GpuRow>& rows, const std::vector<uint32_t>& lanes,
                  uint32_t firstTrack, GpuOverlaps& overlaps) {
    std::vector<uint32_t> nextIndex;
    EventRef latest;
    int64_t latestEnd = 0;
    for (size_t i = 0; i < rows.size(); ++i) {
        const uint32_t lane = lanes[i];
        if (lane >= nextIndex.size())
            nextIndex.resize(lane + 1, 0);
        const EventRef ref{firstTrack + lane, nextIndex[lane]++};
        if (latest.valid() && rows[i].start < latestEnd)
            overlaps.emplace_back(ref, latest);
        if (!latest.valid() || rows[i].end > latestEnd) {
            latest = ref;
            latestEnd = rows[i].end;
        }
    }
}

// Needs the launch links: after link().
uint64_t TraceLoader::CorrelationLinker::judgeOverlaps(GpuOverlaps& overlaps, TraceStore& store) {
    uint64_t unexplained = 0;
    for (const auto& [op, earlier] : overlaps) {
        const GpuTrack& t = store.m_gpuTracks[op.track];
        const GpuTrack& e = store.m_gpuTracks[earlier.track];
        const EventRef launch = t.launch(op.index);
        const bool launchedEx =
            launch.valid() &&
            isLaunchExApi(store.m_strings.text(store.m_apiTracks[launch.track].name(launch.index)));
        const bool sameGraphLaunch =
            isConcurrentGraphOverlap(e.graphId(earlier.index), e.correlationId(earlier.index),
                                     t.graphId(op.index), t.correlationId(op.index));
        const auto hostToHostCopy = [&](const GpuTrack& g, uint32_t k) {
            return g.kind(k) == GpuOpKind::Memcpy && g.detail(k) < store.m_memOps.size() &&
                   store.m_memOps[g.detail(k)].copyKind == kCopyHtoH;
        };
        if (isAllowedOverlap(e.kind(earlier.index), e.start(earlier.index), e.end(earlier.index),
                             t.kind(op.index), t.start(op.index), launchedEx, sameGraphLaunch,
                             hostToHostCopy(t, op.index) || hostToHostCopy(e, earlier.index)))
            ++store.m_allowedOverlapCount;
        else
            ++unexplained;
    }
    GpuOverlaps().swap(overlaps);
    return unexplained;
}

uint64_t TraceLoader::CorrelationLinker::link(TraceStore& store,
                                              const std::vector<uint32_t>& streamPids,
                                              const std::atomic<bool>& cancel) {
    uint64_t duplicates = 0;
    // Correlation ids count up from 1 in each process, so a direct table indexed by id is both
    // the fastest and the smallest map here. Runtime calls win over the driver calls they make
    // (both may carry the id), outer calls over nested ones: fill driver first, runtime last,
    // deepest tracks first. A damaged file's ids can be anything up to 2^32 - 1: a table more
    // than a few times larger than the calls becomes a hash map.
    struct CorrelationIndex {
        std::vector<EventRef> dense;
        std::unordered_map<uint32_t, EventRef> sparse;
        bool isDense = true;
        EventRef& operator[](uint32_t c) { return isDense ? dense[c] : sparse[c]; }
        EventRef find(uint32_t c) const {
            if (isDense)
                return c < dense.size() ? dense[c] : EventRef{};
            const auto it = sparse.find(c);
            return it == sparse.end() ? EventRef{} : it->second;
        }
    };
    std::map<uint32_t, CorrelationIndex> byPid;
    std::map<uint32_t, std::pair<uint32_t, size_t>> maxCorrelation; // pid -> (max id, calls)
    for (const ApiTrack& t : store.m_apiTracks) {
        const uint32_t pid = pidOf(store.m_threads[t.m_thread].globalTid);
        auto& [m, calls] = maxCorrelation[pid];
        calls += t.size();
        for (const uint32_t c : t.m_correlation)
            m = std::max(m, c);
    }
    for (const auto& [pid, limits] : maxCorrelation) {
        const auto [maxId, calls] = limits;
        CorrelationIndex& index = byPid[pid];
        index.isDense = maxId <= 4 * calls + 65536;
        if (index.isDense)
            index.dense.assign(static_cast<size_t>(maxId) + 1, EventRef{});
    }
    std::vector<uint32_t> order(store.m_apiTracks.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
        return store.m_apiTracks[a].m_depth > store.m_apiTracks[b].m_depth;
    });
    for (const uint8_t domain : {uint8_t(ApiDomain::Driver), uint8_t(ApiDomain::Runtime)}) {
        for (const uint32_t ti : order) {
            const ApiTrack& t = store.m_apiTracks[ti];
            CorrelationIndex& table = byPid[pidOf(store.m_threads[t.m_thread].globalTid)];
            for (size_t i = 0; i < t.size(); ++i) {
                if ((i & kCancelCheckMask) == 0 && cancel)
                    throw LoadCancelled();
                if (t.m_domain[i] != domain || t.m_correlation[i] == 0)
                    continue;
                EventRef& entry = table[t.m_correlation[i]];
                if (entry.valid() && store.m_apiTracks[entry.track].m_domain[entry.index] == domain)
                    ++duplicates;
                entry = EventRef{ti, static_cast<uint32_t>(i)};
            }
        }
    }
    const auto lookup = [&](uint32_t pid, uint32_t correlation) -> EventRef {
        if (correlation == 0)
            return {};
        auto it = pid == kUnknownPid && byPid.size() == 1 ? byPid.begin() : byPid.find(pid);
        if (it == byPid.end())
            return {};
        return it->second.find(correlation);
    };

    // GPU op -> launching call, in the op's process.
    for (size_t streamIndex = 0; streamIndex < streamPids.size(); ++streamIndex) {
        const uint32_t pid = streamPids[streamIndex];
        for (const uint32_t ti : store.m_streams[streamIndex].gpuTracks) {
            GpuTrack& t = store.m_gpuTracks[ti];
            t.m_launch.resize(t.size());
            for (size_t i = 0; i < t.size(); ++i) {
                if ((i & kCancelCheckMask) == 0 && cancel)
                    throw LoadCancelled();
                t.m_launch[i] = lookup(pid, t.m_correlation[i]);
            }
        }
    }
    // Syncs: CUPTI gives no process; a trace is one process, so use the only one there is.
    for (SyncEvent& s : store.m_syncs)
        s.apiCall = lookup(kUnknownPid, s.correlationId);
    byPid.clear();

    // Call -> GPU ops, as CSR offsets per API track.
    for (ApiTrack& t : store.m_apiTracks)
        t.m_opBegin.assign(t.size() + 1, 0);
    for (uint32_t ti = 0; ti < store.m_gpuTracks.size(); ++ti) {
        for (const EventRef& launch : store.m_gpuTracks[ti].m_launch) {
            if (launch.valid())
                ++store.m_apiTracks[launch.track].m_opBegin[launch.index + 1];
        }
    }
    for (ApiTrack& t : store.m_apiTracks) {
        std::partial_sum(t.m_opBegin.begin(), t.m_opBegin.end(), t.m_opBegin.begin());
        t.m_ops.resize(t.m_opBegin.back());
    }
    // m_opBegin[k] serves as call k's cursor (no copy of the offsets: at 100M events that copy
    // alone was 185 MB of fresh memory); afterwards it holds the ends, shifted back below.
    for (uint32_t ti = 0; ti < store.m_gpuTracks.size(); ++ti) {
        if (cancel)
            throw LoadCancelled();
        const GpuTrack& g = store.m_gpuTracks[ti];
        for (uint32_t i = 0; i < g.size(); ++i) {
            if ((i & kCancelCheckMask) == 0 && cancel)
                throw LoadCancelled();
            const EventRef launch = g.m_launch[i];
            if (launch.valid()) {
                ApiTrack& a = store.m_apiTracks[launch.track];
                a.m_ops[a.m_opBegin[launch.index]++] = EventRef{ti, i};
            }
        }
    }
    for (ApiTrack& t : store.m_apiTracks) {
        for (size_t k = t.m_opBegin.size() - 1; k > 0; --k)
            t.m_opBegin[k] = t.m_opBegin[k - 1];
        t.m_opBegin[0] = 0;
    }
    // A graph launch's kernels come from several streams: order each call's ops by start.
    for (ApiTrack& t : store.m_apiTracks) {
        for (size_t i = 0; i < t.size(); ++i) {
            const uint32_t b = t.m_opBegin[i];
            const uint32_t e = t.m_opBegin[i + 1];
            if (e - b > 1)
                std::stable_sort(t.m_ops.begin() + b, t.m_ops.begin() + e,
                                 [&](const EventRef& x, const EventRef& y) {
                                     return store.m_gpuTracks[x.track].start(x.index) <
                                            store.m_gpuTracks[y.track].start(y.index);
                                 });
        }
    }
    return duplicates;
}

} // namespace warpline::model
