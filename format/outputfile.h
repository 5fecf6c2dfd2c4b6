#pragma once

// OutputFile: writes a file the user named (an export, a report, a converted trace, a trace copied
// back from a remote recording) so that it appears whole or not at all, and never writes through a
// symbolic link.
//
// It lives with the trace writer (warpline_tracewriter), which the recorder and the loader both
// link: the output-file rules are one, whoever writes. Plain C++, no Qt; the namespace is still
// warpline::model, where its exporters first used it.
//
// The content goes to a new temporary file in the same directory (".NAME.XXXXXXXX.part", created
// with O_EXCL, so it is never an existing file or link); commit() renames it onto the path. An
// interrupted or failed write leaves no half file: the destructor removes an uncommitted
// temporary (a SIGKILL can leave the ".part" file, never a damaged NAME). rename() replaces a
// symbolic link at the path itself, so its target is never changed.
//
// Replacing: without `replace`, the path must not exist (not even as a dangling link), checked
// when the OutputFile is made and again at commit (link + unlink, which fails if the path
// appeared meanwhile). With `replace`, an existing file or link at the path is replaced.
//
// Errors are thrown as std::runtime_error with a message naming the path.

#include <string>

namespace warpline::format {

class OutputFile {
public:
    OutputFile(std::string path, bool replace);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    // Where to write the content (open it by name; it exists, empty, owner read/write, with the
    // permissions a new file gets).
    const std::string& tempPath() const { return m_temp; }
    const std::string& path() const { return m_path; }
    // Moves the written temporary file onto the path.
    void commit();

    // A sentence for a path that exists, "" when it does not: "out.csv exists; use --force to
    // replace it" or, for a symbolic link, "... is a symbolic link to X; use --force to replace
    // the link (X is not changed)". `how` names the option or question that allows replacing.
    static std::string existsMessage(const std::string& path, const std::string& how);

private:
    std::string m_path;
    std::string m_temp;
    bool m_replace;
    bool m_committed = false;
};

} // namespace warpline::format
