#pragma once

// HighlightSet: the events the timeline marks (a kernel-summary row's instances, find matches),
// in the order next/previous steps through them (by start), and per track as sorted indices so
// painting asks "is any highlighted event in [first, last)?" with one binary search.

#include "eventid.h"
#include "tracestore.h"

#include <QString>
#include <map>
#include <utility>
#include <vector>

namespace warpline::views {

class HighlightSet {
public:
    HighlightSet() = default;
    // `events` sorted by start (EventSearch's order).
    HighlightSet(std::vector<model::EventId> events, QString description);

    bool empty() const { return m_events.empty(); }
    size_t size() const { return m_events.size(); }
    const model::EventId& at(size_t i) const { return m_events[i]; }
    const std::vector<model::EventId>& events() const { return m_events; }
    const QString& description() const { return m_description; }

    // Sorted indices of the highlighted events on one track (empty when none).
    const std::vector<uint32_t>& onTrack(model::EventFamily family, uint32_t track) const;
    // Whether a highlighted event of the track has an index in [first, last).
    bool anyIn(model::EventFamily family, uint32_t track, size_t first, size_t last) const;
    bool contains(const model::EventId& event) const;
    bool hasFamily(model::EventFamily family) const;

private:
    std::vector<model::EventId> m_events;
    QString m_description;
    std::map<std::pair<model::EventFamily, uint32_t>, std::vector<uint32_t>> m_byTrack;
};

} // namespace warpline::views
