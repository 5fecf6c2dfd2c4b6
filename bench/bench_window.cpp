// warpline-bench-window: how responsive the window stays while it opens a trace.
//
//   warpline-bench-window TRACE
//
// Opens TRACE in the main window (offscreen) as File > Open does, and until the window shows it
// (traceLoaded) ticks a 5 ms timer on the GUI thread: prints the time to traceLoaded and the
// longest gap between ticks, i.e. the longest the window could not repaint or react to a click
// (Cancel included). Issue 16 asks that the GUI stay responsive through a 100M-event load.

#include "mainwindow.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QTimer>
#include <algorithm>
#include <cstdio>

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: warpline-bench-window TRACE\n");
        return 2;
    }
    const QString path = QString::fromLocal8Bit(argv[1]);
    warpline::app::MainWindow window;
    window.resize(1600, 1000);
    window.show();

    QElapsedTimer clock;
    qint64 lastTick = 0;
    qint64 longestGap = 0;
    qint64 longestGapAt = 0;
    QTimer ticker;
    ticker.setInterval(5);
    QObject::connect(&ticker, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        if (now - lastTick > longestGap) {
            longestGap = now - lastTick;
            longestGapAt = now;
        }
        lastTick = now;
    });
    int exitCode = 0;
    QObject::connect(&window, &warpline::app::MainWindow::traceLoaded, [&] {
        std::printf("open -> shown in the window: %.2f s; GUI thread's longest gap %.1f ms (ending "
                    "at %.2f s)\n",
                    clock.nsecsElapsed() / 1e9, longestGap / 1e6, longestGapAt / 1e9);
        app.quit();
    });
    QObject::connect(&window, &warpline::app::MainWindow::loadFailed,
                     [&](const QString&, const QString& message) {
                         std::fprintf(stderr, "warpline-bench-window: %s\n", qPrintable(message));
                         exitCode = 2;
                         app.quit();
                     });
    QTimer::singleShot(0, [&] {
        clock.start();
        ticker.start();
        window.openTrace(path);
    });
    app.exec();
    return exitCode;
}
