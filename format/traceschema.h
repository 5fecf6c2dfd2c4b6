#pragma once

// The Warpline trace file schema (docs/trace-format.md documents every table and column).
// Tables follow the Nsight Systems SQLite export's names and column meanings; Warpline's own facts
// live in WARPLINE_* tables. Kernels are stored compactly (WARPLINE_KERNELS rows pointing at
// deduplicated WARPLINE_KERNEL_CONFIGS) and exposed under the nsys name through a view.

namespace warpline::format {

// PRAGMA user_version = major * 100 + minor. A reader refuses a newer major version.
// 2.0: driver API calls moved from CUPTI_ACTIVITY_KIND_DRIVER into CUPTI_ACTIVITY_KIND_RUNTIME
// (eventClass 1), TARGET_INFO_GPU took nsys's columns (clockRate in Hz, UUID without "GPU-").
inline constexpr int kFormatMajor = 2;
inline constexpr int kFormatMinor = 0;
inline constexpr int kFormatUserVersion = kFormatMajor * 100 + kFormatMinor;

// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass (ENUM_NSYS_EVENT_CLASS).
inline constexpr int kEventClassCudaRuntime = 0;
inline constexpr int kEventClassCudaDriver = 1;

// CREATE statements for every table, view and enum row; run once on a new, empty file.
const char* traceSchemaSql();

// Turns a trace of format 1.x into the current format, in place, inside the caller's transaction
// (docs/trace-format.md, "Format 1.x and what changed in 2.0"): driver calls move into
// CUPTI_ACTIVITY_KIND_RUNTIME with eventClass 1, TARGET_INFO_GPU gets nsys's columns,
// TARGET_INFO_CUDA_DEVICE and ENUM_NSYS_EVENT_CLASS are added. The caller sets user_version and
// builds the indexes (traceIndexSql) afterwards.
const char* traceUpgradeSql();

// Indexes on start times, created when the recording ends (building them once is cheaper than
// maintaining them per insert). A trace cut short by a kill has no indexes and still reads.
const char* traceIndexSql();

} // namespace warpline::format
