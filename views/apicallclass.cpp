#include "apicallclass.h"

#include <array>

namespace warpline::views {

bool ApiCallClass::isSynchronizing(std::string_view name) {
    static constexpr std::array<std::string_view, 7> kSynchronize = {
        "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
        "cudaThreadSynchronize", "cuCtxSynchronize",      "cuStreamSynchronize",
        "cuEventSynchronize"};
    for (const std::string_view s : kSynchronize) {
        if (name == s)
            return true;
    }
    // Blocking copies (cudaMemcpy, cudaMemcpy2D, cudaMemcpyToSymbol, cuMemcpyDtoH, ...), not the
    // *Async variants, which return before the copy runs.
    const bool memcpy = name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy");
    return memcpy && name.find("Async") == std::string_view::npos;
}

} // namespace warpline::views
