#pragma once

// CUPTI's profiler and PM-sampling calls take a parameter struct whose structSize must be set
// and the rest zeroed: PARAMS(CUpti_PmSampling_Enable_Params) gives one.

#include <cstddef>
#include <cstring>

namespace warpline::collector {

template <typename T> T cuptiParams(size_t size) {
    T p;
    std::memset(&p, 0, sizeof p);
    p.structSize = size;
    return p;
}

} // namespace warpline::collector

#define PARAMS(T) ::warpline::collector::cuptiParams<T>(T##_STRUCT_SIZE)
