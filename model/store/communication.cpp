#include "communication.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>

namespace warpline::model {

namespace {

bool equalNoCase(char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) ==
           std::tolower(static_cast<unsigned char>(b));
}

bool containsNoCase(std::string_view text, std::string_view part) {
    return std::search(text.begin(), text.end(), part.begin(), part.end(), equalNoCase) !=
           text.end();
}

bool isLetter(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
}
bool isUpper(char c) {
    return std::isupper(static_cast<unsigned char>(c)) != 0;
}
bool isLower(char c) {
    return std::islower(static_cast<unsigned char>(c)) != 0;
}

// Whether `words` start a word at `at` in `name`, separated by '_' ("all_reduce") or as CamelCase
// ("AllReduce", "allReduce"), or run together as a word of its own ("allreduce",
// "MPI_Allreduce", "oneShotAllreduce"). Run into a following word ("allreduceCompute", a compute
// kernel named after its step) they do not count.
bool wordsAt(std::string_view name, size_t at, std::initializer_list<std::string_view> words) {
    const auto matches = [&](size_t& pos, std::string_view word, bool capital) {
        if (pos + word.size() > name.size() || (capital && !isUpper(name[pos])))
            return false;
        if (!std::equal(word.begin(), word.end(), name.begin() + pos, equalNoCase))
            return false;
        pos += word.size();
        return true;
    };
    const bool startsWord =
        at == 0 || !isLetter(name[at - 1]) || (isLower(name[at - 1]) && isUpper(name[at]));
    if (!startsWord) // "small_reduce" names no all-reduce
        return false;
    for (const char separator : {'_', '\0'}) { // snake_case, then CamelCase
        size_t pos = at;
        bool all = true;
        for (auto w = words.begin(); all && w != words.end(); ++w) {
            if (w != words.begin() && separator) {
                all = pos < name.size() && name[pos] == separator;
                ++pos;
            }
            all = all && matches(pos, *w, w != words.begin() && !separator);
        }
        if (all)
            return true;
    }
    size_t pos = at;
    for (std::string_view w : words) {
        if (!matches(pos, w, false))
            return false;
    }
    return pos == name.size() || !isLetter(name[pos]);
}

} // namespace

std::string_view communicationLibrary(std::string_view name) {
    static constexpr std::string_view kLibraries[] = {"nccl", "rccl", "nvshmem"};
    for (std::string_view library : kLibraries) {
        if (containsNoCase(name, library))
            return library;
    }
    return {};
}

bool isCommunicationKernel(std::string_view name) {
    // Library names first (cheap and unambiguous), then collective names used by kernels of
    // other libraries (PyTorch's symmetric memory, vLLM's and TensorRT-LLM's custom all-reduce).
    if (!communicationLibrary(name).empty())
        return true;
    for (size_t at = 0; at < name.size(); ++at) {
        if (!equalNoCase(name[at], 'a') && !equalNoCase(name[at], 'r'))
            continue;
        if (wordsAt(name, at, {"all", "reduce"}) || wordsAt(name, at, {"all", "gather"}) ||
            wordsAt(name, at, {"reduce", "scatter"}) || wordsAt(name, at, {"all", "to", "all"}))
            return true;
    }
    return false;
}

} // namespace warpline::model
