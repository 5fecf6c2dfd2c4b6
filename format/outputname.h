#pragma once

// Output names for traces of programs that may start several CUDA processes, as nsys names them:
//   %p        the process id
//   %q{VAR}   the value of environment variable VAR (empty when unset), e.g. %q{RANK}
//   %%        a literal %
// Any other % sequence is an error (a typo should not silently name a file).

#include <functional>
#include <stdexcept>
#include <string>

namespace warpline::format {

class OutputNameError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

using EnvLookup = std::function<const char*(const char*)>;

// Throws OutputNameError with a message naming the bad sequence.
std::string expandOutputName(
    const std::string& pattern, long pid, const EnvLookup& env = [](const char* name) {
        return static_cast<const char*>(std::getenv(name));
    });

// True when the pattern has a per-process part (%p or %q{...}).
bool isPerProcessPattern(const std::string& pattern);

// "dir/name.warpline" -> "dir/name-N.warpline" (N >= 2); the suffix goes before the extension.
std::string numberedName(const std::string& path, int n);

// A name a file name may be made from, out of a workload's or program's name: its last path
// component ("./bin/train.py" -> "train.py"), without leading dots, control characters replaced
// by '_'; "trace" when nothing is left ("..", "/", ""). What is made from it stays in its folder:
// it has no '/' and never is, nor starts with, "." or "..".
std::string fileStem(const std::string& name);

// True when `name` could be a bundled workload's name: letters, digits, '-', '_' and '.', not
// starting with '.' or '-', no "..". A name with '/' never is; it is refused before it names a
// file (warpline-record --host checks it before asking the host, whose workloads it does not know).
bool isPlainWorkloadName(const std::string& name);

} // namespace warpline::format
