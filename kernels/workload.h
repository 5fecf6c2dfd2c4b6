#pragma once

// A bundled workload: a small CUDA program that teaches one GPU behaviour (run-ahead, sync stalls,
// fusion, ...). Workloads run inside warpline-record's process, so the collector sees them; they
// never include CUPTI or Qt. Each checks its numeric result against a CPU reference and reports a
// mismatch as a failure with a message, never silently.

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace warpline::kernels {

struct WorkloadOption {
    std::string name;         // without dashes, e.g. "iterations"
    std::string defaultValue; // used when the user gives none
    std::string help;         // one line
};

// Options after parsing: every declared option is present (defaults filled in).
class WorkloadArgs {
public:
    explicit WorkloadArgs(std::map<std::string, std::string> values)
        : m_values(std::move(values)) {}
    // Throws std::invalid_argument with a user-facing message when the value is not an integer.
    long long integer(const std::string& name) const;
    double real(const std::string& name) const;
    const std::string& text(const std::string& name) const;
    const std::map<std::string, std::string>& values() const { return m_values; }

private:
    std::map<std::string, std::string> m_values;
};

struct WorkloadResult {
    bool ok = true;
    std::string error; // set when !ok: what went wrong, in words a user can act on
};

// Progress lines for stderr ("phase unfused: 200/1000 launches"); cheap to call.
using ProgressFn = std::function<void(const std::string&)>;

struct Workload {
    std::string name;        // e.g. "sync-stall"
    std::string description; // one line, shown by `warpline-record --list`
    std::vector<WorkloadOption> options;
    std::function<WorkloadResult(const WorkloadArgs&, const ProgressFn&)> run;
    // A distributed workload: warpline-record starts one recording process per GPU (its option
    // "gpus" says how many; 0 = every visible GPU), each with RANK, LOCAL_RANK, WORLD_SIZE and
    // WARPLINE_NCCL_ID_FILE set, and run() is one rank.
    bool onePerGpu = false;
};

// Every bundled workload, in the order `--list` shows them.
const std::vector<Workload>& allWorkloads();
const Workload* findWorkload(const std::string& name);

// Parses "--name value" / "--name=value" pairs against the workload's options, filling defaults.
// Throws std::invalid_argument("unknown option --foo for workload gelu; options: ...") on error.
WorkloadArgs parseWorkloadArgs(const Workload& workload, const std::vector<std::string>& args);

} // namespace warpline::kernels
