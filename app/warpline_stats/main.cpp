// warpline-stats: prints a summary report of a Warpline trace (or an Nsight Systems SQLite export)
// as a text table, CSV, JSON or Markdown. Reports come from warpline::model::ReportRegistry.
// Several traces, or a folder of them (one per rank of a distributed job), open as one session on
// one time axis (TraceSession).
//
// Exit status: 0 success, 2 any error (one line on stderr, "warpline-stats: ...").

#include "analysishelpers.h"
#include "chromeexport.h"
#include "kinetoimport.h"
#include "outputfile.h"
#include "reportregistry.h"
#include "steps.h"
#include "tablewriter.h"
#include "tracediff.h"
#include "traceerror.h"
#include "traceloader.h"
#include "traceopener.h"
#include "tracesession.h"
#include "traceupgrade.h"
#include "warpline_version.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace warpline::model;
namespace format = warpline::format;

constexpr int kExitError = 2;

struct UsageError {
    std::string message;
};

struct Arguments {
    std::vector<std::string> traces;       // diff: exactly A and B
    std::string report = "kernels";        // as given: one name, several "a,b", or "all"
    std::vector<const ReportDef*> reports; // what it names
    TableFormat format = TableFormat::Text;
    std::string output; // empty: stdout
    bool force = false;
    ReportOptions options;
    std::string phase;        // --phase: "steady", "warm-up", "start-up" or "teardown"
    bool namesGiven = false;  // --names (kernels only)
    std::string exportFormat; // "chrome": write the whole trace instead of a report
    bool diff = false;        // warpline-stats diff A B
    DiffOptions diffOptions;
};

void printHelp() {
    std::cout
        << "Usage: warpline-stats TRACE... [--report NAME] [--format FORMAT] [-o FILE] [--force]\n"
           "                      [--group-by-launch-config] [--names full|base|mangled]\n"
           "                      [--phase PHASE] [--gpu-idle]\n"
           "       warpline-stats TRACE... --export chrome [-o FILE.json] [--force]\n"
           "       warpline-stats diff A B [--report kernels|api|nvtx] [--format FORMAT]\n"
           "                      [--range-a NAME] [--range-b NAME] [--tolerance PCT]\n"
           "\n"
           "Prints a summary of a Warpline trace (.warpline), an Nsight Systems SQLite\n"
           "export or a PyTorch profiler trace (.pt.trace.json, .json.gz). Times are in\n"
           "nanoseconds.\n"
           "\n"
           "Several traces, or a folder (the traces directly in it), open as one session\n"
           "on one time axis: one trace per rank of a distributed job. The ranks and\n"
           "rank-steps reports compare the ranks: who reaches the collectives last, and\n"
           "how long the others wait for it.\n"
           "\n"
           "Options:\n"
           "  --report NAME               the report to print (default: kernels); several,\n"
           "                              as NAME,NAME or all, go to files: -o BASE\n"
           "                              writes BASE_NAME.csv (the suffix of --format)\n"
           "  --format FORMAT             table (default), csv, json or md\n"
           "  -o, --output FILE           write to FILE instead of standard output (BASE\n"
           "                              for several reports)\n"
           "  --force                     let -o replace an existing file\n"
           "  --group-by-launch-config    kernels: one row per name + grid + block\n"
           "  --names full|base|mangled   kernels: demangled names (default), base names\n"
           "                              (\"reduce_kernel\": one row per function, as nsys's\n"
           "                              :base) or mangled names\n"
           "  --phase PHASE               only the work that starts in one phase of the\n"
           "                              training steps (report steps): steady, warm-up,\n"
           "                              start-up or teardown; for the reports marked\n"
           "                              [--phase] below\n"
           "  --gpu-idle                  cpu-samples, cpu-tree: only the samples taken\n"
           "                              while the GPUs ran nothing (with --phase steady:\n"
           "                              where the CPU was while the steady state's GPU\n"
           "                              waited)\n"
           "  --export chrome             write the trace as Chrome trace JSON (Perfetto,\n"
           "                              chrome://tracing) instead of a report\n"
           "  --export warpline           save a PyTorch profiler trace as a Warpline trace,\n"
           "                              or a Warpline trace of format 1.x as format 2.0\n"
           "                              (-o FILE.warpline)\n"
           "  diff A B                    compare trace B (after) with A (before): rows\n"
           "                              added, removed, faster, slower or unchanged,\n"
           "                              with the time at stake (total B - total A)\n"
           "  --range-a/--range-b NAME    diff: only work launched inside NVTX ranges NAME\n"
           "                              in A / B (A and B may be the same file)\n"
           "  --tolerance PCT             diff: average change still \"unchanged\" (5)\n"
           "  -h, --help                  show this help\n"
           "  --version                   show the version\n"
           "\n"
           "Reports:\n";
    for (const ReportDef& report : ReportRegistry::all()) {
        std::string name(report.name);
        name.resize(std::max<size_t>(name.size() + 2, 16), ' ');
        std::cout << "  " << name << report.description << (report.windowed ? " [--phase]" : "")
                  << "\n";
    }
    std::cout << "\nExit status: 0 on success, 2 on any error.\n";
}

// "kernels, gpu-metrics, ...": every report, or those that take --phase.
std::string reportNames(bool windowedOnly = false) {
    std::string names;
    for (const ReportDef& report : ReportRegistry::all())
        if (report.windowed || !windowedOnly)
            names += (names.empty() ? "" : ", ") + std::string(report.name);
    return names;
}

// Returns nullopt when --help or --version was handled.
std::optional<Arguments> parse(int argc, char** argv) {
    Arguments args;
    int first = 1;
    if (argc > 1 && std::string(argv[1]) == "diff") {
        args.diff = true;
        first = 2;
    }
    for (int i = first; i < argc; ++i) {
        std::string arg = argv[i];
        std::string value;
        bool hasInlineValue = false;
        if (arg.rfind("--", 0) == 0) {
            if (const size_t eq = arg.find('='); eq != std::string::npos) {
                value = arg.substr(eq + 1);
                arg = arg.substr(0, eq);
                hasInlineValue = true;
            }
        }
        const auto takeValue = [&]() -> std::string {
            if (hasInlineValue)
                return value;
            if (i + 1 >= argc)
                throw UsageError{arg + " needs a value"};
            return argv[++i];
        };
        if (arg == "-h" || arg == "--help") {
            printHelp();
            return std::nullopt;
        } else if (arg == "--version") {
            std::cout << "warpline-stats " << WARPLINE_VERSION << "\n";
            return std::nullopt;
        } else if (arg == "--report" || arg == "-r") {
            args.report = takeValue();
        } else if (arg == "--format" || arg == "-f") {
            const std::string name = takeValue();
            const auto format = parseTableFormat(name);
            if (!format)
                throw UsageError{"unknown format \"" + name + "\" (use table, csv, json or md)"};
            args.format = *format;
        } else if (arg == "-o" || arg == "--output") {
            args.output = takeValue();
            if (args.output.empty())
                throw UsageError{"-o needs a file name"};
        } else if (arg == "--force") {
            args.force = true;
        } else if (arg == "--group-by-launch-config") {
            args.options.groupByLaunchConfig = true;
        } else if (arg == "--names") {
            const std::string names = takeValue();
            if (names == "full")
                args.options.kernelNames = KernelNaming::Full;
            else if (names == "base")
                args.options.kernelNames = KernelNaming::Base;
            else if (names == "mangled")
                args.options.kernelNames = KernelNaming::Mangled;
            else
                throw UsageError{"unknown --names \"" + names + "\" (use full, base or mangled)"};
            args.namesGiven = true;
        } else if (arg == "--phase") {
            args.phase = takeValue();
            if (args.phase != "steady" && args.phase != "warm-up" && args.phase != "start-up" &&
                args.phase != "teardown")
                throw UsageError{"unknown phase \"" + args.phase +
                                 "\" (phases: steady, warm-up, start-up, teardown)"};
        } else if (arg == "--gpu-idle") {
            args.options.gpuIdleOnly = true;
        } else if (arg == "--export") {
            args.exportFormat = takeValue();
            if (args.exportFormat != "chrome" && args.exportFormat != "warpline")
                throw UsageError{"unknown export format \"" + args.exportFormat +
                                 "\" (use chrome or warpline)"};
        } else if (arg == "--range-a") {
            args.diffOptions.a.nvtxRange = takeValue();
        } else if (arg == "--range-b") {
            args.diffOptions.b.nvtxRange = takeValue();
        } else if (arg == "--tolerance") {
            const std::string text = takeValue();
            char* end = nullptr;
            const double percent = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !(percent >= 0))
                throw UsageError{"--tolerance needs a percentage, not \"" + text + "\""};
            args.diffOptions.tolerance = percent / 100.0;
        } else if (arg.size() > 1 && arg[0] == '-') {
            throw UsageError{"unknown option " + arg + " (see --help)"};
        } else if (args.diff && args.traces.size() == 2) {
            throw UsageError{"diff compares two traces, not more: " + arg};
        } else {
            args.traces.push_back(arg);
        }
    }
    if (args.diff) {
        if (args.traces.size() != 2)
            throw UsageError{"diff needs two traces (usage: warpline-stats diff A B)"};
        if (!parseDiffSubject(args.report))
            throw UsageError{"diff compares kernels, api or nvtx, not \"" + args.report + "\""};
        return args;
    }
    if (args.traces.empty())
        throw UsageError{"no trace file given (usage: warpline-stats TRACE... --report NAME)"};
    if (args.exportFormat == "warpline" && args.traces.size() != 1)
        throw UsageError{"--export warpline converts one trace at a time"};
    if (args.report == "all") {
        for (const ReportDef& report : ReportRegistry::all())
            args.reports.push_back(&report);
    } else {
        for (size_t from = 0; from <= args.report.size();) {
            const size_t comma = std::min(args.report.find(',', from), args.report.size());
            const std::string name = args.report.substr(from, comma - from);
            const ReportDef* report = ReportRegistry::find(name);
            if (!report)
                throw UsageError{"unknown report \"" + name + "\" (reports: " + reportNames() +
                                 ")"};
            args.reports.push_back(report);
            from = comma + 1;
        }
    }
    const auto only = [&](auto accepts) {
        return args.exportFormat.empty() &&
               std::all_of(args.reports.begin(), args.reports.end(),
                           [&](const ReportDef* r) { return accepts(*r); });
    };
    if (args.namesGiven && !only([](const ReportDef& r) { return r.name == "kernels"; }))
        throw UsageError{"--names applies to the kernels report"};
    if (args.options.gpuIdleOnly &&
        !only([](const ReportDef& r) { return r.name == "cpu-samples" || r.name == "cpu-tree"; }))
        throw UsageError{"--gpu-idle applies to the cpu-samples and cpu-tree reports"};
    if (!args.phase.empty() && !only([](const ReportDef& r) { return r.windowed; }))
        throw UsageError{"--phase applies to the reports " + reportNames(true)};
    if (args.reports.size() > 1 && args.exportFormat.empty() && args.output.empty())
        throw UsageError{"several reports are written to files: give -o BASE (one file per report, "
                         "BASE_NAME.csv and so on)"};
    return args;
}

// Where a report goes: -o as given for one report; BASE_NAME.SUFFIX for each of several (as nsys
// stats names them).
std::string outputPath(const Arguments& args, const ReportDef& report) {
    if (args.reports.size() <= 1 || !args.exportFormat.empty())
        return args.output;
    return args.output + "_" + std::string(report.name) + "." +
           std::string(tableFormatSuffix(args.format));
}

// Checks each file -o names before the (possibly long) load, so a mistake is reported at once.
void checkOutput(const Arguments& args) {
    namespace fs = std::filesystem;
    std::vector<std::string> paths;
    if (args.exportFormat.empty())
        for (const ReportDef* report : args.reports)
            paths.push_back(outputPath(args, *report));
    else
        paths.push_back(args.output);
    for (const std::string& path : paths) {
        if (path.empty())
            return;
        std::error_code ec;
        if (fs::is_directory(path, ec))
            throw UsageError{"cannot write " + path + ": it is a directory"};
        if (!args.force) {
            if (const std::string exists = format::OutputFile::existsMessage(path, "use --force");
                !exists.empty())
                throw UsageError{exists};
        }
        fs::path dir = fs::path(path).parent_path();
        if (dir.empty())
            dir = ".";
        if (!fs::is_directory(dir, ec))
            throw UsageError{"cannot write " + path + ": no directory " + dir.string()};
        if (::access(dir.c_str(), W_OK) != 0)
            throw UsageError{"cannot write " + path + ": " + std::strerror(errno)};
    }
}

// One file opens as it is; several files or a folder open as one session.
TraceStore openTraces(const std::vector<std::string>& paths) {
    std::error_code ec;
    if (paths.size() == 1 && !std::filesystem::is_directory(paths.front(), ec))
        return TraceOpener::open(paths.front());
    return TraceSession::open(TraceSession::expandPaths(paths));
}

void writeOutput(const Arguments& args, const std::string& path, const std::string& text) {
    if (path.empty()) {
        std::cout << text;
        std::cout.flush();
        if (!std::cout)
            throw UsageError{"cannot write to standard output"};
        return;
    }
    // Whole or not at all, never through a link; a file that appeared since checkOutput is
    // replaced only with --force.
    format::OutputFile output(path, args.force);
    std::FILE* file = std::fopen(output.tempPath().c_str(), "wb");
    if (!file)
        throw UsageError{"cannot write " + path + ": " + std::strerror(errno)};
    const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
    const bool closed = std::fclose(file) == 0;
    if (!written || !closed)
        throw UsageError{"cannot write " + path + ": " + std::strerror(errno)};
    output.commit();
}

// Prints a store's warnings on stderr, each line once per command: `diff A A` opens the same file
// twice, and its warnings would otherwise print twice, word for word.
void printWarnings(const std::vector<std::string>& warnings, const std::string& prefix,
                   std::set<std::string>& printed) {
    for (const std::string& warning : warnings) {
        const std::string line = "warpline-stats: warning: " + prefix + warning;
        if (printed.insert(line).second)
            std::cerr << line << "\n";
    }
}

// --phase: the window of that phase of the training steps, said on stderr ("steady state: 17 of
// 20 steps (3 to 19), 63.2 ms"); an error when the trace has no steps.
TimeWindow phaseWindow(TraceAnalyses& analyses, const std::string& phase) {
    const StepAnalysis& steps = *analyses.steps(StepDetail::Phases);
    if (steps.empty()) {
        // "No training steps: <why>." -> "<why>"
        std::string why = steps.noStepsReason;
        if (const size_t colon = why.find(": "); colon != std::string::npos)
            why = why.substr(colon + 2);
        if (!why.empty() && why.back() == '.')
            why.pop_back();
        throw UsageError{"--phase: no training steps found in this trace" +
                         (why.empty() ? std::string() : ": " + why) +
                         " (they come from a repeated NVTX range such as \"step 3\", or a "
                         "launch sequence that repeats; see --report steps)"};
    }
    const std::string name = phase == "steady" ? "steady state" : phase;
    size_t first = 0, last = 0; // the steps in it, [first, last)
    int64_t span = 0;
    if (phase == "steady") {
        first = steps.firstSteady;
        last = steps.steps.size();
    } else if (phase == "warm-up") {
        last = steps.firstSteady;
    }
    if (phase == "start-up")
        span = steps.startup();
    else if (phase == "teardown")
        span = steps.teardown();
    else if (last > first)
        span = steps.steps[last - 1].end - steps.steps[first].start;
    std::ostringstream note;
    note << "warpline-stats: note: " << name << ": ";
    if (last > first) {
        note << last - first << " of " << steps.steps.size() << " steps";
        bool numbered = true; // the steps' own numbers, when they count up
        for (size_t i = first + 1; i < last; ++i)
            numbered = numbered && steps.steps[i].number > steps.steps[i - 1].number;
        if (numbered)
            note << " (" << steps.steps[first].number << " to " << steps.steps[last - 1].number
                 << ")";
        note << ", ";
    } else if (phase == "warm-up") {
        note << "no step (the first step is steady already), ";
    }
    std::cerr << note.str() << formatDurationText(static_cast<double>(span)) << "\n";
    return steps.phaseWindow(name); // [t0, t1): empty for a warm-up of no step
}

} // namespace

int main(int argc, char** argv) {
    try {
        const std::optional<Arguments> args = parse(argc, argv);
        if (!args)
            return 0;
        checkOutput(*args);
        if (args->diff) {
            const TraceStore a = TraceOpener::open(args->traces[0]);
            const TraceStore b = TraceOpener::open(args->traces[1]);
            std::set<std::string> printed;
            for (const TraceStore* s : {&a, &b})
                printWarnings(s->warnings(), s->path() + ": ", printed);
            const auto rows = diffTraces(a, b, *parseDiffSubject(args->report), args->diffOptions);
            std::ostringstream text;
            writeTable(text, traceDiffTable(rows), args->format);
            writeOutput(*args, args->output, text.str());
            return 0;
        }
        if (args->exportFormat == "warpline") {
            const std::string& trace = args->traces.front();
            if (args->output.empty())
                throw UsageError{"--export warpline needs -o FILE.warpline"};
            if (TraceUpgrade::needsUpgrade(trace)) {
                TraceUpgrade::upgrade(trace, args->output, args->force);
                return 0;
            }
            if (!KinetoImport::isKinetoTrace(trace))
                throw UsageError{trace + " is a Warpline or Nsight Systems trace already"};
            KinetoImport::convert(trace, args->output, {.progress = {}, .replace = args->force});
            return 0;
        }
        const TraceStore store = openTraces(args->traces);
        std::set<std::string> printed;
        printWarnings(store.warnings(), "", printed);
        if (args->exportFormat == "chrome") {
            ChromeExportOptions options;
            options.replace = args->force;
            if (args->output.empty())
                writeChromeTrace(std::cout, store, options);
            else
                writeChromeTraceFile(args->output, store, options);
            return 0;
        }
        TraceAnalyses analyses(store); // shared by the reports: each analysis runs once
        ReportOptions options = args->options;
        if (!args->phase.empty())
            options.window = phaseWindow(analyses, args->phase);
        for (const ReportDef* report : args->reports) {
            const std::string prefix =
                args->reports.size() > 1 ? std::string(report->name) + ": " : std::string();
            if (report->missing)
                if (const std::string why = report->missing(analyses); !why.empty())
                    std::cerr << "warpline-stats: note: " << prefix << why << "\n";
            std::ostringstream text;
            writeTable(text, report->build(analyses, options).table, args->format);
            writeOutput(*args, outputPath(*args, *report), text.str());
        }
        return 0;
    } catch (const UsageError& e) {
        std::cerr << "warpline-stats: " << e.message << "\n";
    } catch (const TraceError& e) {
        std::cerr << "warpline-stats: " << e.what() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "warpline-stats: " << e.what() << "\n";
    }
    return kExitError;
}
