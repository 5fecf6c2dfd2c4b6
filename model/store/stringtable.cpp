#include "stringtable.h"

namespace warpline::model {

StringTable::StringTable() {
    m_strings.emplace_back();
    m_index.emplace(std::string_view(m_strings.front()), kNoName);
}

// Moving a deque moves its blocks, not its strings, so the views in m_index stay valid.
StringTable::StringTable(StringTable&&) noexcept = default;
StringTable& StringTable::operator=(StringTable&&) noexcept = default;

NameId StringTable::intern(std::string_view text) {
    if (const auto it = m_index.find(text); it != m_index.end())
        return it->second;
    const auto id = static_cast<NameId>(m_strings.size());
    m_strings.emplace_back(text);
    m_index.emplace(std::string_view(m_strings.back()), id);
    return id;
}

NameId StringTable::find(std::string_view text) const {
    const auto it = m_index.find(text);
    return it == m_index.end() ? kNoName : it->second;
}

} // namespace warpline::model
