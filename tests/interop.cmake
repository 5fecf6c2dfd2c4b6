# Interoperability: Chrome trace export, trace diff, PyTorch profiler (Kineto) import, Nsight
# Systems exports. Traces are generated per test (tst_model_tracebuilder.h); recorded traces in
# tests/data are checked when present.
find_package(ZLIB REQUIRED)
foreach(unit chromeexport tracediff kinetoimport nsysexport)
    warpline_add_test(NAME tst_${unit} SOURCES tst_${unit}.cpp
                      LIBS warpline_model warpline_tracewriter SQLite::SQLite3 ZLIB::ZLIB)
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
