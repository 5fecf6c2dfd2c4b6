#include "threadreaders.h"

#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace warpline::model {

namespace {

// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of a driver API call (ENUM_NSYS_EVENT_CLASS).
constexpr int64_t kEventClassCudaDriver = 1;

} // namespace

void readApiTables(Connection& db, const StoredSchema& schema, bool readPages,
                   uint64_t expectedRows, std::atomic<uint64_t>& rowsRead,
                   const std::atomic<bool>& cancel, ApiReadResult& out) {
    // nsys exports (and Warpline traces from format 2.0) keep driver calls in the RUNTIME table
    // with eventClass 1; Warpline 1.x traces kept them in a DRIVER table of their own.
    for (const char* table : {"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER"}) {
        if (!schema.hasTable(table))
            continue;
        const bool driverTable = std::string_view(table) == "CUPTI_ACTIVITY_KIND_DRIVER";
        const auto st = schema.rows(
            db, table,
            {"start", "end", "globalTid", "correlationId", "nameId", "returnValue", "eventClass"},
            {}, {}, readPages);
        int64_t lastTid = std::numeric_limits<int64_t>::min();
        ApiStage* rows = nullptr;
        uint64_t sinceProgress = 0;
        while (st->step()) {
            if (++sinceProgress == LoadProgress::kProgressEvery) {
                rowsRead += sinceProgress;
                sinceProgress = 0;
                if (cancel)
                    return;
            }
            const int64_t start = st->i64(0);
            const int64_t end = st->i64(1);
            if (st->isNull(0, start) || st->isNull(1, end) || end < start ||
                !plausibleTime(start) || !plausibleTime(end)) {
                ++out.skipped[table];
                continue;
            }
            const int64_t tid = st->i64(2);
            if (!rows || tid != lastTid) {
                rows = &out.threads[tid];
                if (out.threads.size() <= kReservedStages)
                    rows->expect(expectedRows);
                lastTid = tid;
            }
            out.begin = out.haveTime ? std::min(out.begin, start) : start;
            out.end = out.haveTime ? std::max(out.end, end) : end;
            out.haveTime = true;
            const ApiDomain domain = driverTable || st->i64(6) == kEventClassCudaDriver
                                         ? ApiDomain::Driver
                                         : ApiDomain::Runtime;
            rows->add(ApiRow{start, end, static_cast<NameId>(st->i64(4)),
                             static_cast<uint32_t>(st->i64(3)), static_cast<int32_t>(st->i64(5)),
                             static_cast<uint8_t>(domain)});
        }
        rowsRead += sinceProgress;
    }
}

void mergeApi(ApiReadResult& in, TraceStrings& strings, LoadStage& stage) {
    if (in.error)
        std::rethrow_exception(in.error);
    for (const auto& [table, count] : in.skipped)
        stage.skipped[table] += count;
    if (in.haveTime)
        stage.noteTime(in.begin, in.end);
    for (auto& [tid, calls] : in.threads) {
        // Consecutive calls often share a name: resolve the StringIds id only when it changes.
        NameId lastRaw = kUnresolved;
        NameId lastName = kNoName;
        const auto resolve = [&](NameId& name) {
            if (name != lastRaw) {
                lastRaw = name;
                lastName = strings.apiName(name);
            }
            name = lastName;
        };
        if (calls.inColumns()) {
            for (NameId& name : calls.columns().name)
                resolve(name);
        } else {
            for (ApiRow& r : calls.rows())
                resolve(r.name);
        }
        // The only API rows of a thread come from here.
        stage.thread(tid).api = std::move(calls);
    }
    in.threads.clear();
}

void readNvtx(const ReadSource& in, TraceStrings& strings, LoadStage& stage) {
    const char* table = "NVTX_EVENTS";
    if (!in.schema.hasTable(table))
        return;
    // One pass: domain names (eventType 75) and the ranges, which refer to domains by domainId.
    // A range keeps its raw domainId (kRawDomain) until every domain row has been read, as a
    // domain row may come after its ranges; ids beyond 32 bits wait in `pending`.
    std::unordered_map<int64_t, NameId> domains;
    struct Pending {
        std::vector<NvtxRow>* rows;
        size_t index;
        int64_t domainId;
    };
    std::vector<Pending> pending;
    bool anyRawDomain = false;
    const auto st = in.rows(
        table, {"start", "end", "eventType", "text", "textId", "globalTid", "color", "domainId"},
        {3}, {2, {34, 59, 60, 75}});
    int64_t lastTid = 0;
    ThreadStage* current = nullptr;
    while (st->step()) {
        in.progress.rowRead();
        const int64_t type = st->i64(2);
        if (type == 75) {
            const NameId name = !st->isNull(3)   ? strings.intern(st->text(3))
                                : !st->isNull(4) ? strings.name(st->i64(4))
                                                 : kNoName;
            domains[st->i64(7)] = name;
            continue;
        }
        if (type != 34 && type != 59 && type != 60)
            continue;
        const int64_t start = st->i64(0);
        int64_t end = st->i64(1);
        const bool endNull = st->isNull(1, end);
        if (endNull || type == 34)
            end = start;
        if (st->isNull(0, start) || end < start || !plausibleTime(start) || !plausibleTime(end)) {
            ++stage.skipped[table];
            continue;
        }
        NvtxRow row{};
        row.start = start;
        row.end = end;
        row.name = !st->isNull(3)   ? strings.intern(st->text(3))
                   : !st->isNull(4) ? strings.name(st->i64(4))
                                    : kNoName;
        row.color = static_cast<uint32_t>(st->i64(6));
        const int64_t domainId = st->i64(7);
        const bool hasDomain = !st->isNull(7, domainId);
        if (hasDomain && domainId >= 0 && domainId <= std::numeric_limits<uint32_t>::max()) {
            row.domain = static_cast<NameId>(domainId);
            row.flags = kRawDomain;
            anyRawDomain = true;
        }
        const int64_t tid = st->i64(5);
        if (!current || tid != lastTid) {
            current = &stage.thread(tid);
            lastTid = tid;
        }
        std::vector<NvtxRow>& into = type == 59   ? current->pushPop
                                     : type == 60 ? current->startEnd
                                                  : current->marks;
        if (stage.threads.size() <= kReservedStages)
            reserveAtThreshold(into, stage.expected.nvtx);
        if (type != 34 && endNull) {
            row.flags |= kUnclosedNvtx;
            ++stage.unclosedNvtx;
            stage.noteTime(start, start);
        } else {
            stage.noteTime(start, end);
        }
        if (hasDomain && !(row.flags & kRawDomain))
            pending.push_back({&into, into.size(), domainId});
        into.push_back(row);
    }
    const auto domainName = [&domains](int64_t id) {
        const auto d = domains.find(id);
        return d == domains.end() ? kNoName : d->second;
    };
    for (const Pending& p : pending)
        (*p.rows)[p.index].domain = domainName(p.domainId);
    if (anyRawDomain) {
        for (auto& [tid, s] : stage.threads) {
            (void)tid;
            for (auto* rows : {&s.pushPop, &s.startEnd, &s.marks}) {
                for (NvtxRow& r : *rows) {
                    if (r.flags & kRawDomain) {
                        r.domain = domainName(r.domain);
                        r.flags &= static_cast<uint8_t>(~kRawDomain);
                    }
                }
            }
        }
    }
}

} // namespace warpline::model
