# Collector benchmarks (not tests): writer throughput and size; launch overhead on a GPU.
if(TARGET warpline_collector)
    add_executable(warpline-bench-writer bench_writer.cpp)
    target_link_libraries(warpline-bench-writer PRIVATE warpline_collector)
    get_filename_component(_cupti_libdir "${CUPTI_LIBRARY}" DIRECTORY)
    set_target_properties(warpline-bench-writer PROPERTIES BUILD_RPATH "${_cupti_libdir}")
endif()
if(TARGET warpline_collector AND TARGET warpline_workloads)
    add_executable(warpline-bench-overhead bench_launch_overhead.cu)
    target_link_libraries(warpline-bench-overhead PRIVATE warpline_collector warpline_workloads
                                                          CUDA::cudart_static)
    target_include_directories(warpline-bench-overhead PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    set_target_properties(warpline-bench-overhead PROPERTIES BUILD_RPATH "${_cupti_libdir}")
endif()
