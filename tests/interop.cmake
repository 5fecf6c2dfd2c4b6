# Interoperability: Chrome trace export, trace diff, PyTorch profiler (Kineto) import, Nsight
# Systems exports. Traces are generated per test (tst_model_tracebuilder.h); recorded traces in
# tests/data are checked when present.
find_package(ZLIB REQUIRED)
foreach(unit chromeexport tracediff kinetoimport nsysexport)
    warpline_add_test(NAME tst_${unit} SOURCES tst_${unit}.cpp
                      LIBS warpline_model warpline_format SQLite::SQLite3 ZLIB::ZLIB)
    if(TARGET warpline-stats)
        target_compile_definitions(tst_${unit} PRIVATE
            WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
        add_dependencies(tst_${unit} warpline-stats)
    endif()
endforeach()
# The app's side: File > Compare With…, File > Export > Chrome Trace, opening PyTorch traces.
if(TARGET warpline_app)
    warpline_add_test(NAME tst_comparedialog SOURCES tst_comparedialog.cpp LIBS warpline_app
                      LABELS app)
endif()
# nsys's own report SQL (cuda_gpu_kern_sum, cuda_api_sum, nvtx_sum, cuda_gpu_mem_time_sum,
# cuda_gpu_mem_size_sum) run on real traces against warpline-stats' kernels, api, nvtx, memops and
# memsize reports, and a third-party nsys-export reader (nsys-tui, installed from PyPI: skips
# without network) on the same traces.
set(WARPLINE_INTEROP_TRACES
    ${WARPLINE_TEST_DATA_DIR}/torch-gpt-train.warpline
    ${WARPLINE_TEST_DATA_DIR}/torch-gpt-compiled.warpline
    ${WARPLINE_TEST_DATA_DIR}/torch-ddp-steps0.warpline
    ${WARPLINE_TEST_DATA_DIR}/sync-stall.warpline
    ${WARPLINE_TEST_DATA_DIR}/graphs.warpline
    ${WARPLINE_TEST_DATA_DIR}/streams.warpline)
if(TARGET warpline-stats)
    add_test(NAME interop_nsys_stats_sql
             COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/interop/nsys_stats_sql.py
                     $<TARGET_FILE:warpline-stats> ${WARPLINE_INTEROP_TRACES})
endif()
add_test(NAME interop_nsys_tui
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/interop/nsys_tui.sh ${WARPLINE_INTEROP_TRACES})
set_tests_properties(interop_nsys_tui PROPERTIES LABELS network SKIP_RETURN_CODE 77)
