#pragma once

// LoadProgress: how far one load is, told to TraceLoader::Options::progress, whose false answer
// cancels the load (set() then throws LoadCancelled). The loader's (traceloader.cpp) only.
//
// Reading rows is kReadShare of the work: rowRead() counts the loading thread's rows and
// helperRows() the API reader thread's, against the rows the tables may hold (expectRows());
// building and linking move the fraction on from there. The fraction told never goes down.
//
// Cost: rowRead() is an increment per row; the callback runs every kProgressEvery rows.
// Thread affinity: the loading thread, except helperRows(), which the API reader thread adds to.

#include "traceerror.h"
#include "traceloader.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

namespace warpline::model {

// Reading rows is about 85% of the work; sorting and linking the rest.
inline constexpr double kReadShare = 0.85;

class LoadProgress {
public:
    static constexpr int kProgressEvery = 16384; // rows between progress callbacks

    explicit LoadProgress(TraceLoader::Progress callback) : m_callback(std::move(callback)) {}

    // The rows the tables may hold (their MAX(rowid)), against which rows read are counted.
    void expectRows(uint64_t rows) { m_totalRows = 1.0 + static_cast<double>(rows); }
    void rowRead() {
        m_rowsDone += 1;
        if (++m_sinceProgress < kProgressEvery)
            return;
        m_sinceProgress = 0;
        reportRows();
    }
    // Rows the API reader thread read, added in batches.
    std::atomic<uint64_t>& helperRows() { return m_helperRows; }
    // The rows read on both threads as a fraction of the reading share.
    void reportRows() {
        const double rows = m_rowsDone + static_cast<double>(m_helperRows.load());
        set(kReadShare * std::min(1.0, rows / m_totalRows));
    }

    // Tells the callback; throws LoadCancelled when it answers false.
    void set(double fraction) {
        fraction = std::max(fraction, m_lastFraction);
        m_lastFraction = fraction;
        if (m_callback && !m_callback(fraction))
            throw LoadCancelled();
    }
    double fraction() const { return m_lastFraction; }
    // What a connection's progress handler asks inside a long query: false once cancelled.
    bool keepGoing() const { return !m_callback || m_callback(m_lastFraction); }

private:
    TraceLoader::Progress m_callback;
    double m_totalRows = 1;
    double m_rowsDone = 0;
    std::atomic<uint64_t> m_helperRows{0};
    int m_sinceProgress = 0;
    double m_lastFraction = 0;
};

} // namespace warpline::model
