# Model benchmarks (not tests): a synthetic trace generator and the load/report timer.
# bench/run_model_bench.sh runs both and times the equivalent sqlite3 GROUP BY in the same run.
if(TARGET warpline_format)
    # The traces of a synthetic multi-rank job (rankjobgen.h), for the session tests and benchmarks.
    add_library(warpline_rankjobgen STATIC rankjobgen.cpp)
    target_link_libraries(warpline_rankjobgen PUBLIC warpline_format)
    target_include_directories(warpline_rankjobgen PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
    target_compile_features(warpline_rankjobgen PUBLIC cxx_std_20)

    add_executable(warpline-gen-trace gen_trace.cpp)
    target_link_libraries(warpline-gen-trace PRIVATE warpline_format warpline_rankjobgen)
endif()
if(TARGET warpline_model)
    add_executable(warpline-bench-model bench_model.cpp)
    target_link_libraries(warpline-bench-model PRIVATE warpline_model)
    # A multi-rank job opened as one session vs its files loaded one after another.
    add_executable(warpline-bench-session bench_session.cpp)
    target_link_libraries(warpline-bench-session PRIVATE warpline_model)
endif()
