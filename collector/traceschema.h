#pragma once

// The Warpline trace file schema (docs/trace-format.md documents every table and column).
// Tables follow the Nsight Systems SQLite export's names and column meanings; Warpline's own facts
// live in WARPLINE_* tables. Kernels are stored compactly (WARPLINE_KERNELS rows pointing at
// deduplicated WARPLINE_KERNEL_CONFIGS) and exposed under the nsys name through a view.

namespace warpline::collector {

// PRAGMA user_version = major * 100 + minor. A reader refuses a newer major version.
inline constexpr int kFormatMajor = 1;
inline constexpr int kFormatMinor = 0;
inline constexpr int kFormatUserVersion = kFormatMajor * 100 + kFormatMinor;

// CREATE statements for every table, view and enum row; run once on a new, empty file.
const char* traceSchemaSql();

// Indexes on start times, created when the recording ends (building them once is cheaper than
// maintaining them per insert). A trace cut short by a kill has no indexes and still reads.
const char* traceIndexSql();

} // namespace warpline::collector
