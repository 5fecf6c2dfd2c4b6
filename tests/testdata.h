#pragma once

// Committed test data (tests/data, resources/, docs/probes/) is part of the suite: a file that is
// missing fails the test that needs it, naming the file, and is never a skip. A skip leaves the
// binary at exit 0, which ctest reports as Passed: renaming a trace would silently turn every
// check on it into nothing.

#include <QDir>
#include <QFileInfo>
#include <QString>
#include <QStringList>
#include <QtTest>

// Fails the current test function when `path` does not exist. In a test function (not a _data
// function: Qt Test still runs the test then, without rows).
#define WARPLINE_REQUIRE_DATA(path)                                                                \
    do {                                                                                           \
        const QString warplineRequired_ = (path);                                                  \
        if (!QFileInfo::exists(warplineRequired_))                                                 \
            QFAIL(qPrintable(QStringLiteral("committed test data is missing: ") +                  \
                             warplineRequired_ +                                                   \
                             QStringLiteral(" (restore it, or rename it in its test too)")));      \
    } while (false)

namespace warpline::testdata {

// The files in `dir` matching `patterns`, by name, for a _data function's rows. When there are
// none, one path that does not exist (naming what was looked for), so that the test function's
// WARPLINE_REQUIRE_DATA fails on it instead of the test running no row at all.
inline QStringList committedFiles(const QString& dir, const QStringList& patterns) {
    const QDir d(dir);
    QStringList files;
    for (const QString& f : d.entryList(patterns, QDir::Files, QDir::Name))
        files << d.filePath(f);
    if (files.isEmpty())
        files << d.filePath(
            QStringLiteral("(no %1 here)").arg(patterns.join(QStringLiteral(", "))));
    return files;
}

} // namespace warpline::testdata
