# Desktop app benchmarks (not tests), offscreen: built with the window (Qt 6 found).
if(TARGET warpline_app)
    # First paint and repaint times on a trace.
    add_executable(warpline-bench-paint bench_paint.cpp)
    target_link_libraries(warpline-bench-paint PRIVATE warpline_views)
    # How long the GUI thread goes without reacting while a trace opens in the main window.
    add_executable(warpline-bench-window bench_window.cpp)
    target_link_libraries(warpline-bench-window PRIVATE warpline_app)
endif()
