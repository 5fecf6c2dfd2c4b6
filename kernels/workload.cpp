#include "workload.h"

#include "builtin.h"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <system_error>

namespace warpline::kernels {

namespace {

bool parseInteger(const std::string& text, long long& out) {
    const char* first = text.data();
    const char* last = first + text.size();
    const auto [end, ec] = std::from_chars(first, last, out);
    return !text.empty() && ec == std::errc() && end == last;
}

bool parseReal(const std::string& text, double& out) {
    const char* first = text.data();
    const char* last = first + text.size();
    const auto [end, ec] = std::from_chars(first, last, out);
    return !text.empty() && ec == std::errc() && end == last && std::isfinite(out);
}

// An option's type is the type of its default value: "500" is an integer option, "0.05" a real one,
// anything else text. WorkloadOption stays three plain strings.
enum class OptionKind { Integer, Real, Text };

OptionKind kindOf(const WorkloadOption& option) {
    long long i = 0;
    double d = 0.0;
    if (parseInteger(option.defaultValue, i)) {
        return OptionKind::Integer;
    }
    if (parseReal(option.defaultValue, d)) {
        return OptionKind::Real;
    }
    return OptionKind::Text;
}

std::string optionList(const Workload& workload) {
    if (workload.options.empty()) {
        return "none";
    }
    std::string list;
    for (const auto& option : workload.options) {
        if (!list.empty()) {
            list += ", ";
        }
        list += "--" + option.name + " (default " + option.defaultValue + ")";
    }
    return list;
}

bool startsWithDashes(const std::string& text) {
    return text.rfind("--", 0) == 0;
}

[[noreturn]] void failParse(const Workload& workload, const std::string& what) {
    throw std::invalid_argument(what + " for workload " + workload.name +
                                "; options: " + optionList(workload));
}

} // namespace

long long WorkloadArgs::integer(const std::string& name) const {
    long long value = 0;
    const std::string& raw = text(name);
    if (!parseInteger(raw, value)) {
        throw std::invalid_argument("option --" + name + ": '" + raw + "' is not an integer");
    }
    return value;
}

double WorkloadArgs::real(const std::string& name) const {
    double value = 0.0;
    const std::string& raw = text(name);
    if (!parseReal(raw, value)) {
        throw std::invalid_argument("option --" + name + ": '" + raw + "' is not a number");
    }
    return value;
}

const std::string& WorkloadArgs::text(const std::string& name) const {
    const auto it = m_values.find(name);
    if (it == m_values.end()) {
        throw std::invalid_argument("no option --" + name);
    }
    return it->second;
}

const std::vector<Workload>& allWorkloads() {
    static const std::vector<Workload> workloads = {
        runaheadWorkload(), syncStallWorkload(), geluWorkload(),   softmaxWorkload(),
        matmulWorkload(),   streamsWorkload(),   graphsWorkload(), mlpWorkload(),
        allReduceWorkload(),
    };
    return workloads;
}

const Workload* findWorkload(const std::string& name) {
    for (const auto& workload : allWorkloads()) {
        if (workload.name == name) {
            return &workload;
        }
    }
    return nullptr;
}

WorkloadArgs parseWorkloadArgs(const Workload& workload, const std::vector<std::string>& args) {
    std::map<std::string, std::string> values;
    for (const auto& option : workload.options) {
        values[option.name] = option.defaultValue;
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (!startsWithDashes(arg) || arg.size() == 2) {
            failParse(workload, "unexpected argument '" + arg + "'");
        }
        std::string name;
        std::string value;
        const auto eq = arg.find('=');
        if (eq != std::string::npos) {
            name = arg.substr(2, eq - 2);
            value = arg.substr(eq + 1);
        } else {
            name = arg.substr(2);
        }

        const WorkloadOption* option = nullptr;
        for (const auto& candidate : workload.options) {
            if (candidate.name == name) {
                option = &candidate;
            }
        }
        if (!option) {
            failParse(workload, "unknown option --" + name);
        }
        if (eq == std::string::npos) {
            if (i + 1 >= args.size() || startsWithDashes(args[i + 1])) {
                failParse(workload, "missing value after --" + name);
            }
            value = args[++i];
        }
        if (value.empty()) {
            failParse(workload, "missing value after --" + name);
        }

        long long integerValue = 0;
        double realValue = 0.0;
        switch (kindOf(*option)) {
        case OptionKind::Integer:
            if (!parseInteger(value, integerValue)) {
                failParse(workload, "option --" + name + " needs an integer, got '" + value + "'");
            }
            break;
        case OptionKind::Real:
            if (!parseReal(value, realValue)) {
                failParse(workload, "option --" + name + " needs a number, got '" + value + "'");
            }
            break;
        case OptionKind::Text:
            break;
        }
        values[name] = value;
    }
    return WorkloadArgs(std::move(values));
}

} // namespace warpline::kernels
