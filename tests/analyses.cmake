# Analyses beyond the summaries: run-ahead, sync stalls, GPU gaps and insights. Traces are written
# per test with the real TraceWriter (analysestracegen.h); recorded traces in tests/data are
# checked when present.
foreach(unit runahead syncstalls gaps insights)
    warpline_add_test(NAME tst_${unit} SOURCES tst_${unit}.cpp analysestracegen.h
                      LIBS warpline_model warpline_tracewriter)
endforeach()
