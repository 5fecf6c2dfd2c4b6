# Collector tests: the writer always; the CUPTI decoder and warpline-record where they are built.
warpline_add_test(NAME tst_tracewriter SOURCES tst_tracewriter.cpp
                  LIBS warpline_tracewriter SQLite::SQLite3)
if(TARGET warpline_collector)
    warpline_add_test(NAME tst_activitydecoder SOURCES tst_activitydecoder.cpp
                      LIBS warpline_collector SQLite::SQLite3)
endif()
if(TARGET warpline-record)
    warpline_add_test(NAME tst_recordcli SOURCES tst_recordcli.cpp LIBS warpline_tracewriter)
    target_compile_definitions(tst_recordcli PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(tst_recordcli warpline-record)
endif()
warpline_add_test(NAME tst_workloadtraces SOURCES tst_workloadtraces.cpp LIBS SQLite::SQLite3)
if(TARGET warpline-record)
    add_test(NAME gpu_record_workloads
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_workloads.sh
                     $<TARGET_FILE:warpline-record> $<TARGET_FILE:tst_workloadtraces>)
    set_tests_properties(gpu_record_workloads PROPERTIES LABELS gpu SKIP_RETURN_CODE 77
                         ENVIRONMENT "QT_QPA_PLATFORM=offscreen")
endif()
