#pragma once

// TimelineRows: the vertical layout of the timeline: which track is drawn on which row, its label
// and its y extent. A pure function of the store and the collapsed headers (no painting), in the
// order the viewer shows them. A store read from one file:
//
//   Process header
//     Thread header            per CPU thread (by globalTid)
//       CUDA API rows          one per API nesting depth (depth 0 first)
//       NVTX rows              one per NVTX depth or lane, marks last; depths 1 and deeper
//                              under a folded "depths" header when there are two or more
//   GPU header                 per device with streams
//     Stream rows              one per stream lane (lane 0 first)
//     Queue depth row          per stream, when enabled (the run-ahead row)
//     GPU metrics header       when the trace has metric samples of the device (--gpu-metrics)
//       Metric rows            one per sampled metric (SMs active, DRAM bandwidth, ...)
//
// A session (several files, TraceStore::isSession()) puts the same rows, one level deeper, under a
// header per source, in the order of sources() (by rank): "Rank 1 · node0" with the source's GPUs
// and clock alignment as its detail; its processes first, then its GPUs. GPU labels use the id the
// program used (DeviceInfo::cudaId).
//
// y is in px from the top of the row area (below the ruler); rows are contiguous and sorted by y.

#include "tracestore.h"

#include <QString>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace warpline::views {

enum class RowKind : uint8_t {
    ProcessHeader,
    ThreadHeader,
    Api,
    Nvtx,
    DeviceHeader,
    Gpu,
    QueueDepth,
    SourceHeader,
    MetricsHeader,
    GpuMetric,
    CpuSamples, // a thread's CPU samples: when it ran and waited (index: thread index)
    // A thread's NVTX rows of depth 1 and deeper under one header, folded until opened, when
    // there are two or more of them (a torch.profiler trace's op depths; index: thread index)
    NvtxDepths
};

struct TimelineRow {
    RowKind kind = RowKind::Api;
    // Api / Nvtx / Gpu: track index in its family. ThreadHeader: thread index. DeviceHeader:
    // device index. ProcessHeader: process index. SourceHeader: source index. QueueDepth: stream
    // index. MetricsHeader: index into TraceStore::gpuMetrics(). GpuMetric: that index * 256 + the
    // metric's index (metricSet(), metric()).
    uint32_t index = 0;
    int indent = 0; // label indent level
    QString label;  // plain text from the trace; never rich text
    // SourceHeader: its GPUs and clock ("GPU 1 NVIDIA H200 · clock +1.234 ms (shared clock)"),
    // drawn across the row; `warning` when the clock could not be aligned.
    QString detail;
    bool warning = false;
    int y = 0;              // px
    int height = 0;         // px
    int group = 0;          // rows of one thread or stream share a group (alternate shading)
    bool collapsed = false; // headers only
    bool idle = false;      // no work in the visible window: a thin row (Options::idle)

    bool isHeader() const {
        return kind == RowKind::SourceHeader || kind == RowKind::ProcessHeader ||
               kind == RowKind::ThreadHeader || kind == RowKind::DeviceHeader ||
               kind == RowKind::MetricsHeader || kind == RowKind::NvtxDepths;
    }
    uint32_t metricSet() const { return index / 256; }
    uint32_t metric() const { return index % 256; }
};

class TimelineRows {
public:
    struct Options {
        int spanHeight = 20;
        int headerHeight = 22;
        int queueDepthHeight = 34;
        int metricHeight = 26;
        // Streams (by TraceStore stream index) that get a queue depth row: those whose launch
        // queue ever held work. Empty: none.
        std::vector<bool> queueDepthRows;
        // Span rows (Gpu and Api, by track index) and queue depth rows (by stream) with no work
        // in the visible window: drawn idleHeight tall, so that start-up's streams and threads
        // do not take the height of the ones at work. Sorted.
        std::vector<std::pair<RowKind, uint32_t>> idle;
        int idleHeight = 6;
    };

    void build(const model::TraceStore& store, const Options& options);
    // The rows with no work in [t0, t1), as Options::idle wants them: the Api and Gpu tracks
    // without a span there, and the queue depth rows of streams none of whose lanes has one.
    static std::vector<std::pair<RowKind, uint32_t>> idleIn(const model::TraceStore& store,
                                                            int64_t t0, int64_t t1);
    void build(const model::TraceStore& store) { build(store, Options{}); }

    const std::vector<TimelineRow>& rows() const { return m_rows; }
    int totalHeight() const;
    // The row whose [y, y + height) holds y, or -1.
    int rowAt(int y) const;
    // The row showing a track, or -1 when there is none or its header is collapsed.
    int rowOfTrack(RowKind kind, uint32_t trackIndex) const;

    // Collapses or expands a header row's children (rebuilds; keeps the state for the next build).
    void setCollapsed(const model::TraceStore& store, int row, bool collapsed);
    // Opens the headers that hide a track's row (its thread's, its folded NVTX depths); true when
    // one was closed (the caller rebuilds).
    bool expandTo(const model::TraceStore& store, RowKind kind, uint32_t trackIndex);

private:
    Options m_options;
    std::set<std::pair<RowKind, uint32_t>> m_collapsed;
    std::set<uint32_t> m_openDepths; // threads whose NvtxDepths header is open
    std::vector<TimelineRow> m_rows;
};

} // namespace warpline::views
