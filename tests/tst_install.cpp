// `cmake --install` into a temporary prefix, then what a user of that install sees: the installed
// programs run on the installed sample, the installed warpline opens its own sample (not the source
// tree's), every program reports the one version, and the desktop file, AppStream metainfo and MIME
// type pass their validators and agree with each other.

#include "warpline_version.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QImage>
#include <QMimeDatabase>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

namespace {

struct Run {
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QString& program, const QStringList& args, int timeoutMs = 60000,
        const QHash<QString, QString>& extraEnv = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("DESTDIR"));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    for (auto it = extraEnv.begin(); it != extraEnv.end(); ++it) {
        if (it.value().isEmpty())
            env.remove(it.key()); // an empty value: unset
        else
            env.insert(it.key(), it.value());
    }
    p.setProcessEnvironment(env);
    p.start(program, args);
    if (!p.waitForStarted(10000))
        return {-1, {}, "cannot start " + program.toUtf8() + ": " + p.errorString().toUtf8()};
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {-1, p.readAllStandardOutput(), "timed out: " + program.toUtf8()};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

QString tool(const char* name, const char* package) {
    const QString path = QStandardPaths::findExecutable(QString::fromLatin1(name));
    if (path.isEmpty())
        qWarning("%s not found: install %s (make deps)", name, package);
    return path;
}

// Fraction of pixels that differ between two images of the same size (1 when sizes differ).
double differingPixels(const QImage& a, const QImage& b) {
    if (a.size() != b.size())
        return 1.0;
    const QImage x = a.convertToFormat(QImage::Format_RGB32);
    const QImage y = b.convertToFormat(QImage::Format_RGB32);
    qint64 differ = 0;
    for (int row = 0; row < x.height(); ++row) {
        const auto* p = reinterpret_cast<const QRgb*>(x.constScanLine(row));
        const auto* q = reinterpret_cast<const QRgb*>(y.constScanLine(row));
        for (int col = 0; col < x.width(); ++col)
            differ += p[col] != q[col];
    }
    return double(differ) / (double(x.width()) * x.height());
}

// A screenshot of a loaded trace, not a blank or single-colour window: many colours, none covering
// almost everything.
QString trivialityProblem(const QImage& image) {
    if (image.isNull())
        return QStringLiteral("not a readable PNG");
    const QImage rgb = image.convertToFormat(QImage::Format_RGB32);
    QHash<QRgb, qint64> counts;
    for (int row = 0; row < rgb.height(); ++row) {
        const auto* p = reinterpret_cast<const QRgb*>(rgb.constScanLine(row));
        for (int col = 0; col < rgb.width(); ++col)
            ++counts[p[col]];
    }
    qint64 most = 0;
    for (const qint64 n : std::as_const(counts))
        most = std::max(most, n);
    const double share = double(most) / (double(rgb.width()) * rgb.height());
    if (counts.size() < 64 || share > 0.9)
        return QStringLiteral("%1 colours, the commonest covers %2% of it")
            .arg(counts.size())
            .arg(share * 100, 0, 'f', 1);
    return {};
}

QStringList desktopEntry(const QString& path, const QString& key) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return {};
    const QString prefix = key + QLatin1Char('=');
    while (!f.atEnd()) {
        const QString line = QString::fromUtf8(f.readLine()).trimmed();
        if (line.startsWith(prefix))
            return line.mid(prefix.size()).split(QLatin1Char(';'), Qt::SkipEmptyParts);
    }
    return {};
}

} // namespace

class TestInstall : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_prefix;
    QString m_out;

    QString installed(const QString& relative) const {
        return m_prefix + QLatin1Char('/') + relative;
    }
    QString sample() const { return installed(QStringLiteral("share/warpline/sample.warpline")); }
    QString metainfo() const {
        return installed(QStringLiteral("share/metainfo/org.warpline.Warpline.metainfo.xml"));
    }
    QString desktopFile() const {
        return installed(QStringLiteral("share/applications/warpline.desktop"));
    }

    // Returns the screenshot, or a null image after recording why in `problem`.
    QImage screenshot(const QString& name, const QStringList& traces, QString* problem) const {
        const QString png = m_out + QLatin1Char('/') + name;
        const Run r = run(installed(QStringLiteral("bin/warpline")),
                          QStringList{QStringLiteral("--screenshot"), png} + traces);
        if (r.exitCode != 0) {
            *problem = QStringLiteral("warpline --screenshot exited %1: %2")
                           .arg(r.exitCode)
                           .arg(QString::fromUtf8(r.err));
            return {};
        }
        return QImage(png);
    }

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_prefix = m_dir.filePath(QStringLiteral("prefix"));
        m_out = m_dir.filePath(QStringLiteral("out"));
        QVERIFY(QDir().mkpath(m_out));
        const Run r = run(QStringLiteral(WARPLINE_CMAKE_COMMAND),
                          {QStringLiteral("--install"), QStringLiteral(WARPLINE_BINARY_DIR),
                           QStringLiteral("--prefix"), m_prefix},
                          240000);
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("cmake --install failed:\n") +
                                             QString::fromUtf8(r.out + r.err)));
    }

    void layout_data() {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("executable");
        const auto row = [](const char* path, bool executable = false) {
            QTest::newRow(path) << QString::fromLatin1(path) << executable;
        };
        row("bin/warpline", true);
        row("bin/warpline-stats", true);
        row("share/warpline/sample.warpline");
        row("share/applications/warpline.desktop");
        row("share/metainfo/org.warpline.Warpline.metainfo.xml");
        row("share/mime/packages/warpline.xml");
        row("share/icons/hicolor/scalable/apps/warpline.svg");
#if WARPLINE_HAVE_RECORD
        row("bin/warpline-record", true);
        // warpline-record looks for the injection library in ../lib/warpline.
        row("lib/warpline/libwarpline-inject.so");
#endif
#if WARPLINE_HAVE_MAN
        row("share/man/man1/warpline.1.gz");
        row("share/man/man1/warpline-stats.1.gz");
#if WARPLINE_HAVE_RECORD
        row("share/man/man1/warpline-record.1.gz");
#endif
#endif
#if WARPLINE_HAVE_PNG_ICONS
        row("share/icons/hicolor/48x48/apps/warpline.png");
        row("share/icons/hicolor/128x128/apps/warpline.png");
        row("share/icons/hicolor/256x256/apps/warpline.png");
#endif
    }

    void layout() {
        QFETCH(QString, path);
        QFETCH(bool, executable);
        const QFileInfo info(installed(path));
        QVERIFY2(info.isFile() && info.size() > 0, qPrintable(path + QStringLiteral(" missing")));
        QCOMPARE(info.isExecutable(), executable);
#if WARPLINE_HAVE_PNG_ICONS
        if (path.endsWith(QStringLiteral(".png"))) {
            const int size =
                path.section(QLatin1Char('/'), 3, 3).section(QLatin1Char('x'), 0, 0).toInt();
            QCOMPARE(QImage(info.filePath()).size(), QSize(size, size));
        }
#endif
    }

    // --help and --version print and exit 0 on a machine without a display (no platform
    // plugin can start there; they need none).
    void helpAndVersionWithoutDisplay() {
        const QHash<QString, QString> noDisplay = {{QStringLiteral("QT_QPA_PLATFORM"), {}},
                                                   {QStringLiteral("DISPLAY"), {}},
                                                   {QStringLiteral("WAYLAND_DISPLAY"), {}}};
        const QString warpline = installed(QStringLiteral("bin/warpline"));
        const Run help = run(warpline, {QStringLiteral("--help")}, 60000, noDisplay);
        QVERIFY2(help.exitCode == 0, help.err.constData());
        QVERIFY2(help.out.contains("--screenshot"), help.out.constData());
        const Run version = run(warpline, {QStringLiteral("--version")}, 60000, noDisplay);
        QVERIFY2(version.exitCode == 0, version.err.constData());
        QVERIFY2(version.out.startsWith("warpline "), version.out.constData());
    }

    void statsOnInstalledSample() {
        const Run r = run(installed(QStringLiteral("bin/warpline-stats")), {sample()});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        // The sample is the sync-stall workload: its kernels, 401 launches each.
        QVERIFY2(r.out.contains("stallUpdate"), r.out.constData());
        QVERIFY2(r.out.contains("stallForward"), r.out.constData());
        QVERIFY2(r.out.contains("401"), r.out.constData());
    }

    void screenshotOfInstalledSample() {
        QString problem;
        const QImage image = screenshot(QStringLiteral("sample.png"), {}, &problem);
        QVERIFY2(!image.isNull(), qPrintable(problem));
        QCOMPARE(image.size(), QSize(1600, 1000));
        problem = trivialityProblem(image);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
    }

    // --find prints how many events match (kernels and their launch calls' names here: 401
    // stallUpdate kernels) and selects the first.
    void findPrintsTheMatchCount() {
        const QString png = m_out + QStringLiteral("/find.png");
        const Run r = run(installed(QStringLiteral("bin/warpline")),
                          {QStringLiteral("--find"), QStringLiteral("stallUpdate"),
                           QStringLiteral("--screenshot"), png, sample()});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QRegularExpression count(QStringLiteral("^(\\d+) events match \"stallUpdate\"$"),
                                       QRegularExpression::MultilineOption);
        const QRegularExpressionMatch m = count.match(QString::fromUtf8(r.out));
        QVERIFY2(m.hasMatch(), r.out.constData());
        QVERIFY(m.captured(1).toInt() >= 401);
        const Run none = run(installed(QStringLiteral("bin/warpline")),
                             {QStringLiteral("--find"), QStringLiteral("no such event"),
                              QStringLiteral("--screenshot"), png, sample()});
        QVERIFY2(none.out.contains("0 events match"), none.out.constData());
    }

    // The installed warpline opens the sample installed next to it, even where the source tree it
    // was built from still exists: swap a different trace in as the installed sample, and the
    // window no longer looks like the source sample.
    void installedWarplineOpensItsOwnSample() {
        const QString other = QStringLiteral(WARPLINE_TEST_DATA "/runahead.warpline");
        QVERIFY(QFileInfo::exists(other));
        const QString kept = sample() + QStringLiteral(".kept");
        QVERIFY(QFile::rename(sample(), kept));
        QVERIFY(QFile::copy(other, sample()));
        QString problem;
        const QImage fromLookup = screenshot(QStringLiteral("lookup.png"), {}, &problem);
        QVERIFY(QFile::remove(sample()));
        QVERIFY(QFile::rename(kept, sample()));
        QVERIFY2(!fromLookup.isNull(), qPrintable(problem));

        const QImage source = screenshot(QStringLiteral("source.png"),
                                         {QStringLiteral(WARPLINE_SOURCE_SAMPLE)}, &problem);
        QVERIFY2(!source.isNull(), qPrintable(problem));
        const double differ = differingPixels(fromLookup, source);
        QVERIFY2(differ > 0.05,
                 qPrintable(QStringLiteral("only %1% of pixels differ from the source "
                                           "sample's window: it opened the source tree's "
                                           "sample")
                                .arg(differ * 100, 0, 'f', 2)));
    }

#if WARPLINE_HAVE_RECORD
    // The installed warpline-record finds the injection library the install put in ../lib/warpline
    // (a program that never starts CUDA still leaves a trace that says so); without it, it says
    // where it looked.
    void installedRecorderFindsInjectionLibrary() {
        const QString record = installed(QStringLiteral("bin/warpline-record"));
        const QString trace = m_out + QStringLiteral("/true.warpline");
        const Run found = run(record, {QStringLiteral("-o"), trace, QStringLiteral("--"),
                                       QStringLiteral("/bin/true")});
        QVERIFY2(found.exitCode == 0, found.err.constData());
        QVERIFY(QFileInfo(trace).size() > 0);

        const QString library = installed(QStringLiteral("lib/warpline/libwarpline-inject.so"));
        QVERIFY(QFile::rename(library, library + QStringLiteral(".moved")));
        const Run missing =
            run(record, {QStringLiteral("-o"), m_out + QStringLiteral("/none.warpline"),
                         QStringLiteral("--"), QStringLiteral("/bin/true")});
        QVERIFY(QFile::rename(library + QStringLiteral(".moved"), library));
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains("../lib/warpline"), missing.err.constData());
    }
#endif

    void versions_data() {
        QTest::addColumn<QString>("program");
        QTest::newRow("warpline") << QStringLiteral("warpline");
        QTest::newRow("warpline-stats") << QStringLiteral("warpline-stats");
#if WARPLINE_HAVE_RECORD
        QTest::newRow("warpline-record") << QStringLiteral("warpline-record");
#endif
    }

    // One version, from project(VERSION): in --version, --help's exit status, and the man page.
    void versions() {
        QFETCH(QString, program);
        const QString path = installed(QStringLiteral("bin/") + program);
        const Run version = run(path, {QStringLiteral("--version")});
        QCOMPARE(version.exitCode, 0);
        QCOMPARE(QString::fromUtf8(version.out).trimmed(),
                 program + QStringLiteral(" " WARPLINE_VERSION));
        const Run help = run(path, {QStringLiteral("--help")});
        QCOMPARE(help.exitCode, 0);
        QVERIFY2(help.out.contains("Usage:"), help.out.constData());
#if WARPLINE_HAVE_MAN
        const Run man = run(QStringLiteral("gzip"),
                            {QStringLiteral("-dc"), installed(QStringLiteral("share/man/man1/") +
                                                              program + QStringLiteral(".1.gz"))});
        QCOMPARE(man.exitCode, 0);
        const QString th = QString::fromUtf8(man.out).section(QLatin1Char('\n'), 0, 4);
        QVERIFY2(th.contains(program + QStringLiteral(" " WARPLINE_VERSION)), qPrintable(th));
        QVERIFY2(!man.out.contains(WARPLINE_BINARY_DIR), "the man page names the build directory");
#endif
    }

    void desktopFileValidates() {
        const QString validate = tool("desktop-file-validate", "desktop-file-utils");
        QVERIFY2(!validate.isEmpty(), "desktop-file-validate not found (make deps)");
        const Run r = run(validate, {desktopFile()});
        QVERIFY2(r.exitCode == 0 && r.out.trimmed().isEmpty(), (r.out + r.err).constData());
    }

    void desktopFileOpensTraces() {
        QCOMPARE(desktopEntry(desktopFile(), QStringLiteral("Exec")),
                 QStringList{QStringLiteral("warpline %F")});
        QCOMPARE(desktopEntry(desktopFile(), QStringLiteral("MimeType")),
                 QStringList{QStringLiteral("application/x-warpline-trace")});
        const QStringList icon = desktopEntry(desktopFile(), QStringLiteral("Icon"));
        QCOMPARE(icon, QStringList{QStringLiteral("warpline")});
        QVERIFY(QFileInfo::exists(
            installed(QStringLiteral("share/icons/hicolor/scalable/apps/warpline.svg"))));
    }

    void metainfoValidates() {
        const QString appstream = tool("appstreamcli", "appstream");
        QVERIFY2(!appstream.isEmpty(), "appstreamcli not found (make deps)");
        const Run r =
            run(appstream, {QStringLiteral("validate"), QStringLiteral("--no-net"), metainfo()});
        QVERIFY2(r.exitCode == 0, (r.out + r.err).constData());
        // The installed tree as a whole: the metainfo's launchable desktop file is there too.
        const Run tree =
            run(appstream, {QStringLiteral("validate-tree"), QStringLiteral("--no-net"), m_prefix});
        QVERIFY2(tree.exitCode == 0, (tree.out + tree.err).constData());
    }

    // The newest release in the metainfo is this version: bumping project(VERSION) needs a release
    // entry (with its date) for software centres.
    void metainfoNamesThisRelease() {
        QFile f(metainfo());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&f);
        QString launchable;
        QString release;
        while (!xml.atEnd()) {
            xml.readNext();
            if (!xml.isStartElement())
                continue;
            if (xml.name() == QStringLiteral("release") && release.isEmpty())
                release = xml.attributes().value(QStringLiteral("version")).toString();
            else if (xml.name() == QStringLiteral("launchable"))
                launchable = xml.readElementText();
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(release, QStringLiteral(WARPLINE_VERSION));
        QCOMPARE(launchable, QStringLiteral("warpline.desktop"));
    }

    // A file manager using the installed MIME database calls *.warpline files Warpline traces (a
    // kind of SQLite database, with Warpline's icon), and still calls other SQLite files plain
    // SQLite: asked through GLib (GNOME Files) and Qt (Dolphin), which weigh magic differently.
    void mimeType() {
        const QString update = tool("update-mime-database", "shared-mime-info");
        QVERIFY2(!update.isEmpty(), "update-mime-database not found (make deps)");
        const QString mimeDir = installed(QStringLiteral("share/mime"));
        const Run r = run(update, {mimeDir});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QFile globs(mimeDir + QStringLiteral("/globs2"));
        QVERIFY(globs.open(QIODevice::ReadOnly));
        QVERIFY(globs.readAll().contains(":application/x-warpline-trace:*.warpline"));

        const QString dataDirs = installed(QStringLiteral("share")) + QStringLiteral(":/usr/share");
        const QString unnamed = m_dir.filePath(QStringLiteral("database"));
        QVERIFY(QFile::copy(sample(), unnamed));

        const QString gio = tool("gio", "libglib2.0-bin");
        QVERIFY2(!gio.isEmpty(), "gio not found (make deps)");
        const auto gioType = [&](const QString& file) {
            const Run info = run(gio,
                                 {QStringLiteral("info"), QStringLiteral("-a"),
                                  QStringLiteral("standard::content-type,standard::icon"), file},
                                 60000, {{QStringLiteral("XDG_DATA_DIRS"), dataDirs}});
            return QString::fromUtf8(info.out);
        };
        const QString traceInfo = gioType(sample());
        QVERIFY2(traceInfo.contains(QStringLiteral("content-type: application/x-warpline-trace")),
                 qPrintable(traceInfo));
        QVERIFY2(traceInfo.contains(QStringLiteral("standard::icon: warpline,")),
                 qPrintable(traceInfo));
        const QString unnamedInfo = gioType(unnamed);
        QVERIFY2(unnamedInfo.contains(QStringLiteral("content-type: application/vnd.sqlite3")),
                 qPrintable(unnamedInfo));

        // This process has not used its MIME database yet: point it at the installed one.
        qputenv("XDG_DATA_DIRS", dataDirs.toUtf8());
        QMimeDatabase db;
        const QMimeType trace = db.mimeTypeForFile(sample());
        QCOMPARE(trace.name(), QStringLiteral("application/x-warpline-trace"));
        QVERIFY(trace.inherits(QStringLiteral("application/vnd.sqlite3")));
        QCOMPARE(trace.iconName(), QStringLiteral("warpline"));
        QCOMPARE(db.mimeTypeForFile(unnamed).name(), QStringLiteral("application/vnd.sqlite3"));
    }
};

QTEST_GUILESS_MAIN(TestInstall)
#include "tst_install.moc"
