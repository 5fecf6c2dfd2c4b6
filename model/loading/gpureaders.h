#pragma once

// The readers of the GPU's own records: kernels (a Warpline trace's WARPLINE_KERNELS and
// WARPLINE_KERNEL_CONFIGS, or the CUPTI_ACTIVITY_KIND_KERNEL table of an nsys export), memory
// copies, memsets, synchronizations and GPU metric samples. The loader's (traceloader.cpp) only.
//
// Each GPU operation goes to its stream's stage (LoadStage::stream), in file order, named as nsys
// names it ("[CUDA memcpy Host-to-Device]", a kernel's demangled name); its details go to the
// store's tables the signature names (launch configurations, deduplicated; memcpy and memset
// sizes), which GpuRow::detail indexes. Rows without a sensible span are counted
// (LoadStage::keepSpan), never kept.
//
// Cost: the large tables of a trace. Kernels, copies, memsets and syncs are read from their pages
// (ReadSource::rows), a few integer columns a row; a Warpline trace's kernel costs no name lookup
// (its config holds the name, and consecutive kernels usually share one).
// Thread affinity: the loading thread.

#include "loaderstage.h"
#include "readsource.h"
#include "tracestrings.h"

#include <string>
#include <vector>

namespace warpline::model {

// WARPLINE_KERNEL_CONFIGS once, then 6 integer columns per WARPLINE_KERNELS row instead of the
// CUPTI_ACTIVITY_KIND_KERNEL view's join. A kernel whose configId the configs lack is counted
// (LoadStage::unknownConfigs) and left out; every kernel belongs to the first of `processes`.
void readKernelsFast(const ReadSource& in, TraceStrings& strings,
                     const std::vector<ProcessInfo>& processes, std::vector<KernelConfig>& configs,
                     LoadStage& stage);
// CUPTI_ACTIVITY_KIND_KERNEL of a file without WARPLINE_KERNELS (an nsys export): a config per
// row, deduplicated.
void readKernelsGeneric(const ReadSource& in, TraceStrings& strings,
                        std::vector<KernelConfig>& configs, LoadStage& stage);
void readMemcpy(const ReadSource& in, TraceStrings& strings, std::vector<MemOpInfo>& memOps,
                LoadStage& stage);
void readMemset(const ReadSource& in, TraceStrings& strings, std::vector<MemOpInfo>& memOps,
                LoadStage& stage);
// CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, sorted by start (ties in file order).
void readSyncs(const ReadSource& in, std::vector<SyncEvent>& syncs, LoadStage& stage);
// GPU_METRICS, named by TARGET_INFO_GPU_METRICS: one set of series per device (typeId's low 8
// bits, as nsys), a sample per distinct time, NaN where a metric has none. Rows with an unknown
// (typeId, metricId), no time or a time out of range are skipped with one warning; at most 512
// metrics.
void readGpuMetrics(const ReadSource& in, std::vector<GpuMetricSamples>& sets,
                    std::vector<std::string>& warnings);

} // namespace warpline::model
