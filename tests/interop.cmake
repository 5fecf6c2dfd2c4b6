# Interoperability: Chrome trace export, trace diff, PyTorch profiler (Kineto) import, Nsight
# Systems exports. Traces are generated per test (tst_model_tracebuilder.h); recorded traces in
# tests/data are checked when present.
foreach(unit chromeexport tracediff)
    warpline_add_test(NAME tst_${unit} SOURCES tst_${unit}.cpp
                      LIBS warpline_model warpline_tracewriter SQLite::SQLite3)
    if(TARGET warpline-stats)
        target_compile_definitions(tst_${unit} PRIVATE
            WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
        add_dependencies(tst_${unit} warpline-stats)
    endif()
endforeach()
