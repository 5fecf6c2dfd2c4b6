# App tests: the main window and the record dialog, driven like a user would.
if(NOT TARGET warpline_app)
    return()
endif()
warpline_add_test(NAME tst_mainwindow SOURCES tst_mainwindow.cpp
                  LIBS warpline_app warpline_tracewriter warpline_rankjobgen LABELS app)
if(TARGET warpline-stats)
    target_compile_definitions(tst_mainwindow PRIVATE WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_mainwindow warpline-stats)
endif()
if(TARGET warpline-record)
    target_compile_definitions(tst_mainwindow PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(tst_mainwindow warpline-record)
endif()
