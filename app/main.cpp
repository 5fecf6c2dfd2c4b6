// warpline: the desktop trace viewer.
//   warpline [TRACE]                         opens the trace (none: the sample trace)
//   warpline TRACE TRACE... | FOLDER         opens them (a folder: its traces) as one session, one
//                                            trace per rank of a distributed job
//   warpline --screenshot FILE.png [TRACE...] renders the window once the trace is loaded, exits
//   warpline --find TEXT [TRACE]             finds events (kernel, API and NVTX names, Python
//                                            frames), selects the first, prints the count
//   warpline --largest-lag [TRACE]           selects the GPU op with the largest launch lag
//   warpline --report ID [TRACE]             shows the report tab ID (python-lines, syncs, ...)
//   warpline --over PHASE [TRACE]            the summary tables over a phase ("steady state",
//                                            "start-up", "warm-up", "teardown") or the visible
//                                            range (View > Statistics Over)
//
// Exit status of --screenshot: 0 written; 1 the trace could not be opened (the PNG shows the
// error page); 2 usage error or the PNG could not be written.

#include "mainwindow.h"
#include "warpline_version.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFileInfo>
#include <QTimer>
#include <cstdio>
#include <string_view>

namespace {

// --screenshot, --help and --version need no display: use the offscreen platform when there is
// none (QApplication aborts without a platform, before the parser could print anything).
void chooseHeadlessPlatform(int argc, char** argv) {
    bool headless = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--screenshot" || a.starts_with("--screenshot=") || a == "--help" || a == "-h" ||
            a == "-?" || a == "--help-all" || a == "--version" || a == "-v")
            headless = true;
    }
    if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
        qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

} // namespace

int main(int argc, char** argv) {
    chooseHeadlessPlatform(argc, argv);
    QApplication app(argc, argv);
    QCoreApplication::setOrganizationName(QStringLiteral("Warpline"));
    QCoreApplication::setApplicationName(QStringLiteral("warpline"));
    QCoreApplication::setApplicationVersion(QStringLiteral(WARPLINE_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("warpline"));

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("GPU trace viewer: CPU run-ahead, sync stalls, per-kernel GPU time."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption screenshot(
        QStringLiteral("screenshot"),
        QStringLiteral("Render the window to FILE (PNG) once the trace has loaded, then exit."),
        QStringLiteral("FILE"));
    const QCommandLineOption size(
        QStringLiteral("size"), QStringLiteral("Window size for --screenshot (default 1600x1000)."),
        QStringLiteral("WxH"), QStringLiteral("1600x1000"));
    const QCommandLineOption find(
        QStringLiteral("find"),
        QStringLiteral("Find the events that match TEXT (kernel, API call "
                       "and NVTX range names, Python functions and "
                       "file:line) and select the first (as Ctrl+F); "
                       "prints how many match."),
        QStringLiteral("TEXT"));
    parser.addOption(find);
    const QCommandLineOption largestLag(
        QStringLiteral("largest-lag"),
        QStringLiteral(
            "Select the GPU op with the largest launch lag (View > Largest Launch Lag)."));
    parser.addOption(largestLag);
    const QCommandLineOption report(
        QStringLiteral("report"),
        QStringLiteral("Show the report tab ID, named as in warpline-stats --report (kernels, "
                       "python-lines, syncs, ...)."),
        QStringLiteral("ID"));
    parser.addOption(report);
    const QCommandLineOption over(
        QStringLiteral("over"),
        QStringLiteral(
            "Compute the Kernels, CUDA API, NVTX, Memory operations and Python lines tables "
            "over PHASE: "
            "\"steady state\", \"start-up\", \"warm-up\", \"teardown\" or "
            "\"visible range\" (View > Statistics Over)."),
        QStringLiteral("PHASE"));
    parser.addOption(over);
    parser.addOption(screenshot);
    parser.addOption(size);
    parser.addPositionalArgument(
        QStringLiteral("trace"),
        QStringLiteral("Trace file to open (.warpline, nsys SQLite, PyTorch profiler JSON). "
                       "Several files, or a folder of them, open as one session: one trace per "
                       "rank of a distributed job, on one time axis."),
        QStringLiteral("[TRACE... | FOLDER]"));
    parser.process(app);
    const QStringList traces = parser.positionalArguments();

    auto* window = new warpline::app::MainWindow;
    window->setAttribute(Qt::WA_DeleteOnClose);
    if (parser.isSet(find)) {
        QObject::connect(window, &warpline::app::MainWindow::searched, window,
                         [](const QString& text, int matches) {
                             std::printf("%d events match \"%s\"\n", matches, qPrintable(text));
                             std::fflush(stdout);
                         });
        window->find(parser.value(find));
    }
    if (parser.isSet(largestLag))
        window->showLargestLag();
    if (parser.isSet(report))
        window->showReport(parser.value(report));
    if (parser.isSet(over))
        QObject::connect(
            window, &warpline::app::MainWindow::traceLoaded, window,
            [window, scope = parser.value(over)] { window->setStatisticsScope(scope); });

    if (parser.isSet(screenshot)) {
        const QString out = parser.value(screenshot);
        const QStringList wh = parser.value(size).split(QLatin1Char('x'));
        const int w = wh.size() == 2 ? wh[0].toInt() : 0;
        const int h = wh.size() == 2 ? wh[1].toInt() : 0;
        if (w < 200 || h < 150) {
            std::fprintf(stderr, "warpline: --screenshot FILE.png [--size WxH] [TRACE... | FOLDER] "
                                 "(size at least 200x150)\n");
            return 2;
        }
        window->resize(w, h);
        window->show();
        const auto shoot = [window, out](int status) {
            // Let layouts and the first paint settle before grabbing.
            QTimer::singleShot(300, window, [window, out, status] {
                if (!window->saveScreenshot(out)) {
                    std::fprintf(stderr, "warpline: cannot write %s\n", qPrintable(out));
                    QCoreApplication::exit(2);
                    return;
                }
                QCoreApplication::exit(status);
            });
        };
        QObject::connect(window, &warpline::app::MainWindow::traceLoaded, window,
                         [shoot] { shoot(0); });
        QObject::connect(window, &warpline::app::MainWindow::loadFailed, window,
                         [shoot](const QString& path, const QString& message) {
                             std::fprintf(
                                 stderr, "warpline: could not open %s: %s\n",
                                 qPrintable(path.isEmpty() ? QStringLiteral("the sample") : path),
                                 qPrintable(message));
                             shoot(1);
                         });
        if (traces.isEmpty())
            window->openSample();
        else
            window->openTraces(traces);
        return app.exec();
    }

    window->show();
    if (traces.isEmpty())
        window->openSample();
    else
        window->openTraces(traces);
    return app.exec();
}
