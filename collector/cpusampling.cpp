#include "cpusampling.h"

#include "elfsymbols.h"
#include "tracewriter.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <linux/perf_event.h>
#include <map>
#include <poll.h>
#include <sched.h>
#include <set>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <unordered_map>

namespace warpline::collector {

namespace {

constexpr size_t kRingPages = 64;  // data pages per CPU (256 KiB with 4 KiB pages)
constexpr size_t kMaxFrames = 128; // frames kept per stack
constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
                                 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;

int openEvent(perf_event_attr& attr, pid_t pid, int cpu) {
    return static_cast<int>(
        ::syscall(SYS_perf_event_open, &attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

perf_event_attr baseAttr() {
    perf_event_attr a{};
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.sample_type = kSampleType;
    a.disabled = 1;
    a.enable_on_exec = 1;
    a.inherit = 1;
    a.exclude_hv = 1;
    a.exclude_callchain_kernel = 1;
    a.sample_id_all = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    return a;
}

struct ChainKey {
    uint32_t pid;
    std::vector<uint64_t> ips;
    bool operator==(const ChainKey&) const = default;
};
struct ChainKeyHash {
    size_t operator()(const ChainKey& k) const {
        uint64_t h = 1469598103934665603ull ^ k.pid;
        for (uint64_t ip : k.ips)
            h = (h ^ ip) * 1099511628211ull;
        return static_cast<size_t>(h);
    }
};

int64_t monotonicNs() {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

} // namespace

struct CpuSampler::Ring {
    int fd = -1;
    void* base = nullptr;
    size_t size = 0; // mapping: header page + data pages
    size_t dataSize = 0;
    std::vector<uint8_t> scratch; // a record that wraps around the end of the data area
    ~Ring() {
        if (base)
            ::munmap(base, size);
        if (fd >= 0)
            ::close(fd);
    }
};

struct CpuSampler::Raw {
    struct Mmap {
        uint64_t start, length, pgoff;
        std::string file;
    };
    struct Process {
        std::vector<Mmap> maps; // in the order mapped: a later mapping wins
        uint32_t parent = 0;    // forked from (its maps hold until the process execs)
        bool execed = false;
        int64_t execNs = 0; // its first exec (CLOCK_MONOTONIC)
    };
    std::vector<format::CpuSampleData::Sample> samples;
    std::vector<format::CpuSampleData::Switch> switches;
    std::vector<ChainKey> chains;
    std::unordered_map<ChainKey, uint32_t, ChainKeyHash> chainIds;
    std::map<uint32_t, Process> processes;
    std::map<std::pair<uint32_t, uint32_t>, std::string> names;
    // A per-CPU clock: the program's processes so far, and the records of other processes read
    // in the last two drain passes (kept until a FORK record read later may show them to be the
    // program's; records of different CPUs arrive in any order).
    std::set<uint32_t> program;
    bool forked = false; // a FORK record since program was last grown
    struct PendingSample {
        format::CpuSampleData::Sample sample;
        std::vector<uint64_t> ips;
        uint64_t pass;
    };
    std::vector<PendingSample> pendingSamples;
    std::vector<std::pair<format::CpuSampleData::Switch, uint64_t>> pendingSwitches;
    uint64_t pass = 0;
    uint64_t lost = 0;
    bool full = false;
    ChainKey key; // scratch
};

CpuSampler::CpuSampler() : m_raw(std::make_unique<Raw>()) {}

CpuSampler::~CpuSampler() {
    if (running())
        stop();
    if (m_wakeFd >= 0)
        ::close(m_wakeFd);
}

bool CpuSampler::start(pid_t pid, const Options& options, std::string* whyNot) {
    m_options = options;
    m_root = static_cast<uint32_t>(pid);
    m_raw->program = {m_root};
    m_self = static_cast<uint32_t>(::getpid());
    const uint32_t rate = std::clamp<uint32_t>(options.rateHz, 1, 100'000);
    const long pageSize = ::sysconf(_SC_PAGESIZE);
    const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    int firstError = 0;
    // Benchmark knobs (tests/gpu/device_visit_cpusampling.sh), comma-separated in
    // WARPLINE_CPU_SAMPLING_TUNING: noswitch (no context-switch records), nocallchain (the
    // sampled address alone, no stack walk), toggle=MS (cpusampling.h), perthread (the
    // per-thread clocks even where per-CPU ones are allowed).
    const char* tuningEnv = std::getenv("WARPLINE_CPU_SAMPLING_TUNING");
    const std::string tuning = tuningEnv ? "," + std::string(tuningEnv) + "," : "";
    const bool noSwitch = tuning.find(",noswitch,") != std::string::npos;
    const bool noCallchain = tuning.find(",nocallchain,") != std::string::npos;
    const bool perThreadOnly = tuning.find(",perthread,") != std::string::npos;
    if (const size_t at = tuning.find(",toggle="); at != std::string::npos)
        m_toggleNs = std::strtoull(tuning.c_str() + at + 8, nullptr, 10) * 1'000'000ull;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    const bool knowAllowed = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0;

    // One ring per CPU. Per CPU (perCpu): a clock on each CPU this process may use, sampling
    // whatever runs there; the program's processes are picked out at stop(). Per thread: a task
    // clock that every thread and process of the program inherits. False when the kernel
    // refused the first event (the other kind may still be allowed).
    const auto openRings = [&](bool perCpu) {
        for (long cpu = 0; cpu < cpus; ++cpu) {
            if (perCpu && knowAllowed && !CPU_ISSET(static_cast<int>(cpu), &allowed))
                continue;
            perf_event_attr clock = baseAttr();
            clock.config = perCpu ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_TASK_CLOCK;
            clock.sample_period = 1'000'000'000ull / rate; // both clocks count nanoseconds
            if (perCpu) {
                clock.inherit = 0;
                clock.enable_on_exec = 0; // on now; samples before the exec are dropped
                clock.disabled = 0;
                clock.exclude_idle = 1;
            }
            clock.mmap = 1;
            clock.mmap2 = 1;
            clock.comm = 1;
            clock.comm_exec = 1;
            clock.task = 1;
            clock.context_switch = noSwitch ? 0 : 1;
            if (noCallchain)
                clock.sample_type &= ~static_cast<uint64_t>(PERF_SAMPLE_CALLCHAIN);
            clock.watermark = 1;
            clock.wakeup_watermark = static_cast<uint32_t>(kRingPages * pageSize / 4);
            const pid_t target = perCpu ? -1 : pid;
            int fd = openEvent(clock, target, static_cast<int>(cpu));
            if (fd < 0 && !perCpu && (errno == EACCES || errno == EPERM)) {
                clock.exclude_kernel = 1; // perf_event_paranoid 2: user space only
                fd = openEvent(clock, target, static_cast<int>(cpu));
            }
            if (fd < 0) {
                if (!firstError)
                    firstError = errno;
                if (perCpu && (errno == EACCES || errno == EPERM)) {
                    m_rings.clear();
                    return false;
                }
                continue; // an offline CPU
            }
            auto ring = std::make_unique<Ring>();
            ring->fd = fd;
            ring->dataSize = kRingPages * static_cast<size_t>(pageSize);
            ring->size = ring->dataSize + static_cast<size_t>(pageSize);
            void* base = ::mmap(nullptr, ring->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (base == MAP_FAILED) {
                if (!firstError)
                    firstError = errno;
                continue;
            }
            ring->base = base;
            m_rings.push_back(std::move(ring));
        }
        return !m_rings.empty();
    };
    // Per CPU first: a task clock starts a timer each time a thread goes onto a CPU and stops it
    // when the thread leaves, so a program that waits often pays at every switch (at 1 kHz the
    // timer is mostly the CPU's next, and reprogramming it is a hypervisor exit in a VM:
    // docs/benchmarks.md, 4.6% for a loop that sleeps once a step, against 0.4% without the
    // sleep). The per-CPU clock needs perf_event_paranoid <= 0 or CAP_PERFMON (root has it).
    m_perCpu = !perThreadOnly && openRings(true);
    if (!m_perCpu) {
        firstError = 0;
        openRings(false);
    }
    if (m_rings.empty()) {
        if (whyNot) {
            *whyNot = std::string("CPU sampling is off: the kernel refused perf events (") +
                      std::strerror(firstError) + ")";
            if (firstError == EACCES || firstError == EPERM)
                *whyNot += "; allow them with `sudo sysctl kernel.perf_event_paranoid=2` (or run "
                           "as root; in a container, allow the perf_event_open system call)";
            else if (firstError == ENOENT || firstError == ENOSYS)
                *whyNot += "; this kernel has no perf events";
        }
        return false;
    }
    m_callchains = !noCallchain;
    m_wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    m_quit = false;
    m_reader = std::thread([this] { readLoop(); });
    return true;
}

void CpuSampler::readLoop() {
    std::vector<pollfd> fds;
    for (const auto& r : m_rings)
        fds.push_back({r->fd, POLLIN, 0});
    fds.push_back({m_wakeFd, POLLIN, 0});
    const int64_t toggleFrom = monotonicNs() + 1'000'000'000; // after the program's exec
    while (!m_quit) {
        int timeoutMs = 100;
        if (m_toggleNs) {
            const auto period = static_cast<int64_t>(m_toggleNs);
            const int64_t now = monotonicNs();
            const int64_t next = (now / period + 1) * period;
            timeoutMs = static_cast<int>(std::min<int64_t>(100, (next - now) / 1'000'000 + 1));
        }
        ::poll(fds.data(), fds.size(), timeoutMs);
        if (m_toggleNs && monotonicNs() >= toggleFrom)
            toggleIfDue();
        for (auto& r : m_rings)
            drain(*r);
        if (m_perCpu)
            resolvePending(false);
    }
    for (auto& r : m_rings)
        drain(*r);
    if (m_perCpu)
        resolvePending(true);
}

void CpuSampler::keepSample(format::CpuSampleData::Sample s) {
    Raw& raw = *m_raw;
    if (raw.samples.size() >= m_options.maxSamples) {
        raw.full = true;
        return;
    }
    const auto [it, added] =
        raw.chainIds.try_emplace(raw.key, static_cast<uint32_t>(raw.chains.size()));
    if (added)
        raw.chains.push_back(raw.key);
    s.chain = it->second;
    raw.samples.push_back(s);
}

void CpuSampler::resolvePending(bool last) {
    // A record read in pass p is decided at the end of pass p + 1: a FORK record written before
    // it (the fork comes before the child runs) was in a ring drained by then.
    Raw& raw = *m_raw;
    growProgram();
    const auto due = [&](uint64_t pass) { return last || pass < raw.pass; };
    size_t kept = 0;
    for (size_t i = 0; i < raw.pendingSamples.size(); ++i) {
        Raw::PendingSample& p = raw.pendingSamples[i];
        if (!due(p.pass)) {
            if (kept != i) // a vector moved onto itself would be left empty
                raw.pendingSamples[kept] = std::move(p);
            ++kept;
        } else if (raw.program.count(p.sample.pid)) {
            raw.key.pid = p.sample.pid;
            raw.key.ips = std::move(p.ips);
            keepSample(p.sample);
        }
    }
    raw.pendingSamples.resize(kept);
    kept = 0;
    for (auto& [sw, pass] : raw.pendingSwitches) {
        if (!due(pass))
            raw.pendingSwitches[kept++] = {sw, pass};
        else if (raw.program.count(sw.pid) && raw.switches.size() < 4 * m_options.maxSamples)
            raw.switches.push_back(sw);
    }
    raw.pendingSwitches.resize(kept);
    ++raw.pass;
}

void CpuSampler::toggleIfDue() {
    const int64_t before = monotonicNs();
    const bool on = (before / static_cast<int64_t>(m_toggleNs)) % 2 == 0;
    if (m_toggles.size() && m_toggles.back().on == on)
        return;
    // An ioctl on an inherited event reaches its copies in every thread and child process.
    for (const auto& r : m_rings)
        ::ioctl(r->fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
    m_toggles.push_back({before, monotonicNs(), on});
}

void CpuSampler::drain(Ring& ring) {
    auto* header = static_cast<perf_event_mmap_page*>(ring.base);
    const uint8_t* data = static_cast<const uint8_t*>(ring.base) + (ring.size - ring.dataSize);
    const uint64_t head = __atomic_load_n(&header->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = header->data_tail;
    while (tail + sizeof(perf_event_header) <= head) {
        perf_event_header h{};
        const size_t at = tail % ring.dataSize;
        const auto copyOut = [&](void* to, size_t from, size_t n) {
            const size_t first = std::min(n, ring.dataSize - from);
            std::memcpy(to, data + from, first);
            std::memcpy(static_cast<uint8_t*>(to) + first, data, n - first);
        };
        copyOut(&h, at, sizeof h);
        if (h.size < sizeof h || tail + h.size > head)
            break;
        if (at + h.size <= ring.dataSize) {
            handleRecord(data + at, h.size);
        } else {
            ring.scratch.resize(h.size);
            copyOut(ring.scratch.data(), at, h.size);
            handleRecord(ring.scratch.data(), h.size);
        }
        tail += h.size;
    }
    __atomic_store_n(&header->data_tail, tail, __ATOMIC_RELEASE);
}

void CpuSampler::handleRecord(const uint8_t* record, size_t size) {
    Raw& raw = *m_raw;
    perf_event_header h{};
    std::memcpy(&h, record, sizeof h);
    const uint8_t* p = record + sizeof h;
    const uint8_t* end = record + size;
    const auto u32 = [&](const uint8_t* at) {
        uint32_t v = 0;
        if (at + 4 <= end)
            std::memcpy(&v, at, 4);
        return v;
    };
    const auto u64 = [&](const uint8_t* at) {
        uint64_t v = 0;
        if (at + 8 <= end)
            std::memcpy(&v, at, 8);
        return v;
    };
    // sample_id at the end of other records: pid, tid (8), time (8), cpu, res (8), id (8).
    const uint8_t* id = end - 32;
    const uint32_t idPid = u32(id), idTid = u32(id + 4), idCpu = u32(id + 16);
    const auto idTime = static_cast<int64_t>(u64(id + 8));
    switch (h.type) {
    case PERF_RECORD_SAMPLE: {
        if (raw.full)
            return;
        const uint64_t ip = u64(p + 8);
        format::CpuSampleData::Sample s;
        s.pid = u32(p + 16);
        if (s.pid == 0 || s.pid == m_self)
            return; // a per-CPU clock's idle or recorder samples
        s.tid = u32(p + 20);
        s.monotonicNs = static_cast<int64_t>(u64(p + 24));
        s.cpu = u32(p + 32);
        s.state = format::SampledThreadState::Running;
        const uint64_t count = m_callchains ? u64(p + 40) : 0;
        const uint8_t* ips = p + 48;
        raw.key.pid = s.pid;
        raw.key.ips.clear();
        for (uint64_t i = 0; i < count && ips + 8 * (i + 1) <= end; ++i) {
            const uint64_t frame = u64(ips + 8 * i);
            if (frame >= static_cast<uint64_t>(PERF_CONTEXT_MAX))
                continue; // a context marker (user, kernel)
            if (raw.key.ips.size() < kMaxFrames)
                raw.key.ips.push_back(frame);
        }
        if (raw.key.ips.empty())
            raw.key.ips.push_back(ip);
        if (m_perCpu && !raw.program.count(s.pid)) {
            raw.pendingSamples.push_back({s, raw.key.ips, raw.pass});
            break;
        }
        keepSample(s);
        break;
    }
    case PERF_RECORD_SWITCH:
    case PERF_RECORD_SWITCH_CPU_WIDE: { // per CPU: sample_id is the thread that switched too
        format::CpuSampleData::Switch s;
        s.pid = idPid;
        s.tid = idTid;
        s.cpu = idCpu;
        s.monotonicNs = idTime;
        s.in = !(h.misc & PERF_RECORD_MISC_SWITCH_OUT);
        s.preempted = !s.in && (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
        if (m_perCpu && !raw.program.count(s.pid))
            raw.pendingSwitches.emplace_back(s, raw.pass);
        else if (raw.switches.size() < 4 * m_options.maxSamples)
            raw.switches.push_back(s);
        break;
    }
    case PERF_RECORD_MMAP2: {
        // pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename
        const uint32_t pid = u32(p);
        Raw::Mmap m{u64(p + 8), u64(p + 16), u64(p + 24), {}};
        const uint8_t* name = p + 64;
        if (name < id)
            m.file.assign(
                reinterpret_cast<const char*>(name),
                ::strnlen(reinterpret_cast<const char*>(name), static_cast<size_t>(id - name)));
        const uint32_t prot = u32(p + 56);
        if (prot & PROT_EXEC)
            raw.processes[pid].maps.push_back(std::move(m));
        break;
    }
    case PERF_RECORD_COMM: {
        const uint32_t pid = u32(p), tid = u32(p + 4);
        const uint8_t* name = p + 8;
        if (name < id)
            raw.names[{pid, tid}].assign(
                reinterpret_cast<const char*>(name),
                ::strnlen(reinterpret_cast<const char*>(name), static_cast<size_t>(id - name)));
        if ((h.misc & PERF_RECORD_MISC_COMM_EXEC) && pid == tid) {
            Raw::Process& process = raw.processes[pid];
            process.execed = true;
            if (!process.execNs)
                process.execNs = idTime;
            process.maps.clear();
        }
        break;
    }
    case PERF_RECORD_FORK: {
        const uint32_t pid = u32(p), ppid = u32(p + 4), tid = u32(p + 8), ptid = u32(p + 12);
        if (const auto parent = raw.names.find({ppid, ptid}); parent != raw.names.end())
            raw.names.try_emplace({pid, tid}, parent->second);
        if (pid != ppid) {
            raw.processes[pid].parent = ppid;
            raw.forked = true;
        }
        break;
    }
    case PERF_RECORD_LOST:
        raw.lost += u64(p + 8);
        break;
    default:
        break;
    }
}

format::CpuSampleData CpuSampler::stop() {
    if (running()) {
        m_quit = true;
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(m_wakeFd, &one, sizeof one);
        m_reader.join();
    }
    m_rings.clear();
    if (m_perCpu)
        keepProgram();
    if (const char* log = std::getenv("WARPLINE_CPU_SAMPLING_TOGGLE_LOG"); log && m_toggleNs) {
        std::ofstream out(log);
        for (const Toggle& t : m_toggles)
            out << t.beginNs << ' ' << t.endNs << ' ' << (t.on ? "on" : "off") << '\n';
    }
    return symbolise();
}

void CpuSampler::growProgram() {
    Raw& raw = *m_raw;
    if (!raw.forked)
        return;
    raw.forked = false;
    // Closed over every parent known: a process's FORK record can be read before its parent's
    // (each CPU has its ring), so one pass over the forks in the order read would miss it.
    for (bool grew = true; grew;) {
        grew = false;
        for (const auto& [pid, process] : raw.processes)
            if (process.parent && raw.program.count(process.parent) &&
                raw.program.insert(pid).second)
                grew = true;
    }
}

void CpuSampler::keepProgram() {
    Raw& raw = *m_raw;
    // Only the program's samples and switches were kept while reading (resolvePending); what is
    // left is the root's time before its exec, when it was still warpline-record's fork.
    const auto rootExec = raw.processes.find(m_root);
    const int64_t from = rootExec == raw.processes.end() ? 0 : rootExec->second.execNs;
    const auto beforeExec = [&](uint32_t pid, int64_t ns) { return pid == m_root && ns < from; };
    std::vector<uint32_t> chainMap(raw.chains.size(), UINT32_MAX);
    std::vector<ChainKey> chains;
    size_t kept = 0;
    for (format::CpuSampleData::Sample& s : raw.samples) {
        if (beforeExec(s.pid, s.monotonicNs))
            continue;
        if (chainMap[s.chain] == UINT32_MAX) {
            chainMap[s.chain] = static_cast<uint32_t>(chains.size());
            chains.push_back(std::move(raw.chains[s.chain]));
        }
        s.chain = chainMap[s.chain];
        raw.samples[kept++] = s;
    }
    raw.samples.resize(kept);
    raw.chains = std::move(chains);
    raw.chainIds.clear();
    std::erase_if(raw.switches, [&](const format::CpuSampleData::Switch& s) {
        return beforeExec(s.pid, s.monotonicNs);
    });
    std::erase_if(raw.names, [&](const auto& n) { return !raw.program.count(n.first.first); });
    std::erase_if(raw.processes, [&](const auto& p) { return !raw.program.count(p.first); });
}

format::CpuSampleData CpuSampler::symbolise() {
    Raw& raw = *m_raw;
    format::CpuSampleData out;
    out.rateHz = m_options.rateHz;
    out.perCpu = m_perCpu;
    out.lostRecords = raw.lost;
    out.threadNames = raw.names;
    if (raw.full)
        out.problems.push_back(
            "CPU sampling stopped early: " + std::to_string(m_options.maxSamples) +
            " samples were kept in memory (the limit)");

    std::unordered_map<std::string, std::unique_ptr<ElfSymbols>> elfs;
    std::unordered_map<uint32_t, std::unique_ptr<PerfMap>> perfMaps;
    const auto elf = [&](const std::string& path) -> const ElfSymbols& {
        auto& e = elfs[path];
        if (!e)
            e = std::make_unique<ElfSymbols>(path);
        return *e;
    };
    const auto perfMap = [&](uint32_t pid) -> const PerfMap& {
        auto& m = perfMaps[pid];
        if (!m)
            m = std::make_unique<PerfMap>("/tmp/perf-" + std::to_string(pid) + ".map");
        return *m;
    };
    std::map<std::pair<std::string, std::string>, uint32_t> frameIds;
    std::vector<bool> pythonFrames; // by frame id: a Python function (a CPython trampoline)
    const auto frameId = [&](format::CpuFrame f) {
        const auto [it, added] =
            frameIds.try_emplace({f.module, f.symbol}, static_cast<uint32_t>(out.frames.size()));
        if (added)
            out.frames.push_back(std::move(f));
        return it->second;
    };
    char hex[32];
    const auto resolve = [&](uint32_t pid, uint64_t ip) {
        // The process's own mappings, then (until it execs) those of the process it forked from.
        for (uint32_t p = pid, hops = 0; p != 0 && hops < 8; ++hops) {
            const auto it = raw.processes.find(p);
            const Raw::Mmap* hit = nullptr;
            if (it != raw.processes.end())
                for (auto m = it->second.maps.rbegin(); m != it->second.maps.rend(); ++m)
                    if (ip >= m->start && ip - m->start < m->length) {
                        hit = &*m;
                        break;
                    }
            // "//anon" and "[anon:...]" are anonymous: a JIT's code, named by its perf map.
            if (hit && hit->file.size() > 1 && hit->file[0] == '/' && hit->file[1] != '/') {
                format::CpuFrame f;
                f.module = hit->file;
                f.ip = ip;
                uint64_t address = 0;
                const ElfSymbols& symbols = elf(hit->file);
                if (symbols.addressOfOffset(ip - hit->start + hit->pgoff, &address))
                    if (const SymbolRange* s = symbols.find(address)) {
                        f.symbol = format::demangle(s->name);
                        f.resolved = true;
                    }
                if (!f.resolved) {
                    std::snprintf(hex, sizeof hex, "0x%llx",
                                  static_cast<unsigned long long>(ip - hit->start + hit->pgoff));
                    f.symbol = hex;
                }
                return frameId(std::move(f));
            }
            // Anonymous executable memory: a JIT (CPython's perf trampolines) that lists it.
            if (const SymbolRange* s = perfMap(p).find(ip)) {
                format::CpuFrame f;
                f.ip = ip;
                f.resolved = true;
                const bool python = splitPythonTrampoline(s->name, &f.symbol, &f.module);
                if (!python) {
                    f.symbol = s->name;
                    f.module = "[jit]";
                }
                const uint32_t id = frameId(std::move(f));
                if (python) {
                    if (pythonFrames.size() <= id)
                        pythonFrames.resize(id + 1);
                    pythonFrames[id] = true;
                }
                return id;
            }
            if (it == raw.processes.end() || it->second.execed)
                break;
            p = it->second.parent;
        }
        format::CpuFrame f;
        f.ip = ip;
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(ip));
        f.symbol = hex;
        f.module = "[unknown]";
        return frameId(std::move(f));
    };
    out.chains.reserve(raw.chains.size());
    for (const ChainKey& key : raw.chains) {
        std::vector<uint32_t> frames;
        frames.reserve(key.ips.size());
        bool inPython = false;
        for (uint64_t ip : key.ips) {
            const uint32_t f = resolve(key.pid, ip);
            // Past a frame without frame pointers the walk reads garbage: an address in no
            // mapping ends the stack (the innermost frame is always kept).
            if (!frames.empty() && out.frames[f].module == "[unknown]")
                break;
            // Above the innermost Python function only Python functions are kept: the native
            // frames between them are the interpreter's own (3 to 6 per Python call), and would
            // make the stored stacks several times larger for nothing a user reads.
            const bool python = f < pythonFrames.size() && pythonFrames[f];
            if (inPython && !python)
                continue;
            inPython = inPython || python;
            // A run of the interpreter's own frames (its evaluation loop calling itself through
            // C functions, 3 to 6 a Python call) keeps its innermost: the stack keeps the C
            // extensions' frames between them, and stays a few times smaller.
            if (!frames.empty() && format::isPythonInterpreterModule(out.frames[f].module) &&
                out.frames[frames.back()].module == out.frames[f].module)
                continue;
            frames.push_back(f);
        }
        out.chains.push_back(std::move(frames));
    }
    out.samples = std::move(raw.samples);
    out.switches = std::move(raw.switches);
    // Read one CPU's ring after another: a thread that moved between CPUs has its records out of
    // order, and a wait would pair a switch off one CPU with an earlier switch onto another.
    const auto byTime = [](const auto& a, const auto& b) { return a.monotonicNs < b.monotonicNs; };
    std::stable_sort(out.samples.begin(), out.samples.end(), byTime);
    std::stable_sort(out.switches.begin(), out.switches.end(), byTime);
    if (m_options.removePerfMaps)
        for (const auto& [pid, process] : raw.processes)
            std::remove(("/tmp/perf-" + std::to_string(pid) + ".map").c_str());
    m_raw = std::make_unique<Raw>();
    return out;
}

} // namespace warpline::collector
