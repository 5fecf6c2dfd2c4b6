#include "elfsymbols.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace warpline::collector {

namespace {

// A read-only mapping of a whole file; empty when it cannot be read.
class MappedFile {
public:
    explicit MappedFile(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            void* p =
                ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
            if (p != MAP_FAILED) {
                m_data = static_cast<const uint8_t*>(p);
                m_size = static_cast<size_t>(st.st_size);
            }
        }
        ::close(fd);
    }
    ~MappedFile() {
        if (m_data)
            ::munmap(const_cast<uint8_t*>(m_data), m_size);
    }
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    // The `count` objects of type T at `offset`, or nullptr when they are not all in the file.
    template <typename T> const T* at(uint64_t offset, uint64_t count = 1) const {
        if (!m_data || offset > m_size || count > (m_size - offset) / sizeof(T))
            return nullptr;
        if (offset % alignof(T) != 0)
            return nullptr;
        return reinterpret_cast<const T*>(m_data + offset);
    }
    size_t size() const { return m_size; }
    const uint8_t* data() const { return m_data; }

private:
    const uint8_t* m_data = nullptr;
    size_t m_size = 0;
};

void sortAndClose(std::vector<SymbolRange>& symbols) {
    std::sort(symbols.begin(), symbols.end(), [](const SymbolRange& a, const SymbolRange& b) {
        return a.start != b.start ? a.start < b.start : a.size > b.size;
    });
    symbols.erase(
        std::unique(symbols.begin(), symbols.end(),
                    [](const SymbolRange& a, const SymbolRange& b) { return a.start == b.start; }),
        symbols.end());
}

const SymbolRange* findIn(const std::vector<SymbolRange>& symbols, uint64_t address) {
    auto it = std::upper_bound(symbols.begin(), symbols.end(), address,
                               [](uint64_t a, const SymbolRange& s) { return a < s.start; });
    if (it == symbols.begin())
        return nullptr;
    --it;
    if (it->size != 0 && address - it->start >= it->size)
        return nullptr;
    return &*it;
}

} // namespace

ElfSymbols::ElfSymbols(const std::string& path) {
    const MappedFile file(path);
    const auto* header = file.at<Elf64_Ehdr>(0);
    if (!header || std::memcmp(header->e_ident, ELFMAG, SELFMAG) != 0 ||
        header->e_ident[EI_CLASS] != ELFCLASS64 || header->e_shentsize != sizeof(Elf64_Shdr))
        return;
    if (header->e_phentsize == sizeof(Elf64_Phdr))
        if (const auto* ph = file.at<Elf64_Phdr>(header->e_phoff, header->e_phnum))
            for (uint16_t i = 0; i < header->e_phnum; ++i)
                if (ph[i].p_type == PT_LOAD)
                    m_segments.push_back({ph[i].p_offset, ph[i].p_filesz, ph[i].p_vaddr});
    const auto* sections = file.at<Elf64_Shdr>(header->e_shoff, header->e_shnum);
    if (!sections)
        return;
    // .symtab when the file has one (not stripped), else the exported .dynsym.
    for (const uint32_t wanted : {uint32_t(SHT_SYMTAB), uint32_t(SHT_DYNSYM)}) {
        for (uint16_t i = 0; i < header->e_shnum; ++i) {
            const Elf64_Shdr& s = sections[i];
            if (s.sh_type != wanted || s.sh_entsize != sizeof(Elf64_Sym) ||
                s.sh_link >= header->e_shnum)
                continue;
            const Elf64_Shdr& strings = sections[s.sh_link];
            const auto* symbols = file.at<Elf64_Sym>(s.sh_offset, s.sh_size / sizeof(Elf64_Sym));
            const char* names = file.at<char>(strings.sh_offset, strings.sh_size);
            if (!symbols || !names)
                continue;
            const uint64_t count = s.sh_size / sizeof(Elf64_Sym);
            for (uint64_t k = 0; k < count; ++k) {
                const Elf64_Sym& sym = symbols[k];
                if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_value == 0 ||
                    sym.st_name >= strings.sh_size)
                    continue;
                const char* name = names + sym.st_name;
                const size_t length = ::strnlen(name, strings.sh_size - sym.st_name);
                m_symbols.push_back({sym.st_value, sym.st_size, std::string(name, length)});
            }
        }
        if (!m_symbols.empty())
            break;
    }
    sortAndClose(m_symbols);
}

bool ElfSymbols::addressOfOffset(uint64_t offset, uint64_t* address) const {
    for (const Segment& s : m_segments)
        if (offset >= s.offset && offset - s.offset < s.fileSize) {
            *address = offset - s.offset + s.address;
            return true;
        }
    return false;
}

const SymbolRange* ElfSymbols::find(uint64_t address) const {
    return findIn(m_symbols, address);
}

PerfMap::PerfMap(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    size_t lines = 0;
    while (std::getline(in, line) && ++lines <= 10'000'000) {
        std::istringstream fields(line);
        SymbolRange s;
        fields >> std::hex >> s.start >> s.size;
        if (!fields)
            continue;
        std::getline(fields >> std::ws, s.name);
        if (!s.name.empty())
            m_symbols.push_back(std::move(s));
    }
    sortAndClose(m_symbols);
}

const SymbolRange* PerfMap::find(uint64_t address) const {
    return findIn(m_symbols, address);
}

bool splitPythonTrampoline(const std::string& name, std::string* function, std::string* file) {
    if (name.rfind("py::", 0) != 0)
        return false;
    const size_t colon = name.find(':', 4);
    if (colon == std::string::npos)
        return false;
    *function = name.substr(4, colon - 4);
    *file = name.substr(colon + 1);
    return !function->empty();
}

} // namespace warpline::collector
