#pragma once

// TraceLoader: reads a Warpline trace, or an Nsight Systems SQLite export, into a TraceStore.
//
// The file is opened read-only (SQLite URI mode=ro) and is never changed, so a trace that is still
// being recorded can be opened; what was committed so far is read. A trace whose recorder was
// killed in the middle of a batch has a hot journal (FILE-journal) that SQLite must roll back
// before anything can be read: the loader rolls back a private copy in the temporary directory
// instead of the file, and says so in warnings(). A file shorter than its SQLite header says
// (cut off while copying) loads if the rows it keeps are readable, with a warning, and otherwise
// fails with a message that says it was cut off. Tables are read by their nsys names; optional
// tables may be missing and extra columns are ignored.
//
// The file is untrusted. Only the stored tables of the names it reads are read: a view, virtual
// table or generated column of such a name is skipped with a warning (a Warpline trace's own
// CUPTI_ACTIVITY_KIND_KERNEL view is skipped silently: its stored WARPLINE_KERNELS and
// WARPLINE_KERNEL_CONFIGS are read). Connections run with trusted_schema off, SQLite's defensive
// mode, no extension loading and values capped at 256 MiB; a progress handler stops any query that
// runs past Options::queryBudget without a row, and honours cancel inside a query. Rows that make
// no sense (end < start, NULL times, times beyond
// +-2^62 ns) are skipped and counted in TraceStore::warnings(); they never abort a load.
//
// Thread affinity: load() may run on any thread; it touches no global state, so several loads may
// run at once. The progress callback is called on the loading thread.

#include "tracestore.h"

#include <chrono>
#include <functional>
#include <string>

namespace warpline::model {

class TraceLoader {
public:
    // Called with the fraction done (0..1, non-decreasing) every few tens of thousands of rows;
    // return false to cancel the load (load() then throws LoadCancelled).
    using Progress = std::function<bool(double fraction)>;

    struct Options {
        Progress progress;
        // How long one SQLite query may run without returning a row before the load stops with
        // a TraceError; 0: 5 s plus the time to read the file at 20 MiB/s. Tests set it.
        std::chrono::milliseconds queryBudget{0};
        // The path the store names as its source (TraceStore::sources()); empty: the file loaded.
        // KinetoImport loads a temporary conversion and names the JSON the user opened.
        std::string sourcePath = {};
        // Decode the large tables straight from their b-tree pages (PageReader), falling back to
        // SQL for whatever it does not decode; false: SQL only (tests and benchmarks compare).
        bool readPages = true;
        // Bytes the load may use; 0: MemAvailable. A file whose events need more is refused
        // before reading (TraceError::Kind::TooLarge). Tests set it.
        uint64_t availableMemory = 0;
    };

    // Throws TraceError (traceerror.h) when the file is missing or not readable, is not SQLite, is
    // SQLite without a kernel or runtime table, has a newer major format version, is locked by a
    // writer for more than two seconds, holds more events than the memory available, or cannot be
    // read; LoadCancelled when progress returned
    // false.
    static TraceStore load(const std::string& path, const Options& options);
    static TraceStore load(const std::string& path) { return load(path, Options{}); }

    // The highest trace format major version this build reads (PRAGMA user_version / 100).
    static constexpr int kMaxFormatMajor = 2;

private:
    // The rooms of a load, each in files of its own in this folder (loaderstage.h: the rows they
    // hand on). Nested because TraceStore, its tracks, Callchains and CpuSamples let TraceLoader,
    // and so these, fill their private columns; the rest of the rooms (storedschema.h, the table
    // readers) are plain functions and classes.
    class Impl;              // traceloader.cpp: opening, the order of the work, progress, warnings
    class StackReaders;      // stackreaders.h: call stacks and CPU samples
    class TrackBuilder;      // trackbuilder.h: threads, streams and their tracks
    class CorrelationLinker; // correlationlinker.h: launch links, same-stream overlaps
};

} // namespace warpline::model
