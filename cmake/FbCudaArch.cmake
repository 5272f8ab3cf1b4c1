# The GPU architectures the CUDA code is compiled for (CMAKE_CUDA_ARCHITECTURES), decided before
# enable_language(CUDA):
#   given (-DCMAKE_CUDA_ARCHITECTURES=... or the CUDAARCHS environment variable): used as given,
#     after a check of its form (90, 80;90, 90-real, 100a, native, all, all-major);
#   else a GPU visible at configure time (nvidia-smi lists one): "native", i.e. the GPUs of this
#     host (CMake asks nvcc), their compute capabilities printed;
#   else FB_CUDA_ARCHITECTURES_DEFAULT: A100 (80), H100/H200 (90) and, when nvcc knows it
#     (CUDA 12.8 or later), B200/GB200 (100), with PTX of the newest for later GPUs.
# Sets FB_CUDA_ARCH_SUMMARY (one line: what and why), for the configure summary and --version.

include(FbInputs)  # fb_fatal

set(FB_CUDA_ARCHITECTURES_DEFAULT_OLD "80-real;90")            # nvcc before 12.8
set(FB_CUDA_ARCHITECTURES_DEFAULT_NEW "80-real;90-real;100")   # nvcc 12.8 or later

# Sets ${out} to "" when every item of ${value} is an architecture CMake accepts, else to the bad item.
function(fb_cuda_arch_bad_item value out)
  set(bad "")
  if(value STREQUAL "")
    set(bad "<empty>")
  endif()
  foreach(a IN LISTS value)
    if(NOT a MATCHES "^(native|all|all-major|[1-9][0-9]+[af]?(-real|-virtual)?)$")
      set(bad "${a}")
      break()
    endif()
  endforeach()
  list(LENGTH value n)
  if(bad STREQUAL "" AND n GREATER 1 AND value MATCHES "(^|;)(native|all|all-major)(;|$)")
    set(bad "${value} (native/all/all-major stand alone)")
  endif()
  set(${out} "${bad}" PARENT_SCOPE)
endfunction()

# Stops the configure with one line when `value` (given by `from`) is not an architecture list.
function(fb_cuda_arch_require_valid value from)
  fb_cuda_arch_bad_item("${value}" bad)
  if(NOT bad STREQUAL "")
    fb_fatal("fabricbench: bad CUDA architecture '${bad}' in '${value}' (${from}; expected e.g. 90, \"80;90\", 90-real, 100a, native, all-major)")
  endif()
endfunction()

# The compute capabilities of the GPUs nvidia-smi sees ("90;90"), "" when none or no nvidia-smi.
function(fb_cuda_detect_gpus out names)
  set(caps "")
  set(gpu_names "")
  # -DFB_NVIDIA_SMI=<program>: another nvidia-smi (the tests' fake one). find_program gets a
  # variable of its own: it skips the search when its variable is already set, even to "".
  set(smi "${FB_NVIDIA_SMI}")
  if(NOT smi)
    find_program(fb_smi_found nvidia-smi PATHS /usr/bin /usr/local/cuda/bin NO_CACHE)
    if(fb_smi_found)
      set(smi "${fb_smi_found}")
    endif()
  endif()
  if(smi)
    execute_process(COMMAND ${smi} --query-gpu=compute_cap,name --format=csv,noheader
                    OUTPUT_VARIABLE txt RESULT_VARIABLE rc ERROR_QUIET TIMEOUT 20)
    if(rc EQUAL 0)
      string(REPLACE "\n" ";" lines "${txt}")
      foreach(l IN LISTS lines)
        if(l MATCHES "^ *([0-9]+)\\.([0-9]+) *, *(.*)$")
          list(APPEND caps "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
          string(STRIP "${CMAKE_MATCH_3}" nm)
          list(APPEND gpu_names "${nm}")
        endif()
      endforeach()
    endif()
  endif()
  set(${out} "${caps}" PARENT_SCOPE)
  set(${names} "${gpu_names}" PARENT_SCOPE)
endfunction()

# fb_cuda_choose_architectures(<nvcc version or "">): sets CMAKE_CUDA_ARCHITECTURES (cache) and
# FB_CUDA_ARCH_SUMMARY; a bad given value is a configure error naming it.
macro(fb_cuda_choose_architectures nvcc_version)
  if(DEFINED FB_CUDA_ARCH_CHOSEN AND "${CMAKE_CUDA_ARCHITECTURES}" STREQUAL "${FB_CUDA_ARCH_CHOSEN}")
    # chosen here by an earlier configure of this build folder (not given by the user): choose again
    unset(CMAKE_CUDA_ARCHITECTURES CACHE)
    unset(CMAKE_CUDA_ARCHITECTURES)
  endif()
  unset(FB_CUDA_ARCH_CHOSEN CACHE)
  if(DEFINED CMAKE_CUDA_ARCHITECTURES OR DEFINED ENV{CUDAARCHS})
    if(DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(_fb_arch "${CMAKE_CUDA_ARCHITECTURES}")
      set(_fb_from "given: CMAKE_CUDA_ARCHITECTURES")
    else()
      set(_fb_arch "$ENV{CUDAARCHS}")
      set(_fb_from "given: CUDAARCHS environment variable")
    endif()
    fb_cuda_arch_require_valid("${_fb_arch}" "${_fb_from}")
    if(_fb_arch STREQUAL "native")
      fb_cuda_detect_gpus(_fb_caps _fb_names)
      if(_fb_caps)
        list(REMOVE_DUPLICATES _fb_caps)
        list(JOIN _fb_caps "," _fb_caps_s)
        set(FB_CUDA_ARCH_SUMMARY "native = sm ${_fb_caps_s} (${_fb_from})")
      else()
        set(FB_CUDA_ARCH_SUMMARY "native (${_fb_from}; nvidia-smi saw no GPU: nvcc decides)")
      endif()
    else()
      set(FB_CUDA_ARCH_SUMMARY "${_fb_arch} (${_fb_from})")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${_fb_arch}" CACHE STRING "CUDA architectures (see cmake/FbCudaArch.cmake)")
  else()
    fb_cuda_detect_gpus(_fb_caps _fb_names)
    if(_fb_caps)
      list(LENGTH _fb_caps _fb_ngpu)
      list(REMOVE_DUPLICATES _fb_names)
      list(REMOVE_DUPLICATES _fb_caps)
      list(JOIN _fb_names ", " _fb_names_s)
      list(JOIN _fb_caps "," _fb_caps_s)
      set(_fb_arch native)
      set(FB_CUDA_ARCH_SUMMARY "native = sm ${_fb_caps_s} (detected at configure time: ${_fb_ngpu} x ${_fb_names_s})")
      message(STATUS "fabricbench: CUDA code built for this host's GPUs: sm ${_fb_caps_s} (${_fb_ngpu} x ${_fb_names_s}; CMAKE_CUDA_ARCHITECTURES=native)")
    else()
      if(NOT "${nvcc_version}" STREQUAL "" AND "${nvcc_version}" VERSION_LESS 12.8)  # a macro argument is text, not a variable
        set(_fb_arch "${FB_CUDA_ARCHITECTURES_DEFAULT_OLD}")
      else()
        set(_fb_arch "${FB_CUDA_ARCHITECTURES_DEFAULT_NEW}")
      endif()
      set(FB_CUDA_ARCH_SUMMARY "${_fb_arch} (default list: no GPU seen at configure time; A100=80, H100/H200=90, B200=100; set -DCMAKE_CUDA_ARCHITECTURES=<cc> for one GPU)")
      message(STATUS "fabricbench: no GPU visible at configure time (nvidia-smi): CUDA code built for the default list ${_fb_arch}; -DCMAKE_CUDA_ARCHITECTURES=<cc> (e.g. 90) builds for one GPU only, faster")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${_fb_arch}" CACHE STRING "CUDA architectures (see cmake/FbCudaArch.cmake)")
    set(FB_CUDA_ARCH_CHOSEN "${_fb_arch}" CACHE INTERNAL "CMAKE_CUDA_ARCHITECTURES as chosen by fabricbench")
  endif()
  set(FB_CUDA_ARCH_SUMMARY "${FB_CUDA_ARCH_SUMMARY}" CACHE INTERNAL "")
endmacro()
