# Model and warpline-stats tests. Traces are generated per test (tst_model_tracebuilder.h over the
# real schema, or TraceWriter); recorded traces in tests/data are picked up when present.
warpline_add_test(NAME tst_model_loader SOURCES tst_model_loader.cpp
                  LIBS warpline_model warpline_format SQLite::SQLite3)
warpline_add_test(NAME tst_model_summaries SOURCES tst_model_summaries.cpp
                  LIBS warpline_model warpline_format SQLite::SQLite3)
warpline_add_test(NAME tst_model_tablewriter SOURCES tst_model_tablewriter.cpp
                  LIBS warpline_model)
if(TARGET warpline-stats)
    warpline_add_test(NAME tst_stats_cli SOURCES tst_stats_cli.cpp
                      LIBS warpline_model warpline_format warpline_version SQLite::SQLite3)
    target_compile_definitions(tst_stats_cli PRIVATE
        WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_stats_cli warpline-stats)
endif()
# Several traces as one store (model/loading/tracesession.h), on jobs from bench/rankjobgen.h.
warpline_add_test(NAME tst_tracesession SOURCES tst_tracesession.cpp
                  LIBS warpline_model warpline_rankjobgen SQLite::SQLite3)
# Reading tables from their b-tree pages (model/loading/pagereader.h) against SQL.
warpline_add_test(NAME tst_pagereader SOURCES tst_pagereader.cpp tst_model_tracebuilder.h
                  LIBS warpline_model warpline_format SQLite::SQLite3)
# Theoretical occupancy (model/analyses/occupancy.h): the calculator, the kernels table and the
# details panel; checked against CUDA's answers when docs/probes/ holds an occupancy_probe output.
if(TARGET warpline_views)
    warpline_add_test(NAME tst_occupancy SOURCES tst_occupancy.cpp
                      LIBS warpline_model warpline_views)
endif()
