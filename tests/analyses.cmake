# Analyses beyond the summaries: run-ahead, sync stalls, GPU gaps and insights. Traces are written
# per test with the real TraceWriter (analysestracegen.h); recorded traces in tests/data are
# checked when present.
foreach(unit runahead syncstalls gaps insights steps)
    warpline_add_test(NAME tst_${unit} SOURCES tst_${unit}.cpp analysestracegen.h
                      LIBS warpline_model warpline_format)
endforeach()
# GPU metrics per kernel: the collector's GPU_METRICS writer, the loader and the analysis.
warpline_add_test(NAME tst_kernelmetrics SOURCES tst_kernelmetrics.cpp analysestracegen.h
                  LIBS warpline_model warpline_format SQLite::SQLite3)
# GPU time by Python source line (--python-stacks): writer, loader and report.
warpline_add_test(NAME tst_sourcelines SOURCES tst_sourcelines.cpp analysestracegen.h
                  LIBS warpline_model warpline_format SQLite::SQLite3)
# Across ranks: 8-rank jobs from the rank-job generator (bench/rankjobgen.h) opened as sessions.
# warpline-stats' rank tests (tst_stats_cli, tests/model.cmake) write such jobs too.
warpline_add_test(NAME tst_crossrank SOURCES tst_crossrank.cpp analysestracegen.h
                  LIBS warpline_model warpline_format warpline_rankjobgen SQLite::SQLite3)
if(TARGET tst_stats_cli)
    target_link_libraries(tst_stats_cli PRIVATE warpline_rankjobgen)
endif()
# The diagnosis corpus: programs that each plant one bottleneck, recorded on the GPU machine
# (tests/corpus, tests/data/corpus, docs/corpus.md): steps, verdict and accuracy.
warpline_add_test(NAME tst_corpus SOURCES tst_corpus.cpp LIBS warpline_model)
