#include "outputname.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace warpline::format {

std::string expandOutputName(const std::string& pattern, long pid, const EnvLookup& env) {
    std::string out;
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%') {
            out += pattern[i];
            continue;
        }
        if (i + 1 >= pattern.size())
            throw OutputNameError("output name '" + pattern + "' ends with a lone %; use %% for %");
        const char c = pattern[++i];
        if (c == '%') {
            out += '%';
        } else if (c == 'p') {
            out += std::to_string(pid);
        } else if (c == 'q' && i + 1 < pattern.size() && pattern[i + 1] == '{') {
            const size_t close = pattern.find('}', i + 2);
            if (close == std::string::npos)
                throw OutputNameError("output name '" + pattern + "': %q{ has no closing }");
            const std::string var = pattern.substr(i + 2, close - i - 2);
            if (var.empty())
                throw OutputNameError("output name '" + pattern + "': %q{} names no variable");
            if (const char* value = env(var.c_str()))
                out += value;
            i = close;
        } else {
            throw OutputNameError("output name '" + pattern + "': unknown sequence %" +
                                  std::string(1, c) + " (use %p, %q{VAR} or %%)");
        }
    }
    return out;
}

bool isPerProcessPattern(const std::string& pattern) {
    for (size_t i = 0; i + 1 < pattern.size(); ++i) {
        if (pattern[i] != '%')
            continue;
        if (pattern[i + 1] == 'p' || pattern[i + 1] == 'q')
            return true;
        ++i; // skip the character after %, e.g. the second % of %%
    }
    return false;
}

std::string numberedName(const std::string& path, int n) {
    const size_t slash = path.rfind('/');
    const size_t dot = path.rfind('.');
    const bool hasExtension =
        dot != std::string::npos && dot > 0 && (slash == std::string::npos || dot > slash + 1);
    const std::string suffix = "-" + std::to_string(n);
    if (!hasExtension)
        return path + suffix;
    return path.substr(0, dot) + suffix + path.substr(dot);
}

std::string fileStem(const std::string& name) {
    const size_t slash = name.rfind('/');
    std::string stem = slash == std::string::npos ? name : name.substr(slash + 1);
    stem.erase(0, stem.find_first_not_of('.'));
    for (char& c : stem) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '_';
    }
    return stem.empty() ? "trace" : stem;
}

bool isPlainWorkloadName(const std::string& name) {
    if (name.empty() || name[0] == '.' || name[0] == '-' || name.find("..") != std::string::npos)
        return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
    });
}

} // namespace warpline::format
