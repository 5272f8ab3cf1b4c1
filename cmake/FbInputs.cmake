# Checks of values a user gives at configure time: a bad one stops the configure with one
# "fabricbench: ..." line naming the variable and what was expected (fb_fatal).
include_guard(GLOBAL)

# message(FATAL_ERROR) on one line: CMake wraps an error's text at 80 columns unless the text
# starts with a space (then it is printed as it is), so the line stays whole for grep and people.
function(fb_fatal text)
  message(FATAL_ERROR " ${text}")
endfunction()

# NCCL_ROOT (-DNCCL_ROOT=<prefix> or the environment variable): <prefix>/include/nccl.h and
# libnccl.so (or libnccl.a) in <prefix>/lib64, lib or lib/x86_64-linux-gnu.
function(fb_check_nccl_root)
  if(DEFINED NCCL_ROOT AND NOT "${NCCL_ROOT}" STREQUAL "")
    set(root "${NCCL_ROOT}")
    set(from "-DNCCL_ROOT")
  elseif(DEFINED ENV{NCCL_ROOT} AND NOT "$ENV{NCCL_ROOT}" STREQUAL "")
    set(root "$ENV{NCCL_ROOT}")
    set(from "environment variable NCCL_ROOT")
  else()
    return()
  endif()
  set(want "expected <prefix>/include/nccl.h and <prefix>/lib/libnccl.so")
  if(NOT IS_DIRECTORY "${root}")
    fb_fatal("fabricbench: NCCL_ROOT='${root}' (${from}) is not a directory (${want})")
  endif()
  if(NOT EXISTS "${root}/include/nccl.h")
    fb_fatal("fabricbench: NCCL_ROOT='${root}' (${from}) has no include/nccl.h (${want})")
  endif()
  set(libs "")
  foreach(d lib64 lib lib/x86_64-linux-gnu)
    file(GLOB found "${root}/${d}/libnccl.so" "${root}/${d}/libnccl.a")
    list(APPEND libs ${found})
  endforeach()
  if(NOT libs)
    fb_fatal("fabricbench: NCCL_ROOT='${root}' (${from}) has include/nccl.h but no libnccl.so or libnccl.a in lib64/, lib/ or lib/x86_64-linux-gnu/")
  endif()
endfunction()
