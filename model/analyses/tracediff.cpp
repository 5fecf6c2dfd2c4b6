#include "tracediff.h"

#include "analysishelpers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>

namespace warpline::model {

namespace {

using Groups = std::map<std::string, DurationStats>;

std::string nvtxKey(const TraceStore& store, NameId domain, NameId name, NvtxStyle style) {
    std::string key =
        domain == kNoName ? store.text(name) : store.text(domain) + ":" + store.text(name);
    if (style == NvtxStyle::StartEnd)
        key += " (StartEnd)";
    return key;
}

bool inWindow(const TimeWindow& w, int64_t t) {
    return t >= w.t0 && t < w.t1;
}

// Instances of one NVTX range name, merged per thread: "was this started inside the range?".
class RangeScope {
public:
    RangeScope(const TraceStore& store, const std::string& range)
        : m_byThread(store.threads().size()) {
        const NameId id = store.strings().find(range);
        for (const NvtxTrack& track : store.nvtxTracks()) {
            if (track.style() == NvtxStyle::Mark || id == kNoName)
                continue;
            for (size_t i = 0; i < track.size(); ++i) {
                if (track.name(i) == id)
                    m_byThread[track.threadIndex()].push_back({track.start(i), track.end(i)});
            }
        }
        bool any = false;
        for (auto& spans : m_byThread) {
            mergeSpans(spans);
            any |= !spans.empty();
        }
        if (!any)
            throw DiffScopeError("no NVTX range named \"" + range + "\" in " + store.path());
        m_name = id;
    }

    NameId name() const { return m_name; }

    bool contains(uint32_t thread, int64_t t) const {
        const auto& spans = m_byThread[thread];
        auto it = std::upper_bound(spans.begin(), spans.end(), t,
                                   [](int64_t v, const auto& s) { return v < s.first; });
        return it != spans.begin() && t < std::prev(it)->second;
    }

private:
    std::vector<std::vector<std::pair<int64_t, int64_t>>> m_byThread;
    NameId m_name = kNoName;
};

Groups scopedGroups(const TraceStore& store, DiffSubject subject, const DiffScope& scope) {
    const RangeScope range(store, scope.nvtxRange);
    Groups groups;
    if (subject == DiffSubject::Kernels) {
        std::unordered_map<NameId, std::vector<int64_t>> values;
        for (const GpuTrack& track : store.gpuTracks()) {
            for (size_t i = 0; i < track.size(); ++i) {
                const EventRef call = track.launch(i);
                if (track.kind(i) != GpuOpKind::Kernel || !call.valid() ||
                    !inWindow(scope.window, track.start(i)))
                    continue;
                const ApiTrack& api = store.apiTracks()[call.track];
                if (range.contains(api.threadIndex(), api.start(call.index)))
                    values[track.name(i)].push_back(track.duration(i));
            }
        }
        for (auto& [name, durations] : values)
            groups[store.text(name)] = DurationStats::compute(durations);
    } else if (subject == DiffSubject::Api) {
        std::unordered_map<NameId, std::vector<int64_t>> values;
        for (const ApiTrack& track : store.apiTracks()) {
            for (size_t i = 0; i < track.size(); ++i) {
                if (inWindow(scope.window, track.start(i)) &&
                    range.contains(track.threadIndex(), track.start(i)))
                    values[track.name(i)].push_back(track.duration(i));
            }
        }
        for (auto& [name, durations] : values)
            groups[store.text(name)] = DurationStats::compute(durations);
    } else {
        std::map<std::tuple<NameId, NameId, NvtxStyle>, std::vector<int64_t>> values;
        for (const NvtxTrack& track : store.nvtxTracks()) {
            if (track.style() == NvtxStyle::Mark)
                continue;
            for (size_t i = 0; i < track.size(); ++i) {
                if (track.name(i) != range.name() && inWindow(scope.window, track.start(i)) &&
                    range.contains(track.threadIndex(), track.start(i)))
                    values[{track.domain(i), track.name(i), track.style()}].push_back(
                        track.duration(i));
            }
        }
        for (auto& [key, durations] : values) {
            const auto& [domain, name, style] = key;
            groups[nvtxKey(store, domain, name, style)] = DurationStats::compute(durations);
        }
    }
    return groups;
}

Groups summaryGroups(const TraceStore& store, DiffSubject subject, const DiffScope& scope) {
    if (!scope.nvtxRange.empty())
        return scopedGroups(store, subject, scope);
    Groups groups;
    switch (subject) {
    case DiffSubject::Kernels:
        for (const KernelSummaryRow& row : kernelSummary(store, KernelGrouping::Name, scope.window))
            groups[store.text(row.name)] = row.stats;
        break;
    case DiffSubject::Api:
        for (const ApiSummaryRow& row : apiSummary(store, scope.window))
            groups[store.text(row.name)] = row.stats;
        break;
    case DiffSubject::Nvtx:
        for (const NvtxSummaryRow& row : nvtxSummary(store, scope.window))
            groups[nvtxKey(store, row.domain, row.name, row.style)] = row.stats;
        break;
    }
    return groups;
}

} // namespace

std::optional<DiffSubject> parseDiffSubject(std::string_view name) {
    if (name == "kernels")
        return DiffSubject::Kernels;
    if (name == "api")
        return DiffSubject::Api;
    if (name == "nvtx")
        return DiffSubject::Nvtx;
    return std::nullopt;
}

const char* diffStatusName(DiffStatus status) {
    switch (status) {
    case DiffStatus::Unchanged:
        return "unchanged";
    case DiffStatus::Faster:
        return "faster";
    case DiffStatus::Slower:
        return "slower";
    case DiffStatus::Added:
        return "added";
    case DiffStatus::Removed:
        return "removed";
    }
    return "";
}

std::vector<TraceDiffRow> diffTraces(const TraceStore& a, const TraceStore& b, DiffSubject subject,
                                     const DiffOptions& options) {
    const Groups before = summaryGroups(a, subject, options.a);
    const Groups after = summaryGroups(b, subject, options.b);
    std::vector<TraceDiffRow> rows;
    auto ia = before.begin();
    auto ib = after.begin();
    while (ia != before.end() || ib != after.end()) {
        TraceDiffRow row;
        if (ib == after.end() || (ia != before.end() && ia->first < ib->first)) {
            row.name = ia->first;
            row.a = (ia++)->second;
            row.status = DiffStatus::Removed;
        } else if (ia == before.end() || ib->first < ia->first) {
            row.name = ib->first;
            row.b = (ib++)->second;
            row.status = DiffStatus::Added;
        } else {
            row.name = ia->first;
            row.a = (ia++)->second;
            row.b = (ib++)->second;
            row.ratio = row.a.average > 0 ? row.b.average / row.a.average : 1.0;
            if (std::abs(row.ratio - 1.0) <= options.tolerance)
                row.status = DiffStatus::Unchanged;
            else
                row.status = row.ratio < 1.0 ? DiffStatus::Faster : DiffStatus::Slower;
        }
        row.timeAtStake = row.b.total - row.a.total;
        rows.push_back(std::move(row));
    }
    std::stable_sort(rows.begin(), rows.end(), [](const TraceDiffRow& x, const TraceDiffRow& y) {
        return std::abs(x.timeAtStake) > std::abs(y.timeAtStake);
    });
    return rows;
}

Table traceDiffTable(const std::vector<TraceDiffRow>& rows) {
    using A = Column::Align;
    Table table({{"Status", A::Left, 0},
                 {"Time at Stake (ns)", A::Right, 0},
                 {"Ratio (B/A)", A::Right, 3},
                 {"Count A", A::Right, 0},
                 {"Count B", A::Right, 0},
                 {"Total A (ns)", A::Right, 0},
                 {"Total B (ns)", A::Right, 0},
                 {"Avg A (ns)", A::Right, 1},
                 {"Avg B (ns)", A::Right, 1},
                 {"Name", A::Left, 0}});
    for (const TraceDiffRow& row : rows) {
        const bool inA = row.a.count > 0;
        const bool inB = row.b.count > 0;
        std::vector<Cell> cells;
        cells.emplace_back(std::string(diffStatusName(row.status)));
        cells.emplace_back(row.timeAtStake);
        cells.push_back(inA && inB ? Cell(row.ratio) : Cell());
        cells.push_back(inA ? Cell(static_cast<int64_t>(row.a.count)) : Cell());
        cells.push_back(inB ? Cell(static_cast<int64_t>(row.b.count)) : Cell());
        cells.push_back(inA ? Cell(row.a.total) : Cell());
        cells.push_back(inB ? Cell(row.b.total) : Cell());
        cells.push_back(inA ? Cell(row.a.average) : Cell());
        cells.push_back(inB ? Cell(row.b.average) : Cell());
        cells.emplace_back(row.name);
        table.addRow(std::move(cells));
    }
    return table;
}

} // namespace warpline::model
