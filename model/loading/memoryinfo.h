#pragma once

// How much memory the machine can give a load, for refusing files that cannot fit up front
// (TraceLoader, KinetoImport) instead of running out of memory halfway.

#include <cinttypes>
#include <cstdint>
#include <cstdio>

namespace warpline::model {

// MemAvailable from /proc/meminfo (what can be allocated without swapping), in bytes; 0 when
// unknown.
inline uint64_t availableMemoryBytes() {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t kib = 0;
    while (std::fgets(line, sizeof line, f)) {
        if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1)
            break;
    }
    std::fclose(f);
    return kib * 1024;
}

} // namespace warpline::model
