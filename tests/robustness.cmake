# Robustness: damaged and wrong input, files in use, read-only opening (tst_robustness); the
# writer when the disk fills or the directory vanishes (tst_robustness_writer); names shown as
# plain text and warnings shown in the window (tst_robustness_gui). docs/robustness.md.
if(TARGET warpline-stats)
    warpline_add_test(NAME tst_robustness SOURCES tst_robustness.cpp tst_model_tracebuilder.h
                      LIBS warpline_model warpline_format SQLite::SQLite3)
    target_compile_definitions(tst_robustness PRIVATE WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_robustness warpline-stats)
endif()
# With the collector built, records go through the CUPTI ActivityDecoder as when recording.
if(TARGET warpline_collector)
    warpline_add_test(NAME tst_robustness_writer SOURCES tst_robustness_writer.cpp
                      LIBS warpline_model warpline_collector)
    target_compile_definitions(tst_robustness_writer PRIVATE WARPLINE_HAVE_DECODER)
else()
    warpline_add_test(NAME tst_robustness_writer SOURCES tst_robustness_writer.cpp
                      LIBS warpline_model warpline_format)
endif()
# warpline-record and signals: without a GPU in -- PROGRAM mode; with one, interrupted workloads.
if(TARGET warpline-record)
    warpline_add_test(NAME tst_robustness_record SOURCES tst_robustness_record.cpp
                      LIBS SQLite::SQLite3)
    target_compile_definitions(tst_robustness_record PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(tst_robustness_record warpline-record)
else()
    warpline_unbuildable_test(NAME tst_robustness_record)
endif()
if(TARGET warpline-record AND TARGET cuda_probe AND TARGET warpline-stats)
    add_test(NAME gpu_record_interrupt
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_interrupt.sh
                     $<TARGET_FILE:warpline-record> $<TARGET_FILE:cuda_probe>
                     $<TARGET_FILE:warpline-stats>)
    set_tests_properties(gpu_record_interrupt PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
else()
    warpline_unbuildable_test(NAME gpu_record_interrupt LABELS gpu)
endif()
# The window: trace text shown literally (never as rich text), warnings visible, damaged files.
if(TARGET warpline_app)
    warpline_add_test(NAME tst_robustness_gui SOURCES tst_robustness_gui.cpp tst_model_tracebuilder.h
                      LIBS warpline_app warpline_format SQLite::SQLite3)
endif()
# Files an attacker makes around and inside a trace: journals, WALs, decoy schema rows, shared
# b-tree pages, sparse files (issue 27).
if(TARGET warpline-stats)
    warpline_add_test(NAME tst_tracedatabase SOURCES tst_tracedatabase.cpp
                      LIBS warpline_model SQLite::SQLite3)
    target_compile_definitions(tst_tracedatabase PRIVATE
        WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_tracedatabase warpline-stats)
endif()
