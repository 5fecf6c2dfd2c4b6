# Packaging tests. tst_install: `cmake --install` into a temporary prefix, then what a user of the
# install sees (the installed programs on the installed sample, one version everywhere, the desktop
# file, metainfo and MIME type through their validators). tst_package: the .deb's contents and
# control fields; it skips (ctest "Skipped") when the build directory has no .deb (`make package`).
if(NOT TARGET warpline OR NOT TARGET warpline-stats)
    return()
endif()

set(installed_targets warpline warpline-stats)
foreach(target warpline-record warpline-inject warpline-man warpline-icons)
    string(MAKE_C_IDENTIFIER "${target}" have)
    if(TARGET ${target})
        list(APPEND installed_targets ${target})
        set(${have} 1)
    else()
        set(${have} 0)
    endif()
endforeach()

warpline_add_test(NAME tst_install SOURCES tst_install.cpp LIBS warpline_version Qt6::Gui)
target_compile_definitions(tst_install PRIVATE
    WARPLINE_CMAKE_COMMAND="${CMAKE_COMMAND}"
    WARPLINE_SOURCE_SAMPLE="${PROJECT_SOURCE_DIR}/resources/sample.warpline"
    WARPLINE_HAVE_RECORD=${warpline_record}
    WARPLINE_HAVE_MAN=${warpline_man}
    WARPLINE_HAVE_PNG_ICONS=${warpline_icons})
# Installing needs every installed file built first.
add_dependencies(tst_install ${installed_targets})
set_tests_properties(tst_install PROPERTIES TIMEOUT 300)

warpline_add_test(NAME tst_package SOURCES tst_package.cpp LIBS warpline_version)
target_compile_definitions(tst_package PRIVATE
    WARPLINE_HAVE_RECORD=${warpline_record}
    WARPLINE_HAVE_MAN=${warpline_man})
