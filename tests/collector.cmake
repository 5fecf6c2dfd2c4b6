# Collector tests: the writer always; the CUPTI decoder and warpline-record where they are built.
warpline_add_test(NAME tst_tracewriter SOURCES tst_tracewriter.cpp
                  LIBS warpline_format SQLite::SQLite3)
warpline_add_test(NAME tst_outputname SOURCES tst_outputname.cpp LIBS warpline_format)
# CPU sampling (perf events on a child process; no GPU) and its samples' way through the trace.
warpline_add_test(NAME tst_cpusampling SOURCES tst_cpusampling.cpp
                  LIBS warpline_cpusampling warpline_model SQLite::SQLite3)
if(TARGET warpline_collector)
    warpline_add_test(NAME tst_activitydecoder SOURCES tst_activitydecoder.cpp
                      LIBS warpline_collector SQLite::SQLite3)
else()
    warpline_unbuildable_test(NAME tst_activitydecoder)
endif()
# --python-stacks' stack reader inside a real CPython: no GPU, and no CUDA toolkit (the reader is
# plain C++ over CPython's C API).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
    add_library(warpline_pythonstacks_probe SHARED stubs/pythonstacksprobe.cpp
                ${PROJECT_SOURCE_DIR}/collector/pythonstacks.cpp)
    target_include_directories(warpline_pythonstacks_probe PRIVATE
                               ${PROJECT_SOURCE_DIR}/collector ${PROJECT_SOURCE_DIR}/format)
    target_link_libraries(warpline_pythonstacks_probe PRIVATE ${CMAKE_DL_LIBS})
    # -O strips assert statements: the script's checks must hold without them (issue 33).
    add_test(NAME python_stacks
             COMMAND ${Python3_EXECUTABLE} -O ${CMAKE_CURRENT_SOURCE_DIR}/python_stacks.py
                     $<TARGET_FILE:warpline_pythonstacks_probe>)
    set(WARPLINE_PYTHON_STACKS_TESTS python_stacks)
    # The same under every other CPython 3 this machine has (Debian's python3.X, pyenv's),
    # one per minor version: the reader follows the interpreter's C API, which changes.
    execute_process(COMMAND ${Python3_EXECUTABLE} -c
                    "import sys; print('%d.%d' % sys.version_info[:2])"
                    OUTPUT_VARIABLE WARPLINE_PYTHON_MAIN OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(WARPLINE_PYTHONS_SEEN ${WARPLINE_PYTHON_MAIN})
    file(GLOB WARPLINE_OTHER_PYTHONS /usr/bin/python3.* $ENV{HOME}/.pyenv/versions/3.*/bin/python3)
    foreach(python IN LISTS WARPLINE_OTHER_PYTHONS)
        if(NOT python MATCHES "(python3\\.[0-9]+|bin/python3)$")
            continue()
        endif()
        execute_process(COMMAND ${python} -c
                        "import sys; print('%d.%d' % sys.version_info[:2])"
                        OUTPUT_VARIABLE version OUTPUT_STRIP_TRAILING_WHITESPACE
                        RESULT_VARIABLE failed ERROR_QUIET)
        if(failed OR NOT version MATCHES "^3\\.[0-9]+$" OR version IN_LIST WARPLINE_PYTHONS_SEEN)
            continue()
        endif()
        list(APPEND WARPLINE_PYTHONS_SEEN ${version})
        add_test(NAME python_stacks_${version}
                 COMMAND ${python} ${CMAKE_CURRENT_SOURCE_DIR}/python_stacks.py
                         $<TARGET_FILE:warpline_pythonstacks_probe>)
        list(APPEND WARPLINE_PYTHON_STACKS_TESTS python_stacks_${version})
    endforeach()
    if(WARPLINE_SANITIZE)
        # The probe library is instrumented and python3 is not: ASan's runtime must come
        # first, and Python's own allocations at exit are not ours to report.
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                        OUTPUT_VARIABLE WARPLINE_LIBASAN OUTPUT_STRIP_TRAILING_WHITESPACE)
        execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libubsan.so
                        OUTPUT_VARIABLE WARPLINE_LIBUBSAN OUTPUT_STRIP_TRAILING_WHITESPACE)
        set_tests_properties(${WARPLINE_PYTHON_STACKS_TESTS} PROPERTIES ENVIRONMENT
            "LD_PRELOAD=${WARPLINE_LIBASAN}:${WARPLINE_LIBUBSAN};ASAN_OPTIONS=detect_leaks=0")
    endif()
endif()
if(TARGET warpline-record)
    warpline_add_test(NAME tst_recordcli SOURCES tst_recordcli.cpp LIBS SQLite::SQLite3)
    # A recorder library whose CUPTI is missing: needs libcupti.so.999, which exists only in a
    # build folder no rpath names.
    enable_language(C)
    add_library(warpline_stub_cupti SHARED stubs/missingcupti.c)
    set_target_properties(warpline_stub_cupti PROPERTIES OUTPUT_NAME cupti SOVERSION 999
        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/stub-cupti)
    add_library(warpline_stub_needs_cupti SHARED stubs/needscupti.c)
    target_link_libraries(warpline_stub_needs_cupti PRIVATE warpline_stub_cupti)
    set_target_properties(warpline_stub_needs_cupti PROPERTIES SKIP_BUILD_RPATH ON)
    target_compile_definitions(tst_recordcli PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>"
        WARPLINE_STUB_NEEDS_CUPTI="$<TARGET_FILE:warpline_stub_needs_cupti>")
    add_dependencies(tst_recordcli warpline-record warpline_stub_needs_cupti)
else()
    warpline_unbuildable_test(NAME tst_recordcli)
endif()
warpline_add_test(NAME tst_workloadtraces SOURCES tst_workloadtraces.cpp LIBS SQLite::SQLite3)
if(TARGET warpline-record)
    add_test(NAME gpu_record_workloads
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_workloads.sh
                     $<TARGET_FILE:warpline-record> $<TARGET_FILE:tst_workloadtraces>)
    set_tests_properties(gpu_record_workloads PROPERTIES LABELS gpu SKIP_RETURN_CODE 77
                         ENVIRONMENT "QT_QPA_PLATFORM=offscreen")
    # The allreduce workload as a two-rank job (needs two GPUs and NCCL; skips otherwise).
    add_test(NAME gpu_record_ranks
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_ranks.sh $<TARGET_FILE:warpline-record>)
    set_tests_properties(gpu_record_ranks PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
else()
    warpline_unbuildable_test(NAME gpu_record_workloads LABELS gpu)
    warpline_unbuildable_test(NAME gpu_record_ranks LABELS gpu)
endif()
if(TARGET warpline-inject)
    # A small CUDA program for the gpu tests of `warpline-record -- PROGRAM` (links the driver
    # API through the toolkit's stub library; it runs only where a driver is installed).
    add_executable(cuda_probe gpu/cuda_probe.cu)
    target_include_directories(cuda_probe PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    target_link_libraries(cuda_probe PRIVATE CUDA::cudart_static CUDA::cuda_driver)
    # Probe of CUPTI's PM sampling (issue: GPU hardware metrics): run by hand on the GPU machine.
    add_executable(pm_sampling_probe gpu/pm_sampling_probe.cu)
    target_include_directories(pm_sampling_probe PRIVATE ${CUDAToolkit_INCLUDE_DIRS}
                               ${PROJECT_SOURCE_DIR}/collector ${PROJECT_SOURCE_DIR}/format)
    target_link_libraries(pm_sampling_probe PRIVATE CUPTI::cupti CUDA::cudart_static
                          CUDA::cuda_driver)
    # CUDA's own occupancy answers for tst_occupancy to check the calculator against: run by hand
    # on the GPU machine, output kept in docs/probes/ (see the probe's header).
    add_executable(occupancy_probe gpu/occupancy_probe.cu)
    target_link_libraries(occupancy_probe PRIVATE CUDA::cudart_static)
    add_test(NAME gpu_record_program
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_program.sh
                     $<TARGET_FILE:warpline-record> $<TARGET_FILE:cuda_probe>)
    set_tests_properties(gpu_record_program PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
    # A real PyTorch training loop recorded through the injection library (needs PyTorch).
    add_test(NAME gpu_record_torch
             COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpu/record_torch.sh $<TARGET_FILE:warpline-record>)
    set_tests_properties(gpu_record_torch PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
    if(TARGET warpline-stats)
        set_tests_properties(gpu_record_torch PROPERTIES
                             ENVIRONMENT "WARPLINE_STATS=$<TARGET_FILE:warpline-stats>")
    endif()
else()
    warpline_unbuildable_test(NAME gpu_record_program LABELS gpu)
    warpline_unbuildable_test(NAME gpu_record_torch LABELS gpu)
endif()
