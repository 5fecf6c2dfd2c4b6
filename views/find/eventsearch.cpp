#include "find/eventsearch.h"

#include "sourcelines.h"

#include <algorithm>
#include <unordered_map>

namespace warpline::views {

namespace {

// Events collected track by track are sorted within each track (tracks are sorted by start);
// merging the runs pairwise is O(n log tracks), cheaper than sorting millions of events.
void mergeRunsByStart(const model::TraceStore& store, std::vector<model::EventId>& events) {
    std::vector<size_t> bounds{0};
    for (size_t i = 1; i < events.size(); ++i) {
        if (events[i].family != events[i - 1].family ||
            events[i].ref.track != events[i - 1].ref.track)
            bounds.push_back(i);
    }
    bounds.push_back(events.size());
    const auto earlier = [&](const model::EventId& a, const model::EventId& b) {
        return model::eventStart(store, a) < model::eventStart(store, b);
    };
    while (bounds.size() > 2) {
        std::vector<size_t> merged{0};
        for (size_t r = 0; r + 2 < bounds.size(); r += 2) {
            std::inplace_merge(events.begin() + static_cast<std::ptrdiff_t>(bounds[r]),
                               events.begin() + static_cast<std::ptrdiff_t>(bounds[r + 1]),
                               events.begin() + static_cast<std::ptrdiff_t>(bounds[r + 2]),
                               earlier);
            merged.push_back(bounds[r + 2]);
        }
        if (merged.back() != events.size())
            merged.push_back(events.size());
        bounds = std::move(merged);
    }
}

} // namespace

model::NameId EventSearch::nameOf(const model::TraceStore& store, const model::EventId& e) {
    switch (e.family) {
    case model::EventFamily::Api:
        return store.apiTracks()[e.ref.track].name(e.ref.index);
    case model::EventFamily::Nvtx:
        return store.nvtxTracks()[e.ref.track].name(e.ref.index);
    case model::EventFamily::Gpu:
        return store.gpuTracks()[e.ref.track].name(e.ref.index);
    case model::EventFamily::None:
        break;
    }
    return model::kNoName;
}

std::vector<model::EventId> EventSearch::gpuOpsWithNames(const model::TraceStore& store,
                                                         const std::vector<bool>& nameMatches) {
    std::vector<model::EventId> out;
    for (uint32_t t = 0; t < store.gpuTracks().size(); ++t) {
        const model::GpuTrack& track = store.gpuTracks()[t];
        for (size_t i = 0; i < track.size(); ++i) {
            const model::NameId name = track.name(i);
            if (name < nameMatches.size() && nameMatches[name])
                out.push_back(model::EventId::gpu({t, static_cast<uint32_t>(i)}));
        }
    }
    mergeRunsByStart(store, out);
    return out;
}

std::vector<model::EventId> EventSearch::gpuOpsNamed(const model::TraceStore& store,
                                                     model::NameId name) {
    std::vector<bool> matches(store.strings().size(), false);
    if (name < matches.size())
        matches[name] = true;
    return gpuOpsWithNames(store, matches);
}

std::vector<model::EventId> EventSearch::apiCallsNamed(const model::TraceStore& store,
                                                       model::NameId name) {
    std::vector<model::EventId> out;
    for (uint32_t t = 0; t < store.apiTracks().size(); ++t) {
        const model::ApiTrack& track = store.apiTracks()[t];
        for (size_t i = 0; i < track.size(); ++i) {
            if (track.name(i) == name)
                out.push_back(model::EventId::api({t, static_cast<uint32_t>(i)}));
        }
    }
    mergeRunsByStart(store, out);
    return out;
}

namespace {

bool contains(const std::string& s, const QString& needle) {
    return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()))
        .contains(needle, Qt::CaseInsensitive);
}

// Per NameId, whether the string contains `needle`; `any` tells whether one does.
std::vector<bool> namesContaining(const model::TraceStore& store, const QString& needle,
                                  bool& any) {
    std::vector<bool> matches(store.strings().size(), false);
    any = false;
    for (size_t id = 1; id < store.strings().size(); ++id) {
        if (contains(store.strings().text(static_cast<model::NameId>(id)), needle)) {
            matches[id] = true;
            any = true;
        }
    }
    return matches;
}

} // namespace

std::vector<model::EventId> EventSearch::gpuOpsMatching(const model::TraceStore& store,
                                                        const QString& text) {
    if (text.trimmed().isEmpty())
        return {};
    bool any = false;
    const std::vector<bool> matches = namesContaining(store, text.trimmed(), any);
    return any ? gpuOpsWithNames(store, matches) : std::vector<model::EventId>{};
}

std::vector<model::EventId> EventSearch::eventsMatching(const model::TraceStore& store,
                                                        const QString& text) {
    const QString needle = text.trimmed();
    if (needle.isEmpty())
        return {};
    bool any = false;
    const std::vector<bool> named = namesContaining(store, needle, any);
    const auto nameMatches = [&](model::NameId id) { return id < named.size() && named[id]; };
    std::vector<model::EventId> out =
        any ? gpuOpsWithNames(store, named) : std::vector<model::EventId>{};
    // A stack matches when one of its frames does; stacks are shared by many calls, so each is
    // judged once (by the address of its frames in the store).
    std::unordered_map<const model::CallFrame*, bool> stackMatches;
    const auto stackMatch = [&](std::span<const model::CallFrame> frames) {
        if (frames.empty())
            return false;
        const auto [it, inserted] = stackMatches.emplace(frames.data(), false);
        if (inserted) {
            it->second = std::any_of(frames.begin(), frames.end(), [&](const model::CallFrame& f) {
                return nameMatches(f.function) || nameMatches(f.file) ||
                       (f.line > 0 &&
                        contains(model::sourceLocation(store, f.file, f.line), needle));
            });
        }
        return it->second;
    };
    const bool stacks = !store.callchains().empty();
    for (uint32_t t = 0; t < store.apiTracks().size(); ++t) {
        const model::ApiTrack& track = store.apiTracks()[t];
        for (size_t i = 0; i < track.size(); ++i) {
            const model::EventRef ref{t, static_cast<uint32_t>(i)};
            if (nameMatches(track.name(i)) || (stacks && stackMatch(store.callStack(ref))))
                out.push_back(model::EventId::api(ref));
        }
    }
    if (any) {
        for (uint32_t t = 0; t < store.nvtxTracks().size(); ++t) {
            const model::NvtxTrack& track = store.nvtxTracks()[t];
            for (size_t i = 0; i < track.size(); ++i) {
                if (nameMatches(track.name(i)))
                    out.push_back(model::EventId::nvtx({t, static_cast<uint32_t>(i)}));
            }
        }
    }
    mergeRunsByStart(store, out);
    return out;
}

EventSearch::Dominant EventSearch::dominantName(const model::TraceStore& store,
                                                model::EventFamily family, uint32_t track,
                                                size_t first, size_t last, size_t maxVisits) {
    Dominant best;
    if (first >= last || family == model::EventFamily::None)
        return best;
    const size_t step = std::max<size_t>(1, (last - first + maxVisits - 1) / maxVisits);
    std::unordered_map<model::NameId, double> time;
    double total = 0;
    for (size_t i = first; i < last; i += step) {
        const model::EventId e{family, {track, static_cast<uint32_t>(i)}};
        // Zero-length events (marks) count as 1 ns so that they are counted at all.
        const double d = static_cast<double>(
            std::max<int64_t>(1, model::eventEnd(store, e) - model::eventStart(store, e)));
        time[nameOf(store, e)] += d;
        total += d;
    }
    for (const auto& [name, t] : time) {
        if (t > best.share || (t == best.share && name < best.name)) {
            best.name = name;
            best.share = t;
        }
    }
    best.share = total > 0 ? best.share / total : 0;
    return best;
}

} // namespace warpline::views
