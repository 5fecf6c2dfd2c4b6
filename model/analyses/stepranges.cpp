// NVTX step ranges: which repeated range is a loop's step, and its instances on a thread
// (steps.h). The repeat-based steps and the breakdown are in steps.cpp.
#include "analysishelpers.h"
#include "saturating.h"
#include "steps.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace warpline::model {

namespace {

// Ends counterRanges' key of a name counted by its first run of digits: "recording #…".
constexpr char kLeadingCounterMark[] = "#…";

// [begin, end) of the first run of digits of `name`; empty (begin == end) when it has none or
// the run is longer than a counter's 15 digits.
std::pair<size_t, size_t> firstDigits(const std::string& name) {
    size_t begin = 0;
    while (begin < name.size() && !std::isdigit(static_cast<unsigned char>(name[begin])))
        ++begin;
    size_t end = begin;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end])))
        ++end;
    return end - begin <= 15 ? std::pair{begin, end} : std::pair{begin, begin};
}

// The counter held by the digits [begin, end) of `name` (at most 15), with its sign: "step -3":
// a minus sign after a separator (or at the start) is the counter's own sign; "layer2-3" keeps 3.
std::optional<int64_t> counterAt(const std::string& name, size_t begin, size_t end) {
    if (begin == end || end - begin > 15)
        return std::nullopt;
    const int64_t value = std::stoll(name.substr(begin, end - begin));
    const bool negative =
        begin > 0 && name[begin - 1] == '-' &&
        (begin == 1 || std::string_view(" #=:(").find(name[begin - 2]) != std::string_view::npos);
    return negative ? -value : value;
}

// Fills `out` (threadOfRank sized to the ranks) with key `best`, named `name`: the name ids mapped
// to it, and per rank the thread with the most of its instances (ties: the lower thread index).
// `counts`: pairs of (thread << 32 | key, instances on that thread).
template <typename Counts>
void keepKey(StepRanges& out, const std::string& name, int32_t best,
             const std::vector<int32_t>& keyOf, const Counts& counts,
             const std::vector<uint32_t>& threadSource) {
    out.found = true;
    out.name = name;
    for (NameId id = 0; id < keyOf.size(); ++id) {
        if (keyOf[id] == best)
            out.names.push_back(id);
    }
    std::vector<size_t> most(out.threadOfRank.size(), 0);
    for (const auto& [k, n] : counts) {
        if (static_cast<int32_t>(k & 0xffffffffu) != best)
            continue;
        const auto thread = static_cast<uint32_t>(k >> 32);
        const uint32_t rank = threadSource[thread];
        if (n > most[rank] || (n == most[rank] && thread < out.threadOfRank[rank])) {
            most[rank] = n;
            out.threadOfRank[rank] = thread;
        }
    }
}

// Appends the instances of `sorted` (by start) to `kept`: those that start after the last kept
// one ends, nested or overlapping ones dropped, and those with `joined(last kept, it)` true
// joined into the last kept one (its end extended).
template <typename T, typename Joined>
void keepInstances(const std::vector<T>& sorted, std::vector<T>& kept, Joined joined) {
    for (const T& x : sorted) {
        if (!kept.empty() && joined(kept.back(), x))
            kept.back().end = std::max(kept.back().end, x.end);
        else if (kept.empty() || x.start >= kept.back().end)
            kept.push_back(x);
    }
}

} // namespace

std::vector<uint32_t> threadSources(const TraceStore& store, size_t sourceCount) {
    std::vector<uint32_t> out(store.threads().size(), 0);
    if (sourceCount <= 1)
        return out;
    for (size_t t = 0; t < out.size(); ++t)
        out[t] =
            std::min<uint32_t>(store.threads()[t].source, static_cast<uint32_t>(sourceCount - 1));
    return out;
}

bool hasStepWord(const std::string& name) {
    std::string lower = name;
    for (char& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : {"step", "iter", "batch"}) {
        if (lower.find(word) != std::string::npos)
            return true;
    }
    return false;
}

bool mayBeStepRange(const TraceStore& store, const NvtxTrack& track, size_t i) {
    const NameId domain = track.domain(i);
    if (domain == kNoName || store.text(domain) != "cpu_op")
        return true;
    return store.text(track.name(i)).starts_with("ProfilerStep#");
}

StepRanges findStepRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                          size_t rankCount, const TimeWindow& w) {
    // Name id -> key (index into `keys`), or -1 for a name without a counter.
    std::vector<int32_t> keyOf(store.strings().size(), -2);
    std::vector<std::string> keys;
    std::unordered_map<std::string, int32_t> keyIndex;
    struct KeyStats {
        int64_t time = 0;
        bool numbered = true;  // "step 3"; or a name with a step word alone ("train_step")
        bool repeated = false; // at least two instances on one thread (three unnumbered)
    };
    std::vector<KeyStats> stats;
    // (thread, key) -> instances
    std::unordered_map<uint64_t, uint32_t> perThread;
    std::vector<uint32_t> trackCount;
    std::vector<int32_t> touched;
    for (const NvtxTrack& track : store.nvtxTracks()) {
        if (track.style() == NvtxStyle::Mark)
            continue;
        const IndexRange r = track.startingIn(w.t0, w.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (!mayBeStepRange(store, track, i))
                continue;
            const NameId id = track.name(i);
            int32_t& key = keyOf[id];
            if (key == -2) {
                const std::string& text = store.text(id);
                std::string normalized = normalizedRangeName(text);
                // A name without a counter is a step only by its word: "train_step" around
                // each iteration, not "cub::DeviceRadixSort" around each call of a library.
                const bool numbered = normalized != text;
                if (!numbered && !hasStepWord(text)) {
                    key = -1;
                } else {
                    const auto [it, added] =
                        keyIndex.emplace(std::move(normalized), static_cast<int32_t>(keys.size()));
                    if (added) {
                        keys.push_back(it->first);
                        stats.emplace_back();
                    }
                    stats[it->second].numbered = stats[it->second].numbered && numbered;
                    key = it->second;
                }
            }
            if (key < 0)
                continue;
            if (trackCount.size() <= static_cast<size_t>(key))
                trackCount.resize(keys.size(), 0);
            if (trackCount[key]++ == 0)
                touched.push_back(key);
            accumulate(stats[key].time, track.duration(i));
        }
        for (const int32_t key : touched) {
            const uint64_t k =
                (static_cast<uint64_t>(track.threadIndex()) << 32) | static_cast<uint32_t>(key);
            const uint32_t n = perThread[k] += trackCount[key];
            if (n >= (stats[key].numbered ? 2u : 3u))
                stats[key].repeated = true;
            trackCount[key] = 0;
        }
        touched.clear();
    }
    StepRanges out;
    out.threadOfRank.assign(rankCount, EventRef::kNone);
    const auto rankKey = [&](int32_t k) {
        return std::make_tuple(hasStepWord(keys[k]), stats[k].time);
    };
    int32_t best = -1;
    for (int32_t k = 0; k < static_cast<int32_t>(keys.size()); ++k) {
        if (!stats[k].repeated)
            continue;
        if (best < 0 || rankKey(k) > rankKey(best) ||
            (rankKey(k) == rankKey(best) && keys[k] < keys[best]))
            best = k;
    }
    if (best < 0)
        return out;
    keepKey(out, keys[best], best, keyOf, perThread, threadSource);
    std::vector<int32_t> others;
    for (int32_t k = 0; k < static_cast<int32_t>(keys.size()); ++k) {
        if (k != best && stats[k].repeated && hasStepWord(keys[k]))
            others.push_back(k);
    }
    std::sort(others.begin(), others.end(), [&](int32_t a, int32_t b) {
        return stats[a].time != stats[b].time ? stats[a].time > stats[b].time : keys[a] < keys[b];
    });
    others.resize(std::min<size_t>(others.size(), 4));
    for (const int32_t k : others) {
        std::vector<NameId>& names = out.others.emplace_back();
        for (NameId id = 0; id < keyOf.size(); ++id) {
            if (keyOf[id] == k)
                names.push_back(id);
        }
    }
    return out;
}

// "layer_2" recurs every step: its counters are not distinct; a checkpoint every 100 steps covers
// little of its span.
StepRanges counterRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                         size_t rankCount) {
    constexpr size_t kMinCounted = 8;
    // Two keys a name: every run of digits replaced, the counter the last ("tenant#/req#"); and,
    // when a label follows the first run of digits, the name up to it, the counter that first run
    // ("recording 17 CardioMem-5": "recording #…", counter 17, the recorder's model aside).
    std::vector<int32_t> keyOf(store.strings().size(), -2);
    std::vector<int32_t> leadingKeyOf(store.strings().size(), -1);
    std::vector<int64_t> numberOf(store.strings().size(), 0); // of the names with a key
    std::vector<int64_t> leadingNumberOf(store.strings().size(), 0);
    std::vector<std::string> keys;
    std::unordered_map<std::string, int32_t> keyIndex;
    const auto keyFor = [&](std::string k) {
        const auto [it, added] = keyIndex.emplace(std::move(k), static_cast<int32_t>(keys.size()));
        if (added)
            keys.push_back(it->first);
        return it->second;
    };
    struct Instance {
        int64_t start, end, number;
    };
    // (thread, key) -> its instances
    std::unordered_map<uint64_t, std::vector<Instance>> perThread;
    for (const NvtxTrack& track : store.nvtxTracks()) {
        if (track.style() == NvtxStyle::Mark)
            continue;
        for (size_t i = 0; i < track.size(); ++i) {
            const NameId id = track.name(i);
            if (id >= keyOf.size() || !mayBeStepRange(store, track, i))
                continue;
            int32_t& key = keyOf[id];
            if (key == -2) {
                key = -1;
                const std::string& text = store.text(id);
                const std::optional<int64_t> number = trailingNumber(text);
                if (number && std::isdigit(static_cast<unsigned char>(text.back()))) {
                    numberOf[id] = *number;
                    std::string k;
                    for (const char c : text) {
                        if (!std::isdigit(static_cast<unsigned char>(c)))
                            k += c;
                        else if (k.empty() || k.back() != '#')
                            k += '#';
                    }
                    key = keyFor(std::move(k));
                }
                const auto [first, afterFirst] = firstDigits(text);
                if (const std::optional<int64_t> leading = counterAt(text, first, afterFirst);
                    leading && afterFirst < text.size()) {
                    leadingNumberOf[id] = *leading;
                    leadingKeyOf[id] = keyFor(text.substr(0, first) + kLeadingCounterMark);
                }
            }
            const uint64_t thread = static_cast<uint64_t>(track.threadIndex()) << 32;
            if (key >= 0)
                perThread[thread | static_cast<uint32_t>(key)].push_back(
                    {track.start(i), track.end(i), numberOf[id]});
            if (leadingKeyOf[id] >= 0)
                perThread[thread | static_cast<uint32_t>(leadingKeyOf[id])].push_back(
                    {track.start(i), track.end(i), leadingNumberOf[id]});
        }
    }
    std::vector<int64_t> keyTime(keys.size(), 0);
    std::vector<std::pair<uint64_t, size_t>> loops; // (thread, key), instances
    for (auto& [k, instances] : perThread) {
        std::sort(instances.begin(), instances.end(),
                  [](const Instance& a, const Instance& b) { return a.start < b.start; });
        // Under a leading counter, the ranges one after another with the same counter are one
        // instance: "it03.rollout" then "it03.update" is iteration 3.
        const bool leading = keys[k & 0xffffffffu].ends_with(kLeadingCounterMark);
        std::vector<Instance> kept;
        keepInstances(instances, kept, [&](const Instance& last, const Instance& x) {
            return leading && x.number == last.number;
        });
        if (kept.size() < kMinCounted)
            continue;
        std::vector<int64_t> numbers;
        size_t rising = 0;
        int64_t covered = 0;
        for (size_t j = 0; j < kept.size(); ++j) {
            numbers.push_back(kept[j].number);
            rising += j > 0 && kept[j].number > kept[j - 1].number;
            accumulate(covered, kept[j].end - kept[j].start);
        }
        std::sort(numbers.begin(), numbers.end());
        const auto distinct =
            static_cast<size_t>(std::unique(numbers.begin(), numbers.end()) - numbers.begin());
        const int64_t span = kept.back().end - kept.front().start;
        if (10 * distinct < 9 * kept.size() || 10 * rising < 9 * (kept.size() - 1) ||
            2 * covered < span)
            continue;
        accumulate(keyTime[k & 0xffffffffu], covered);
        loops.emplace_back(k, kept.size());
    }
    StepRanges out;
    out.threadOfRank.assign(rankCount, EventRef::kNone);
    int32_t best = -1;
    for (int32_t k = 0; k < static_cast<int32_t>(keys.size()); ++k) {
        if (keyTime[k] > 0 && (best < 0 || keyTime[k] > keyTime[best]))
            best = k;
    }
    if (best < 0)
        return out;
    out.leadingCounter = keys[best].ends_with(kLeadingCounterMark);
    if (out.leadingCounter) {
        // keepKey maps names by keyOf: here, the names whose first counter is the key's.
        for (NameId id = 0; id < keyOf.size(); ++id)
            keyOf[id] = leadingKeyOf[id] == best ? best : -1;
    }
    std::string name = keys[best];
    if (out.leadingCounter) {
        // Named as the program names the loop: "recording", not "recording #…".
        name.resize(withoutCounterSeparators(
            name, name.size() - std::string_view(kLeadingCounterMark).size()));
        if (name.empty())
            name = keys[best];
    }
    keepKey(out, name, best, keyOf, loops, threadSource);
    return out;
}

StepRanges loopRanges(const TraceStore& store, const std::vector<uint32_t>& threadSource,
                      size_t rankCount) {
    constexpr size_t kMinCounted = 8;
    // (thread, name) -> its outermost instances
    std::unordered_map<uint64_t, std::vector<std::pair<int64_t, int64_t>>> perThread;
    std::vector<int8_t> plain(store.strings().size(), -1); // -1: not looked at yet
    for (const NvtxTrack& track : store.nvtxTracks()) {
        if (track.style() == NvtxStyle::Mark ||
            (track.style() == NvtxStyle::PushPop && track.depth() > 0))
            continue;
        for (size_t i = 0; i < track.size(); ++i) {
            const NameId id = track.name(i);
            if (id >= plain.size() || !mayBeStepRange(store, track, i))
                continue;
            if (plain[id] < 0) {
                const std::string& text = store.text(id);
                plain[id] = normalizedRangeName(text) == text && !hasStepWord(text) ? 1 : 0;
            }
            if (plain[id] == 1)
                perThread[(static_cast<uint64_t>(track.threadIndex()) << 32) | id].emplace_back(
                    track.start(i), track.end(i));
        }
    }
    std::vector<int64_t> nameTime(store.strings().size(), 0);
    std::vector<std::pair<uint64_t, size_t>> loops; // (thread, name), instances
    // Names per thread: the periodic extras below are looked for among at most kMaxExtraNames
    // (a program annotates its loop with a few names; a file with thousands would make the
    // search quadratic).
    constexpr size_t kMaxExtraNames = 64;
    std::unordered_map<uint64_t, std::vector<const std::vector<std::pair<int64_t, int64_t>>*>>
        namesOnThread;
    for (auto& [k, instances] : perThread) {
        std::sort(instances.begin(), instances.end());
        namesOnThread[k >> 32].push_back(&instances);
    }
    for (auto& [k, instances] : perThread) {
        if (instances.size() < kMinCounted)
            continue;
        size_t kept = 0;
        int64_t covered = 0, lastEnd = std::numeric_limits<int64_t>::min();
        for (const auto& [start, end] : instances) {
            if (start < lastEnd)
                continue;
            ++kept;
            accumulate(covered, end - start);
            lastEnd = end;
        }
        const int64_t span = lastEnd - instances.front().first;
        // Ranges of other names on the thread between them, each name at most half as often
        // (a dump every 8 blocks, an evaluation every N steps), are the loop's periodic extras:
        // their time counts as covered, and they join the step before them.
        const auto& others = namesOnThread[k >> 32];
        for (const auto* extras : others) {
            if (others.size() > kMaxExtraNames || extras == &instances ||
                2 * extras->size() > instances.size())
                continue;
            for (const auto& [start, end] : *extras) {
                // Only between two of them: a range around the loop (an epoch) or overlapping
                // an instance is not an extra of the loop.
                const auto next = std::lower_bound(instances.begin(), instances.end(),
                                                   std::pair<int64_t, int64_t>{start, start});
                if (next == instances.begin() || next == instances.end() || next->first < end ||
                    std::prev(next)->second > start)
                    continue;
                accumulate(covered, end - start);
            }
        }
        if (kept < kMinCounted || 10 * static_cast<double>(covered) < 9 * static_cast<double>(span))
            continue;
        accumulate(nameTime[k & 0xffffffffu], covered);
        loops.emplace_back(k, kept);
    }
    StepRanges out;
    out.threadOfRank.assign(rankCount, EventRef::kNone);
    NameId best = kNoName;
    for (NameId id = 0; id < nameTime.size(); ++id) {
        if (nameTime[id] > 0 && (best == kNoName || nameTime[id] > nameTime[best]))
            best = id;
    }
    if (best == kNoName)
        return out;
    // keepKey's keys are indices: the name id is its own key.
    std::vector<int32_t> keyOf(store.strings().size(), -1);
    keyOf[best] = static_cast<int32_t>(best);
    keepKey(out, store.text(best), static_cast<int32_t>(best), keyOf, loops, threadSource);
    return out;
}

std::optional<int64_t> leadingNumber(const std::string& name) {
    const auto [begin, end] = firstDigits(name);
    return counterAt(name, begin, end);
}

std::optional<int64_t> trailingNumber(const std::string& name) {
    size_t end = name.size();
    while (end > 0 && !std::isdigit(static_cast<unsigned char>(name[end - 1])))
        --end;
    size_t begin = end;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1])))
        --begin;
    return counterAt(name, begin, end);
}

std::vector<StepRange> stepRangesOn(const TraceStore& store, const StepRanges& ranges,
                                    uint32_t thread, const TimeWindow& w) {
    std::vector<StepRange> steps;
    for (const uint32_t t : store.threads()[thread].nvtxTracks) {
        const NvtxTrack& track = store.nvtxTracks()[t];
        if (track.style() == NvtxStyle::Mark)
            continue;
        const IndexRange r = track.startingIn(w.t0, w.t1);
        for (size_t i = r.first; i < r.last; ++i) {
            if (std::binary_search(ranges.names.begin(), ranges.names.end(), track.name(i)) &&
                mayBeStepRange(store, track, i)) {
                StepRange s;
                s.start = track.start(i);
                s.end = track.end(i);
                const std::string& text = store.text(track.name(i));
                s.number = ranges.leadingCounter ? leadingNumber(text) : trailingNumber(text);
                s.range = EventRef{t, static_cast<uint32_t>(i)};
                steps.push_back(s);
            }
        }
    }
    std::sort(steps.begin(), steps.end(), [](const StepRange& a, const StepRange& b) {
        return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<StepRange> kept;
    kept.reserve(steps.size());
    // One step of consecutive ranges with the same leading counter (counterRanges).
    keepInstances(steps, kept, [&](const StepRange& last, const StepRange& s) {
        return ranges.leadingCounter && s.number && s.number == last.number;
    });
    return kept;
}

} // namespace warpline::model
