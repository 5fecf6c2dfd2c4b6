#include "outputfile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <unistd.h>

namespace warpline::format {

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
    // A new file of a fresh random name, made with O_EXCL (never an existing file or link) and
    // mode 0666 less the umask, as any new file gets. (mkstemp makes 0600, and reading the umask
    // to widen that means setting it, process-wide, for a moment.)
    const fs::path target(m_path);
    std::random_device entropy;
    for (int attempt = 0; attempt < 100; ++attempt) {
        char suffix[16];
        std::snprintf(suffix, sizeof suffix, "%08x", entropy());
        const std::string temp =
            (target.parent_path() / ("." + target.filename().string() + "." + suffix + ".part"))
                .string();
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            ::close(fd);
            m_temp = temp;
            return;
        }
        if (errno != EEXIST)
            fail(m_path, std::strerror(errno));
    }
    fail(m_path, "no free temporary name next to it");
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

} // namespace warpline::format
