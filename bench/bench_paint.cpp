// warpline-bench-paint: how fast the window gets a trace on screen and repaints its timeline.
//
//   warpline-bench-paint TRACE [--repeats N] [--width W] [--height H]
//
// Prints (offscreen, one line per figure):
//  - open -> first paint: seconds from "open" to the first painted timeline frame (the window
//    paints from the loaded store and shows the analyses when they follow), then to the analyses;
//  - the timeline's two setTrace calls of an open (the store, then the analyses);
//  - the median and max repaint time of the timeline at full-trace zoom and three deeper zooms
//    (1/100, 1/10^4, 1/10^6 of the trace, centred on its middle), painting the widget into an
//    image N times each (every time in full), and the repaint for a cursor move (cached rows).

#include "timeline/timelinewidget.h"
#include "trace/traceanalyzer.h"
#include "traceloader.h"

#include <QApplication>
#include <QImage>
#include <QPainter>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace warpline;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

// A full repaint: the cached picture of the rows is dropped first, as any change of the view does.
double paintOnce(views::TimelineWidget& timeline, QImage& image, bool full = true) {
    if (full)
        timeline.invalidate();
    const auto t = Clock::now();
    QPainter p(&image);
    timeline.render(&p);
    p.end();
    return since(t) * 1e3;
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: warpline-bench-paint TRACE [--repeats N] [--width W] "
                             "[--height H]\n");
        return 2;
    }
    const std::string path = argv[1];
    int repeats = 30, width = 1600, height = 900;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--repeats"))
            repeats = std::max(1, std::atoi(argv[i + 1]));
        else if (!std::strcmp(argv[i], "--width"))
            width = std::atoi(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--height"))
            height = std::atoi(argv[i + 1]);
    }

    const auto open = Clock::now();
    std::shared_ptr<const model::TraceStore> store;
    try {
        store = std::make_shared<const model::TraceStore>(model::TraceLoader::load(path));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "warpline-bench-paint: %s\n", e.what());
        return 2;
    }
    const double loadSeconds = since(open);
    // As the window does: the timeline paints from the store alone, the analyses follow.
    auto partial = std::make_shared<views::LoadedTrace>();
    partial->store = store;
    views::TimelineWidget timeline;
    timeline.resize(width, height);
    const auto firstSet = Clock::now();
    timeline.setTrace(partial);
    const double firstSetMs = since(firstSet) * 1e3;
    QImage image(timeline.size(), QImage::Format_ARGB32_Premultiplied);
    const double firstPaintMs = paintOnce(timeline, image);
    const double firstPaintSeconds = since(open);
    const auto analyseStart = Clock::now();
    auto trace = views::TraceAnalyzer::analyze(store);
    const double analyseSeconds = since(analyseStart);
    const auto secondSet = Clock::now();
    timeline.setTrace(trace);
    const double secondSetMs = since(secondSet) * 1e3;
    paintOnce(timeline, image);
    const double allSeconds = since(open);

    std::printf("trace: %s, %zu events (%zu kernels, %zu API calls), %.1f MB in memory\n",
                path.c_str(), store->eventCount(), store->kernelCount(), store->apiCallCount(),
                static_cast<double>(store->memoryBytes()) / 1e6);
    std::printf("open -> first paint: %.2f s (load %.2f s, first frame %.1f ms)\n",
                firstPaintSeconds, loadSeconds, firstPaintMs);
    std::printf("open -> analyses shown: %.2f s (analyses %.2f s)\n", allSeconds, analyseSeconds);
    std::printf("timeline setTrace: %.1f ms with the store, %.1f ms when the analyses follow\n",
                firstSetMs, secondSetMs);

    const double begin = static_cast<double>(store->beginTime());
    const double end = static_cast<double>(store->endTime());
    const double mid = 0.5 * (begin + end);
    struct Level {
        const char* name;
        double fraction;
    };
    const Level levels[] = {
        {"full trace", 1.0}, {"1/100", 1e-2}, {"1/10^4", 1e-4}, {"1/10^6", 1e-6}};
    std::printf("%-12s %14s %10s %10s %14s\n", "zoom", "window", "median ms", "max ms",
                "hover med ms");
    for (const Level& level : levels) {
        if (level.fraction == 1.0)
            timeline.fitAll();
        else {
            const double half = 0.5 * (end - begin) * level.fraction;
            timeline.setVisibleRange(mid - half, mid + half);
        }
        std::vector<double> ms, hover;
        for (int r = 0; r < repeats; ++r)
            ms.push_back(paintOnce(timeline, image));
        // Repaints that only move the cursor line reuse the cached rows.
        for (int r = 0; r < repeats; ++r)
            hover.push_back(paintOnce(timeline, image, false));
        std::sort(ms.begin(), ms.end());
        std::sort(hover.begin(), hover.end());
        std::printf("%-12s %11.0f ns %10.2f %10.2f %14.2f\n", level.name,
                    timeline.viewport().visibleDuration(), ms[ms.size() / 2], ms.back(),
                    hover[hover.size() / 2]);
    }
    return 0;
}
