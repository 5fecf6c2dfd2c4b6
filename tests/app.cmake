# App tests: the main window and the record dialog, driven like a user would.
if(NOT TARGET warpline_app)
    return()
endif()
warpline_add_test(NAME tst_mainwindow SOURCES tst_mainwindow.cpp
                  LIBS warpline_app warpline_format warpline_rankjobgen LABELS app)
if(TARGET warpline-stats)
    target_compile_definitions(tst_mainwindow PRIVATE WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_mainwindow warpline-stats)
endif()
if(TARGET warpline-record)
    target_compile_definitions(tst_mainwindow PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(tst_mainwindow warpline-record)
endif()
# The window's exports against warpline-stats' reports, for every committed trace and report.
warpline_add_test(NAME tst_reportparity SOURCES tst_reportparity.cpp LIBS warpline_app LABELS app)
if(TARGET warpline-stats)
    target_compile_definitions(tst_reportparity PRIVATE
        WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_reportparity warpline-stats)
endif()
# Under the sanitizers (a Debug build, 10 to 20 times slower) the traces above 4 MB are left out:
# the largest alone takes over 5 minutes there. make test compares every trace.
if(WARPLINE_SANITIZE)
    target_compile_definitions(tst_reportparity PRIVATE WARPLINE_PARITY_MAX_BYTES=4000000)
endif()
# The step-time chart beside the Steps table, on a real PyTorch loop and on generated steps.
warpline_add_test(NAME tst_stepchart SOURCES tst_stepchart.cpp
                  LIBS warpline_app warpline_format LABELS app)
if(TARGET warpline-stats)
    target_compile_definitions(tst_stepchart PRIVATE WARPLINE_STATS="$<TARGET_FILE:warpline-stats>")
    add_dependencies(tst_stepchart warpline-stats)
endif()
# The Record dialog with the real recorder, on a GPU (records a workload and a PyTorch program;
# skips without a GPU). Carry it with warpline-record and Qt's runtime to the GPU machine.
if(TARGET warpline-record)
    warpline_add_test(NAME gpu_record_dialog SOURCES gpu_record_dialog.cpp LIBS warpline_app
                      LABELS gpu)
    target_compile_definitions(gpu_record_dialog PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(gpu_record_dialog warpline-record)
else()
    warpline_unbuildable_test(NAME gpu_record_dialog LABELS gpu)
endif()
# Recording on a host over SSH: a real sshd on 127.0.0.1 (openssh-server), a stand-in recorder
# there, and the real warpline-record --host and Record dialog here.
warpline_add_test(NAME tst_remote_record SOURCES tst_remote_record.cpp LIBS warpline_app
                  LABELS app)
if(TARGET warpline-record)
    target_compile_definitions(tst_remote_record PRIVATE
        WARPLINE_RECORD="$<TARGET_FILE:warpline-record>")
    add_dependencies(tst_remote_record warpline-record)
endif()
