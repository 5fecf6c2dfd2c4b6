#include "timeline/highlightset.h"

#include <algorithm>

namespace warpline::views {

HighlightSet::HighlightSet(std::vector<model::EventId> events, QString description)
    : m_events(std::move(events)), m_description(std::move(description)) {
    for (const model::EventId& e : m_events)
        m_byTrack[{e.family, e.ref.track}].push_back(e.ref.index);
    for (auto& [key, indices] : m_byTrack)
        std::sort(indices.begin(), indices.end());
}

const std::vector<uint32_t>& HighlightSet::onTrack(model::EventFamily family,
                                                   uint32_t track) const {
    static const std::vector<uint32_t> none;
    const auto it = m_byTrack.find({family, track});
    return it == m_byTrack.end() ? none : it->second;
}

bool HighlightSet::anyIn(model::EventFamily family, uint32_t track, size_t first,
                         size_t last) const {
    const std::vector<uint32_t>& indices = onTrack(family, track);
    const auto it = std::lower_bound(indices.begin(), indices.end(), first);
    return it != indices.end() && *it < last;
}

bool HighlightSet::contains(const model::EventId& event) const {
    return anyIn(event.family, event.ref.track, event.ref.index, size_t{event.ref.index} + 1);
}

bool HighlightSet::hasFamily(model::EventFamily family) const {
    return std::any_of(m_byTrack.begin(), m_byTrack.end(),
                       [family](const auto& entry) { return entry.first.first == family; });
}

} // namespace warpline::views
