#pragma once

// StringTable: interned strings addressed by NameId. Id 0 is the empty string. Ids are dense
// (0 .. size()-1) and stable for the life of the table; interning the same text twice returns the
// same id. Not thread-safe while interning; read-only use from many threads is safe.

#include "tracetypes.h"

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>

namespace warpline::model {

class StringTable {
public:
    StringTable();
    StringTable(const StringTable&) = delete;
    StringTable& operator=(const StringTable&) = delete;
    StringTable(StringTable&&) noexcept;
    StringTable& operator=(StringTable&&) noexcept;

    NameId intern(std::string_view text);
    // The id of text, or kNoName when it was never interned (and text is not empty).
    NameId find(std::string_view text) const;
    const std::string& text(NameId id) const { return m_strings[id]; }
    size_t size() const { return m_strings.size(); }

private:
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    // deque: references (and the string_views keying m_index) stay valid as it grows.
    std::deque<std::string> m_strings;
    std::unordered_map<std::string_view, NameId, Hash, std::equal_to<>> m_index;
};

} // namespace warpline::model
