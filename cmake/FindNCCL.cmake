# FindNCCL: nccl.h and libnccl from, in this order:
#   -DNCCL_ROOT=<prefix> or the NCCL_ROOT environment variable (CMake's <Package>_ROOT), then
#   CMAKE_PREFIX_PATH (Spack views, modules that set it), then the NCCL_HOME / NCCL_DIR environment
#   variables (set by many sites' nccl modules), then the CUDA toolkit (CUDAToolkit_* when found,
#   /usr/local/cuda), then the system paths (/usr/include, /usr/lib/x86_64-linux-gnu: distribution
#   packages such as libnccl-dev).
# -DNCCL_INCLUDE_DIR=... and -DNCCL_LIBRARY=... (cache variables) name the two files directly.
# The library is looked for beside the header first (<prefix>/lib64, <prefix>/lib) so that a header
# from one install is not paired with the library of another.
# Result: NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION (from nccl.h), target NCCL::nccl.
set(_fb_nccl_hints $ENV{NCCL_HOME} $ENV{NCCL_DIR})
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _fb_nccl_hints ${CUDAToolkit_LIBRARY_ROOT})
endif()
if(CUDAToolkit_INCLUDE_DIRS)
  foreach(_d IN LISTS CUDAToolkit_INCLUDE_DIRS)
    get_filename_component(_p "${_d}" DIRECTORY)
    list(APPEND _fb_nccl_hints ${_p})
  endforeach()
endif()
list(APPEND _fb_nccl_hints /usr/local/cuda)

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_fb_nccl_hints} PATH_SUFFIXES include
          DOC "folder of nccl.h")
set(_fb_nccl_near "")
if(NCCL_INCLUDE_DIR)
  get_filename_component(_fb_nccl_near "${NCCL_INCLUDE_DIR}" DIRECTORY)
  # the header's own prefix first (an explicit NCCL_LIBRARY is kept as given)
  find_library(NCCL_LIBRARY nccl HINTS ${_fb_nccl_near} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu
               NO_DEFAULT_PATH DOC "libnccl.so")
endif()
find_library(NCCL_LIBRARY nccl HINTS ${_fb_nccl_hints} PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu
             DOC "libnccl.so")

set(NCCL_VERSION "")
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _fb_nccl_v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
  string(REGEX REPLACE "#define NCCL_[A-Z]+ +" "" _fb_nccl_v "${_fb_nccl_v}")
  string(REPLACE ";" "." NCCL_VERSION "${_fb_nccl_v}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                        INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
unset(_fb_nccl_hints)
unset(_fb_nccl_near)
unset(_fb_nccl_v)
