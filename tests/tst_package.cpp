// The .deb that `make package` writes into the build directory: its control fields (Depends on the
// Qt 6 and SQLite runtime, CUDA only recommended), its contents, and that its programs run once
// unpacked. Building the package takes longer than a test should, so without a .deb this test
// reports itself skipped (exit 77) and says how to make one.

#include "warpline_version.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>
#include <cstdio>

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QString& program, const QStringList& args) {
    QProcess p;
    p.start(program, args);
    if (!p.waitForStarted(10000))
        return {-1, {}, "cannot start " + program.toUtf8() + ": " + p.errorString().toUtf8()};
    if (!p.waitForFinished(120000)) {
        p.kill();
        p.waitForFinished();
        return {-1, {}, "timed out: " + program.toUtf8()};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

// The newest warpline_*.deb in the build directory, or empty.
QString findPackage() {
    const QFileInfoList debs =
        QDir(QStringLiteral(WARPLINE_BINARY_DIR))
            .entryInfoList({QStringLiteral("warpline_*.deb")}, QDir::Files, QDir::Time);
    return debs.isEmpty() ? QString() : debs.front().absoluteFilePath();
}

// Package names of a Depends-style field, without versions or alternatives' bars.
QStringList packageNames(const QString& field) {
    QStringList names;
    for (const QString& alternative : field.split(QRegularExpression(QStringLiteral("[,|]")))) {
        const QString name = alternative.trimmed().section(QLatin1Char(' '), 0, 0);
        if (!name.isEmpty())
            names << name;
    }
    return names;
}

} // namespace

class TestPackage : public QObject {
    Q_OBJECT

private:
    QString m_deb;
    QHash<QString, QString> m_fields;
    QStringList m_contents;

private slots:
    void initTestCase() {
        m_deb = findPackage();
        QVERIFY(!m_deb.isEmpty());
        const QFileInfo program(QStringLiteral(WARPLINE_BINARY_DIR "/app/warpline"));
        if (program.exists() && QFileInfo(m_deb).lastModified() < program.lastModified())
            qWarning("%s is older than the warpline it packages: run `make package` to test the "
                     "current build",
                     qPrintable(m_deb));
        QVERIFY2(!QStandardPaths::findExecutable(QStringLiteral("dpkg-deb")).isEmpty(),
                 "dpkg-deb not found");

        const Run fields = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-f"), m_deb});
        QVERIFY2(fields.exitCode == 0, fields.err.constData());
        QString key;
        for (const QString& line : QString::fromUtf8(fields.out).split(QLatin1Char('\n'))) {
            if (line.startsWith(QLatin1Char(' ')) && !key.isEmpty()) {
                m_fields[key] += QLatin1Char('\n') + line.trimmed();
            } else if (const qsizetype colon = line.indexOf(QLatin1Char(':')); colon > 0) {
                key = line.left(colon);
                m_fields[key] = line.mid(colon + 1).trimmed();
            }
        }

        const Run contents = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-c"), m_deb});
        QVERIFY2(contents.exitCode == 0, contents.err.constData());
        for (const QString& line :
             QString::fromUtf8(contents.out).split(QLatin1Char('\n'), Qt::SkipEmptyParts))
            m_contents << line.section(QLatin1Char(' '), -1);
    }

    void controlFields() {
        QCOMPARE(m_fields.value(QStringLiteral("Package")), QStringLiteral("warpline"));
        QCOMPARE(m_fields.value(QStringLiteral("Version")), QStringLiteral(WARPLINE_VERSION));
        QCOMPARE(m_fields.value(QStringLiteral("Section")), QStringLiteral("devel"));
        const Run arch = run(QStringLiteral("dpkg"), {QStringLiteral("--print-architecture")});
        QCOMPARE(m_fields.value(QStringLiteral("Architecture")),
                 QString::fromUtf8(arch.out).trimmed());
        QVERIFY(m_fields.value(QStringLiteral("Maintainer")).contains(QLatin1Char('@')));
        QVERIFY(m_fields.value(QStringLiteral("Description"))
                    .contains(QStringLiteral("GPU trace viewer")));
    }

    void depends_data() {
        QTest::addColumn<QString>("package");
        for (const char* name :
             {"libqt6widgets6", "libqt6gui6", "libqt6core6", "libsqlite3-0", "libc6", "libstdc++6"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void depends() {
        QFETCH(QString, package);
        const QString depends = m_fields.value(QStringLiteral("Depends"));
        QVERIFY2(packageNames(depends).contains(package),
                 qPrintable(QStringLiteral("Depends: ") + depends));
    }

    // The viewer works without a GPU: nothing from CUDA or the NVIDIA driver is required.
    void cudaIsOnlyRecommended() {
        const QString depends = m_fields.value(QStringLiteral("Depends"));
        QVERIFY2(!depends.contains(QRegularExpression(QStringLiteral("cuda|cupti|nvidia"))),
                 qPrintable(QStringLiteral("Depends: ") + depends));
        const QStringList recommends = packageNames(m_fields.value(QStringLiteral("Recommends")));
        QVERIFY2(recommends.contains(QStringLiteral("cuda-cupti-13-0")),
                 qPrintable(recommends.join(u' ')));
    }

    void contents_data() {
        QTest::addColumn<QString>("path");
        for (const char* path : {
                 "./usr/bin/warpline", "./usr/bin/warpline-stats",
                     "./usr/share/warpline/sample.warpline",
                     "./usr/share/applications/warpline.desktop",
                     "./usr/share/metainfo/org.warpline.Warpline.metainfo.xml",
                     "./usr/share/mime/packages/warpline.xml",
                     "./usr/share/icons/hicolor/scalable/apps/warpline.svg",
#if WARPLINE_HAVE_RECORD
                     "./usr/bin/warpline-record", "./usr/lib/warpline/libwarpline-inject.so",
#endif
#if WARPLINE_HAVE_MAN
                     "./usr/share/man/man1/warpline.1.gz",
                     "./usr/share/man/man1/warpline-stats.1.gz",
#endif
             })
            QTest::newRow(path) << QString::fromLatin1(path);
    }

    void contents() {
        QFETCH(QString, path);
        QVERIFY2(m_contents.contains(path), qPrintable(m_contents.join(u'\n')));
    }

    // Everything under /usr (nothing in /usr/local), and no tests or benchmarks.
    void nothingElse() {
        for (const QString& path : std::as_const(m_contents)) {
            QVERIFY2(path == QStringLiteral("./") || path.startsWith(QStringLiteral("./usr/")),
                     qPrintable(path));
            QVERIFY2(!path.startsWith(QStringLiteral("./usr/local")), qPrintable(path));
            const QString name = path.section(QLatin1Char('/'), -1);
            QVERIFY2(!name.startsWith(QStringLiteral("tst_")) &&
                         !name.contains(QStringLiteral("bench")),
                     qPrintable(path));
        }
    }

    // Unpacked, the packaged warpline-stats runs on the packaged sample.
    void unpackedProgramsRun() {
        QTemporaryDir root;
        QVERIFY(root.isValid());
        const Run extract =
            run(QStringLiteral("dpkg-deb"), {QStringLiteral("-x"), m_deb, root.path()});
        QVERIFY2(extract.exitCode == 0, extract.err.constData());
        const QString stats = root.filePath(QStringLiteral("usr/bin/warpline-stats"));
        const Run version = run(stats, {QStringLiteral("--version")});
        QCOMPARE(QString::fromUtf8(version.out).trimmed(),
                 QStringLiteral("warpline-stats " WARPLINE_VERSION));
        const Run report =
            run(stats, {root.filePath(QStringLiteral("usr/share/warpline/sample.warpline"))});
        QVERIFY2(report.exitCode == 0, report.err.constData());
        QVERIFY(report.out.contains("stallUpdate"));
#if WARPLINE_HAVE_RECORD
        // warpline-record does not need CUPTI (it loads the recorder library, which does, and
        // explains when that fails); the library finds CUPTI through its RUNPATH (the CUDA
        // toolkit), never the build tree.
        const QString readelf = QStandardPaths::findExecutable(QStringLiteral("readelf"));
        if (readelf.isEmpty())
            QSKIP("readelf not found (binutils): RUNPATH not checked");
        const Run record = run(readelf, {QStringLiteral("-d"),
                                         root.filePath(QStringLiteral("usr/bin/warpline-record"))});
        QVERIFY2(record.exitCode == 0 && !record.out.contains("libcupti"), record.out.constData());
        const Run library =
            run(readelf, {QStringLiteral("-d"),
                          root.filePath(QStringLiteral("usr/lib/warpline/libwarpline-inject.so"))});
        QVERIFY2(library.out.contains("libcupti"), library.out.constData());
        QVERIFY2(!library.out.contains(WARPLINE_BINARY_DIR), library.out.constData());
#endif
    }
};

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    if (findPackage().isEmpty()) {
        std::printf(
            "SKIP: no warpline_*.deb in %s: run `make package` (or `cmake --build %s --target "
            "package`) first\n",
            WARPLINE_BINARY_DIR, WARPLINE_BINARY_DIR);
        return 77;
    }
    TestPackage test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_package.moc"
