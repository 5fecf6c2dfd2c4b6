#include "guardedquery.h"

#include "traceerror.h"

namespace warpline::model {

namespace {

// "5 s", "1500 ms".
std::string budgetText(std::chrono::milliseconds ms) {
    return ms.count() % 1000 == 0 ? std::to_string(ms.count() / 1000) + " s"
                                  : std::to_string(ms.count()) + " ms";
}

} // namespace

// The first table a statement reads ("SELECT ... FROM \"X\" WHERE ..." -> X), for messages.
std::string tableOf(std::string_view sql) {
    const size_t from = sql.find(" FROM ");
    if (from == std::string_view::npos)
        return "the file's schema";
    std::string_view rest = sql.substr(from + 6);
    const size_t end = rest.find_first_of(" ,");
    rest = rest.substr(0, end);
    if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"')
        rest = rest.substr(1, rest.size() - 2);
    return std::string(rest);
}

bool Connection::check() {
    if (m_keepGoing && !m_keepGoing()) {
        m_stop = Stop::Cancelled;
        return false;
    }
    if (pageFetches() > m_limits.maxPageFetches) {
        m_stop = Stop::TooManyPages;
        return false;
    }
    const Clock::time_point now = Clock::now();
    if (m_rows != m_rowMark) {
        m_rowMark = m_rows;
        m_lastRow = now;
    } else if (now - m_lastRow > m_limits.budget) {
        m_stop = Stop::OverBudget;
        return false;
    }
    return true;
}

void Statement::fail() {
    const int code = sqlite3_errcode(db());
    const std::string message = sqlite3_errmsg(db());
    const std::string& fileName = m_connection.fileName();
    if (m_connection.stop() == Connection::Stop::Cancelled)
        throw LoadCancelled();
    if (m_connection.stop() == Connection::Stop::OverBudget) {
        const std::string table = tableOf(m_sql);
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + fileName + ": reading " +
                             (table == "sqlite_master" ? "its schema" : table) + " ran for " +
                             budgetText(m_connection.limits().budget) +
                             " without returning a row, longer than reading the whole file "
                             "should take; it was stopped (the file was crafted or damaged)");
    }
    if (m_connection.stop() == Connection::Stop::TooManyPages)
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + fileName + ": reading " + tableOf(m_sql) +
                             " visited more pages than the file has (its pages are shared by "
                             "several parents: the file was crafted or damaged); reading was "
                             "stopped");
    if (code == SQLITE_TOOBIG)
        throw TraceError(TraceError::Kind::Corrupt,
                         "cannot read " + fileName + ": " + tableOf(m_sql) +
                             " holds a value larger than " + std::to_string(kMaxValueBytes >> 20) +
                             " MiB, far more than any trace has (the file was crafted or "
                             "damaged)");
    if (code == SQLITE_NOTADB)
        throw TraceError(TraceError::Kind::NotATrace,
                         fileName + " is not a Warpline or Nsight Systems trace: it is not an "
                                    "SQLite database");
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
        throw TraceError(TraceError::Kind::Locked,
                         fileName + " is locked by another program that is writing to it (a "
                                    "recording finishing, or a database tool with an open "
                                    "transaction); open it again when that program is done");
    throw TraceError(TraceError::Kind::Corrupt, "cannot read " + fileName + ": " + message +
                                                    " (the file may be damaged or truncated)");
}

void Statement::tooManyRows() {
    throw TraceError(TraceError::Kind::Corrupt,
                     "cannot read " + m_connection.fileName() + ": " + tableOf(m_sql) +
                         " gave more rows than a file of its size can hold (its pages are shared "
                         "by several parents: the file was crafted or damaged); reading was "
                         "stopped");
}

} // namespace warpline::model
