#pragma once

// ElfSymbols: the function symbols of one ELF file (its .symtab, else .dynsym), to name the
// addresses of CPU samples; PerfMap: the symbols a JIT lists in /tmp/perf-PID.map (CPython's perf
// trampolines: "py::forward:/work/train.py"). Files are read once, with every offset checked
// against the file's size: a damaged or truncated file gives fewer symbols, never a crash.

#include <cstdint>
#include <string>
#include <vector>

namespace warpline::collector {

struct SymbolRange {
    uint64_t start = 0; // address in the file's own layout (ELF: st_value; perf map: absolute)
    uint64_t size = 0;  // 0 when unknown: the symbol reaches the next one
    std::string name;
};

class ElfSymbols {
public:
    // Reads `path`; an unreadable or non-ELF file gives an empty table.
    explicit ElfSymbols(const std::string& path);
    bool empty() const { return m_symbols.empty(); }
    // The virtual address (the file's own) of a byte at this file offset, from its PT_LOAD
    // segments; false when no segment holds it.
    bool addressOfOffset(uint64_t offset, uint64_t* address) const;
    // The symbol holding `address` (the file's own layout), or nullptr.
    const SymbolRange* find(uint64_t address) const;

private:
    struct Segment {
        uint64_t offset, fileSize, address;
    };
    std::vector<Segment> m_segments;
    std::vector<SymbolRange> m_symbols; // sorted by start
};

// "START SIZE NAME" lines, hex, as perf reads them.
class PerfMap {
public:
    explicit PerfMap(const std::string& path);
    bool empty() const { return m_symbols.empty(); }
    const SymbolRange* find(uint64_t address) const;

private:
    std::vector<SymbolRange> m_symbols; // sorted by start
};

// CPython's trampoline names "py::FUNCTION:FILE" -> FUNCTION and FILE; false for other names.
bool splitPythonTrampoline(const std::string& name, std::string* function, std::string* file);

} // namespace warpline::collector
