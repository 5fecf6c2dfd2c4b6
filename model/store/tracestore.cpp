#include "tracestore.h"

#include <algorithm>
#include <charconv>
#include <filesystem>

namespace warpline::model {

std::string TraceSource::label() const {
    if (rank >= 0)
        return "rank " + std::to_string(rank);
    return std::filesystem::path(path).filename().string();
}

std::optional<int64_t> metaInteger(const std::map<std::string, std::string>& meta,
                                   const std::string& key) {
    const auto it = meta.find(key);
    if (it == meta.end())
        return std::nullopt;
    const std::string& text = it->second;
    int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

TraceStore::TraceStore() = default;
TraceStore::TraceStore(TraceStore&&) noexcept = default;
TraceStore& TraceStore::operator=(TraceStore&&) noexcept = default;
TraceStore::~TraceStore() = default;

std::string TraceStore::metaValue(const std::string& key) const {
    const auto it = m_meta.find(key);
    return it == m_meta.end() ? std::string() : it->second;
}

const DeviceInfo* TraceStore::device(uint32_t id) const {
    const auto it =
        std::lower_bound(m_devices.begin(), m_devices.end(), id,
                         [](const DeviceInfo& d, uint32_t value) { return d.id < value; });
    return it != m_devices.end() && it->id == id ? &*it : nullptr;
}

size_t TraceStore::apiCallCount() const {
    size_t n = 0;
    for (const ApiTrack& t : m_apiTracks)
        n += t.size();
    return n;
}

size_t TraceStore::nvtxEventCount() const {
    size_t n = 0;
    for (const NvtxTrack& t : m_nvtxTracks)
        n += t.size();
    return n;
}

size_t TraceStore::eventCount() const {
    return m_kernelCount + m_memcpyCount + m_memsetCount + apiCallCount() + nvtxEventCount() +
           m_syncs.size();
}

size_t TraceStore::memoryBytes() const {
    size_t bytes = 0;
    for (const ApiTrack& t : m_apiTracks)
        bytes += t.memoryBytes();
    for (const NvtxTrack& t : m_nvtxTracks)
        bytes += t.memoryBytes();
    for (const GpuTrack& t : m_gpuTracks)
        bytes += t.memoryBytes();
    bytes += m_syncs.capacity() * sizeof(SyncEvent);
    bytes += m_kernelConfigs.capacity() * sizeof(KernelConfig);
    bytes += m_memOps.capacity() * sizeof(MemOpInfo);
    for (size_t i = 0; i < m_strings.size(); ++i)
        bytes += sizeof(std::string) + m_strings.text(static_cast<NameId>(i)).capacity();
    return bytes;
}

} // namespace warpline::model
