# Model benchmarks (not tests): a synthetic trace generator and the load/report timer.
# bench/run_model_bench.sh runs both and times the equivalent sqlite3 GROUP BY in the same run.
if(TARGET warpline_tracewriter)
    add_executable(warpline-gen-trace gen_trace.cpp)
    target_link_libraries(warpline-gen-trace PRIVATE warpline_tracewriter)
endif()
if(TARGET warpline_model)
    add_executable(warpline-bench-model bench_model.cpp)
    target_link_libraries(warpline-bench-model PRIVATE warpline_model)
endif()
