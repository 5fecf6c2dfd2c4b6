#pragma once

// Internal to kernels/: fixed-seed inputs and comparisons of GPU results against CPU references.
// A failed comparison throws ResultMismatch, whose message names the workload, the phase, the
// quantity and the error size, e.g.
//   "gelu, phase fused: output differs from the CPU reference: max abs error 0.51 / max abs
//    reference 3.0 = 0.17 (limit 0.0001); worst at index 1234: got 0.1, expected 0.61"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace warpline::kernels {

class ResultMismatch : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// splitmix64: tiny, fast and the same on every platform, so inputs are reproducible anywhere
// (std:: distributions are not specified bit for bit).
class Rng {
public:
    explicit Rng(std::uint64_t seed) : m_state(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [lo, hi).
    float uniform(float lo, float hi) {
        const double unit = static_cast<double>(next() >> 11) * 0x1.0p-53;
        return static_cast<float>(lo + (hi - lo) * unit);
    }
    std::uint32_t below(std::uint32_t bound) { return static_cast<std::uint32_t>(next() % bound); }

private:
    std::uint64_t m_state;
};

inline std::vector<float> uniformVector(std::size_t n, std::uint64_t seed, float lo, float hi) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (auto& x : v) {
        x = rng.uniform(lo, hi);
    }
    return v;
}

namespace detail {

inline std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", v);
    return text;
}

} // namespace detail

// Checks max |got - ref| / max(max |ref|, minScale) <= tolerance over n values; NaN or Inf in got
// fails. got and ref are indexable (pointers or vectors) of float or double. minScale keeps a tiny
// reference (a handful of values near zero) from turning float rounding into a failure; pass the
// magnitude the values have in general, e.g. the input's scale for an element-wise function.
template <typename Got, typename Ref>
void expectClose(const char* workload, const std::string& phase, const std::string& what,
                 const Got& got, const Ref& ref, std::size_t n, double tolerance,
                 double minScale = 0.0) {
    double maxErr = 0.0;
    double maxRef = 0.0;
    std::size_t worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double g = static_cast<double>(got[i]);
        const double r = static_cast<double>(ref[i]);
        double err = std::fabs(g - r);
        if (!std::isfinite(g)) {
            err = std::numeric_limits<double>::infinity();
        }
        if (err > maxErr) {
            maxErr = err;
            worst = i;
        }
        maxRef = std::fmax(maxRef, std::fabs(r));
    }
    const double scale = std::fmax(maxRef, minScale) > 0.0 ? std::fmax(maxRef, minScale) : 1.0;
    const double relative = maxErr / scale;
    if (!(relative <= tolerance)) {
        throw ResultMismatch(
            std::string(workload) + ", phase " + phase + ": " + what +
            " differs from the CPU reference: max abs error " + detail::number(maxErr) +
            " / max abs reference " + detail::number(maxRef) + " = " + detail::number(relative) +
            " (limit " + detail::number(tolerance) + "); worst at index " + std::to_string(worst) +
            ": got " + detail::number(static_cast<double>(got[worst])) + ", expected " +
            detail::number(static_cast<double>(ref[worst])));
    }
}

// Checks that two runs that must produce identical bits did (deterministic kernels, same inputs).
template <typename T>
void expectIdentical(const char* workload, const std::string& phase, const std::string& what,
                     const std::vector<T>& got, const std::vector<T>& expected) {
    if (got.size() != expected.size()) {
        throw ResultMismatch(std::string(workload) + ", phase " + phase + ": " + what + " has " +
                             std::to_string(got.size()) + " values, expected " +
                             std::to_string(expected.size()));
    }
    std::size_t differing = 0;
    std::size_t first = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (!(got[i] == expected[i])) {
            if (differing++ == 0) {
                first = i;
            }
        }
    }
    if (differing != 0) {
        throw ResultMismatch(std::string(workload) + ", phase " + phase + ": " + what + ": " +
                             std::to_string(differing) + " of " + std::to_string(got.size()) +
                             " values differ; first at index " + std::to_string(first) + ": got " +
                             detail::number(static_cast<double>(got[first])) + ", expected " +
                             detail::number(static_cast<double>(expected[first])));
    }
}

} // namespace warpline::kernels
