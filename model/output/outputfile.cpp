#include "outputfile.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace warpline::model {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
    throw std::runtime_error("cannot write " + path + ": " + why);
}

} // namespace

std::string OutputFile::existsMessage(const std::string& path, const std::string& how) {
    std::error_code ec;
    const fs::file_status link = fs::symlink_status(path, ec);
    if (ec || !fs::exists(link))
        return {};
    if (fs::is_symlink(link)) {
        const std::string target = fs::read_symlink(path, ec).string();
        return path + " is a symbolic link to " + target + "; " + how + " to replace the link (" +
               target + " is not changed)";
    }
    return path + " exists; " + how + " to replace it";
}

OutputFile::OutputFile(std::string path, bool replace)
    : m_path(std::move(path)), m_replace(replace) {
    std::error_code ec;
    if (fs::is_directory(fs::symlink_status(m_path, ec)))
        fail(m_path, "it is a directory");
    if (!m_replace) {
        if (const std::string exists = existsMessage(m_path, "use --force"); !exists.empty())
            throw std::runtime_error(exists);
    }
    const fs::path target(m_path);
    fs::path dir = target.parent_path();
    std::string pattern = (dir / ("." + target.filename().string() + ".XXXXXX.part")).string();
    const int fd = ::mkstemps(pattern.data(), 5);
    if (fd < 0)
        fail(m_path, std::strerror(errno));
    // mkstemps makes the file 0600; give it the mode a new file would get (umask applies).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd, 0666 & ~mask);
    ::close(fd);
    m_temp = pattern;
}

OutputFile::~OutputFile() {
    if (!m_committed && !m_temp.empty())
        ::unlink(m_temp.c_str());
}

void OutputFile::commit() {
    if (m_replace) {
        if (::rename(m_temp.c_str(), m_path.c_str()) != 0)
            fail(m_path, std::strerror(errno));
    } else {
        // link() fails with EEXIST when the path appeared since the check: never replaced.
        if (::link(m_temp.c_str(), m_path.c_str()) != 0) {
            if (errno == EEXIST)
                throw std::runtime_error(m_path +
                                         " appeared while it was written; use --force to replace "
                                         "it");
            // Filesystems without hard links: rename, having checked just before.
            if (!existsMessage(m_path, "use --force").empty() ||
                ::rename(m_temp.c_str(), m_path.c_str()) != 0)
                fail(m_path, std::strerror(errno));
        } else {
            ::unlink(m_temp.c_str());
        }
    }
    m_committed = true;
}

} // namespace warpline::model
