#include "tracestrings.h"

#include "apitrack.h"

namespace warpline::model {

void TraceStrings::indexDense(int64_t maxId) {
    // Ids are dense in practice (Warpline and nsys count from 0 or 1): an array beats a hash.
    if (maxId >= 0 && maxId < (int64_t(1) << 24))
        m_dense.assign(static_cast<size_t>(maxId) + 1, kUnresolved);
}

NameId TraceStrings::resolve(int64_t id) {
    const bool dense = id >= 0 && static_cast<uint64_t>(id) < m_dense.size();
    const auto known = m_sparse.find(id);
    if (known != m_sparse.end())
        return known->second;
    const auto raw = m_raw.find(id);
    if (raw == m_raw.end())
        ++m_missing;
    const NameId name = raw == m_raw.end()
                            ? m_names.intern("<unknown string " + std::to_string(id) + ">")
                            : m_names.intern(raw->second);
    if (dense)
        m_dense[static_cast<size_t>(id)] = name;
    else
        m_sparse.emplace(id, name);
    return name;
}

NameId TraceStrings::apiName(int64_t id) {
    const auto known = m_apiNames.find(id);
    if (known != m_apiNames.end())
        return known->second;
    const std::string full = m_names.text(name(id));
    const NameId display = m_names.intern(apiDisplayName(full));
    m_apiNames.emplace(id, display);
    return display;
}

} // namespace warpline::model
