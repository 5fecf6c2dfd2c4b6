#pragma once

// Test helper for the analysis tests: writes a small trace with the real TraceWriter (so the file
// is exactly what the collector writes) and loads it with the real TraceLoader. Times are ns.
// Each launch-style helper gives the API call a fresh correlation id and links its GPU op to it.

#include "table.h"
#include "traceloader.h"
#include "tracewriter.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>
#include <memory>
#include <string>

class TraceGen {
public:
    static constexpr uint32_t kPid = 4242;
    static constexpr uint32_t kTid = 4243;

    explicit TraceGen(const QString& path) : m_path(path.toStdString()) {
        QFile::remove(path);
        m_writer = std::make_unique<warpline::format::TraceWriter>(m_path);
        m_writer->setProcess(kPid, "app");
    }

    warpline::format::TraceWriter& writer() { return *m_writer; }
    uint32_t nextCorrelation() { return ++m_correlation; }

    // An API call on thread `tid` with correlation id `correlation` (0: a fresh one); returns it.
    uint32_t api(int64_t start, int64_t end, const std::string& name, uint32_t correlation = 0,
                 uint32_t tid = kTid, bool driver = false) {
        warpline::format::ApiRecord r;
        r.domain = driver ? warpline::format::ApiRecord::Domain::Driver
                          : warpline::format::ApiRecord::Domain::Runtime;
        r.start = start;
        r.end = end;
        r.processId = kPid;
        r.threadId = tid;
        r.correlationId = correlation ? correlation : nextCorrelation();
        r.name = name;
        m_writer->addApi(r);
        return r.correlationId;
    }

    void kernel(int64_t start, int64_t end, uint32_t correlation, uint32_t stream = 7,
                const std::string& mangled = "_Z6kernelPf", uint32_t device = 0) {
        warpline::format::KernelRecord k;
        k.start = start;
        k.end = end;
        k.deviceId = device;
        k.contextId = 1 + device;
        k.streamId = stream;
        k.correlationId = correlation;
        k.mangledName = mangled;
        m_writer->addKernel(k);
    }

    // cudaLaunchKernel_v7000 over [callStart, callEnd) and its kernel over [gpuStart, gpuEnd).
    uint32_t launch(int64_t callStart, int64_t callEnd, int64_t gpuStart, int64_t gpuEnd,
                    uint32_t stream = 7, const std::string& mangled = "_Z6kernelPf",
                    uint32_t tid = kTid) {
        const uint32_t c = api(callStart, callEnd, "cudaLaunchKernel_v7000", 0, tid);
        kernel(gpuStart, gpuEnd, c, stream, mangled);
        return c;
    }

    // A copy op (copyKind: 1 HtoD, 2 DtoH, 8 DtoD) with correlation id `correlation`.
    void memcpy(int64_t start, int64_t end, uint32_t correlation, uint64_t bytes, uint8_t copyKind,
                uint32_t stream = 7, uint32_t device = 0) {
        warpline::format::MemcpyRecord m;
        m.start = start;
        m.end = end;
        m.deviceId = device;
        m.contextId = 1 + device;
        m.streamId = stream;
        m.correlationId = correlation;
        m.bytes = bytes;
        m.copyKind = copyKind;
        m.srcKind = copyKind == 2 ? 3 : 1;
        m.dstKind = copyKind == 2 ? 1 : 3;
        m_writer->addMemcpy(m);
    }

    // A memset op with correlation id `correlation`.
    void memset(int64_t start, int64_t end, uint32_t correlation, uint64_t bytes,
                uint32_t stream = 7) {
        warpline::format::MemsetRecord m;
        m.start = start;
        m.end = end;
        m.contextId = 1;
        m.streamId = stream;
        m.correlationId = correlation;
        m.bytes = bytes;
        m_writer->addMemset(m);
    }

    // A CUPTI SYNCHRONIZATION record (type 1 event, 2 stream wait event, 3 stream, 4 context).
    void sync(int64_t start, int64_t end, uint32_t correlation, uint8_t type, uint32_t stream = 7) {
        warpline::format::SyncRecord s;
        s.start = start;
        s.end = end;
        s.contextId = 1;
        if (type == 1 || type == 2 || type == 3)
            s.streamId = stream;
        s.correlationId = correlation;
        s.syncType = type;
        m_writer->addSync(s);
    }

    // A push/pop NVTX range on thread `tid`.
    void range(int64_t start, int64_t end, const std::string& name, uint32_t tid = kTid) {
        warpline::format::MarkerRecord m;
        m.kind = warpline::format::MarkerRecord::Kind::Start;
        m.timestamp = start;
        m.id = ++m_markerId;
        m.processId = kPid;
        m.threadId = tid;
        m.name = name;
        m_writer->addMarker(m);
        m.kind = warpline::format::MarkerRecord::Kind::End;
        m.timestamp = end;
        m.name = {};
        m_writer->addMarker(m);
    }

    warpline::model::TraceStore load() {
        if (m_writer) {
            m_writer->finish("complete");
            m_writer.reset();
        }
        return warpline::model::TraceLoader::load(m_path);
    }

private:
    std::string m_path;
    std::unique_ptr<warpline::format::TraceWriter> m_writer;
    uint32_t m_correlation = 0;
    uint32_t m_markerId = 0;
};

// Cell helpers for Table checks.
inline int64_t cellInt(const warpline::model::Table& t, size_t row, const std::string& column) {
    const int c = t.columnIndex(column);
    if (c < 0)
        qFatal("no column %s", column.c_str());
    return std::get<int64_t>(t.cell(row, static_cast<size_t>(c)));
}
inline double cellReal(const warpline::model::Table& t, size_t row, const std::string& column) {
    const int c = t.columnIndex(column);
    if (c < 0)
        qFatal("no column %s", column.c_str());
    return std::get<double>(t.cell(row, static_cast<size_t>(c)));
}
inline std::string cellText(const warpline::model::Table& t, size_t row,
                            const std::string& column) {
    const int c = t.columnIndex(column);
    if (c < 0)
        qFatal("no column %s", column.c_str());
    return std::get<std::string>(t.cell(row, static_cast<size_t>(c)));
}
