# FindCUPTI: locates NVIDIA's CUDA Profiling Tools Interface shipped with the CUDA toolkit.
#
# Uses CUDAToolkit (FindCUDAToolkit) for the toolkit root. Defines:
#   CUPTI_FOUND, CUPTI_INCLUDE_DIR, CUPTI_LIBRARY, CUPTI_VERSION (CUPTI_API_VERSION)
#   imported target CUPTI::cupti
# CUPTI_NOT_FOUND_REASON holds a sentence for the user when it is not found.
include(FindPackageHandleStandardArgs)

if(NOT CUDAToolkit_FOUND)
    find_package(CUDAToolkit QUIET)
endif()

set(_cupti_hints)
if(CUDAToolkit_FOUND)
    list(APPEND _cupti_hints "${CUDAToolkit_TARGET_DIR}" "${CUDAToolkit_LIBRARY_ROOT}")
endif()
list(APPEND _cupti_hints /usr/local/cuda)

find_path(CUPTI_INCLUDE_DIR cupti.h
    HINTS ${_cupti_hints}
    PATH_SUFFIXES include extras/CUPTI/include)
find_library(CUPTI_LIBRARY cupti
    HINTS ${_cupti_hints}
    PATH_SUFFIXES lib64 lib extras/CUPTI/lib64)

if(CUPTI_INCLUDE_DIR AND EXISTS "${CUPTI_INCLUDE_DIR}/cupti_version.h")
    file(STRINGS "${CUPTI_INCLUDE_DIR}/cupti_version.h" _cupti_ver
         REGEX "^#define CUPTI_API_VERSION [0-9]+")
    string(REGEX REPLACE "^#define CUPTI_API_VERSION ([0-9]+).*" "\\1" CUPTI_VERSION "${_cupti_ver}")
endif()

find_package_handle_standard_args(CUPTI
    REQUIRED_VARS CUPTI_LIBRARY CUPTI_INCLUDE_DIR
    VERSION_VAR CUPTI_VERSION)

if(CUPTI_FOUND AND NOT TARGET CUPTI::cupti)
    add_library(CUPTI::cupti SHARED IMPORTED)
    set_target_properties(CUPTI::cupti PROPERTIES
        IMPORTED_LOCATION "${CUPTI_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CUPTI_INCLUDE_DIR}")
endif()

if(NOT CUPTI_FOUND)
    if(NOT CUDAToolkit_FOUND)
        set(CUPTI_NOT_FOUND_REASON "no CUDA toolkit found (install it at /usr/local/cuda or set CUDAToolkit_ROOT)")
    else()
        set(CUPTI_NOT_FOUND_REASON "the CUDA toolkit at ${CUDAToolkit_TARGET_DIR} has no CUPTI (cupti.h / libcupti)")
    endif()
endif()
mark_as_advanced(CUPTI_INCLUDE_DIR CUPTI_LIBRARY)
