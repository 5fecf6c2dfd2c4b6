#pragma once

// TraceStrings: a trace's StringIds table, and the store's names its ids become. The readers hand
// it the rows of StringIds (add(), then indexDense()); name(id) interns an id's text into the
// store's StringTable the first time it is asked for, so a string nothing refers to costs no
// name. An id StringIds lacks becomes "<unknown string ID>" and is counted (missing()). The
// loader's (traceloader.cpp) only, not an interface of the model.
//
// Invariants: one id always gives the same NameId; ids below indexDense()'s bound are looked up in
// an array (Warpline and nsys count them from 0 or 1), the rest in a hash map.
// Cost: name() of a known dense id is an array read; the first use of an id, a hash lookup and an
// intern.
// Thread affinity: the loading thread only (interning is not thread-safe).

#include "stringtable.h"

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpline::model {

// An id not (yet) resolved, in the loader's dense id tables (StringIds ids, config ids).
inline constexpr NameId kUnresolved = std::numeric_limits<NameId>::max();

class TraceStrings {
public:
    // Names go into `names`, the store's table, which must outlive this.
    explicit TraceStrings(StringTable& names) : m_names(names) {}

    // A row of StringIds; later rows of the same id are ignored.
    void add(int64_t id, std::string text) { m_raw.emplace(id, std::move(text)); }
    // After the last add(): ids 0..maxId are dense, when maxId is below 2^24.
    void indexDense(int64_t maxId);
    // Forgets StringIds' texts once no more ids will be asked for (the names stay).
    void dropTexts() { m_raw.clear(); }

    // The name of a StringIds id.
    NameId name(int64_t id) {
        if (id >= 0 && static_cast<uint64_t>(id) < m_dense.size() &&
            m_dense[static_cast<size_t>(id)] != kUnresolved)
            return m_dense[static_cast<size_t>(id)];
        return resolve(id);
    }
    // The name of an API call's StringIds id as nsys stats shows it (apiDisplayName).
    NameId apiName(int64_t id);

    // Text the file holds in place (NVTX text, process and GPU names), interned as it is.
    NameId intern(std::string_view text) { return m_names.intern(text); }
    const std::string& text(NameId name) const { return m_names.text(name); }

    // Distinct ids asked for that StringIds lacks.
    uint64_t missing() const { return m_missing; }

private:
    NameId resolve(int64_t id);

    StringTable& m_names;
    std::unordered_map<int64_t, std::string> m_raw; // StringIds, until interned
    std::unordered_map<int64_t, NameId> m_sparse;   // ids beyond m_dense
    std::vector<NameId> m_dense;                    // StringIds id -> name, or kUnresolved
    std::unordered_map<int64_t, NameId> m_apiNames;
    uint64_t m_missing = 0;
};

} // namespace warpline::model
