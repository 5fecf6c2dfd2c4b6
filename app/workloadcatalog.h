#pragma once

// WorkloadCatalog: the bundled workloads warpline-record offers, parsed from `warpline-record
// --list` (the recorder is the only source of truth; the GUI never links the workloads). Pure.
//
// --list prints, per workload, "NAME  description" at column 0 and then one line per option,
// indented: "    --OPTION  help (default VALUE)".

#include <QString>
#include <QStringList>
#include <vector>

namespace warpline::app {

struct WorkloadOption {
    QString name; // without dashes
    QString help;
    QString defaultValue;
};

struct WorkloadInfo {
    QString name;
    QString description;
    std::vector<WorkloadOption> options;
};

class WorkloadCatalog {
public:
    static std::vector<WorkloadInfo> parse(const QString& listOutput);
    // warpline-record arguments for one recording.
    static QStringList recordArguments(const QString& workload,
                                       const std::vector<std::pair<QString, QString>>& options,
                                       const QString& output, bool overwrite);
    // Splits a command line as a POSIX shell would split words ('single' and "double" quotes,
    // backslash escapes), without expanding anything and without running a shell.
    static QStringList splitArguments(const QString& text);
    // warpline-record arguments to record a program of the user's (`arguments` split as above).
    static QStringList programArguments(const QString& program, const QString& arguments,
                                        const QString& output, bool overwrite);
};

} // namespace warpline::app
