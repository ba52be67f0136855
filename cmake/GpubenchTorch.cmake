# LibTorch, and gpubench's CUDA module behind one option.
#
# GPUBENCH_CUDA=ON|OFF|AUTO (default AUTO). The CUDA module is everything that needs the CUDA toolkit: gpubench's own
# kernels (fused training operations, FP8, the decode step, the crop kernel), cuBLASLt epilogues, nvJPEG, CUDA graphs,
# CUDA events, the caching allocator's statistics and NCCL. AUTO builds it when LibTorch is a CUDA build and nvcc is
# found (CUDACXX, PATH, /usr/local/cuda); OFF builds no .cu file and includes no CUDA header, and a run that asks for one
# of the module's options is refused (exit 2, "this build has no CUDA support").
#
# PyPI's torch wheel is a CUDA build, and its CMake config (Caffe2's public/cuda.cmake) stops when it finds no CUDA
# toolkit. Without the module gpubench does not need it: it links the wheel's CPU side (libtorch_cpu, libc10) as
# imported libraries of its own, with the include folders and definitions TorchConfig.cmake would give. Such a build
# trains on the CPU; NVIDIA GPUs need the module. A LibTorch that is not a CUDA build (ROCm, XPU, Apple's, a CPU zip)
# goes through find_package(Torch) as usual and keeps its own device libraries.
#
# Sets: GPUBENCH_TORCH_TARGET (what the engine links), GPUBENCH_WITH_CUDA, GPUBENCH_TORCH_KIND (CUDA, ROCM, XPU or
# CPU: which device libraries the LibTorch has), Torch_VERSION.

set(GPUBENCH_CUDA AUTO CACHE STRING "gpubench's CUDA module: AUTO (when LibTorch has CUDA and nvcc is found), ON, OFF")
set_property(CACHE GPUBENCH_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${GPUBENCH_CUDA}" _gpubench_cuda)
if(NOT _gpubench_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "GPUBENCH_CUDA is '${GPUBENCH_CUDA}': say AUTO, ON or OFF")
endif()

# LibTorch's root from its CMake config: CMAKE_PREFIX_PATH (python -c 'import torch; print(torch.utils.cmake_prefix_path)'
# gives .../torch/share/cmake), Torch_DIR, or a LibTorch zip's root.
find_path(GPUBENCH_TORCH_CMAKE_DIR TorchConfig.cmake HINTS ${Torch_DIR} PATH_SUFFIXES Torch share/cmake/Torch)
if(NOT GPUBENCH_TORCH_CMAKE_DIR)
  message(FATAL_ERROR "LibTorch not found: point CMAKE_PREFIX_PATH at it (python3 -c 'import torch; "
                      "print(torch.utils.cmake_prefix_path)' for a pip torch), or run scripts/bootstrap.sh")
endif()
get_filename_component(GPUBENCH_TORCH_ROOT "${GPUBENCH_TORCH_CMAKE_DIR}/../../.." ABSOLUTE)

# What kind of LibTorch it is, from the device libraries it ships.
set(GPUBENCH_TORCH_KIND CPU)
foreach(_kind CUDA HIP XPU)
  string(TOLOWER ${_kind} _lib)
  file(GLOB _found "${GPUBENCH_TORCH_ROOT}/lib/libtorch_${_lib}.*" "${GPUBENCH_TORCH_ROOT}/lib/torch_${_lib}.*")
  if(_found)
    set(GPUBENCH_TORCH_KIND ${_kind})
    break()
  endif()
endforeach()
if(GPUBENCH_TORCH_KIND STREQUAL HIP)
  set(GPUBENCH_TORCH_KIND ROCM)
endif()

set(GPUBENCH_WITH_CUDA OFF)
if(GPUBENCH_TORCH_KIND STREQUAL CUDA AND NOT _gpubench_cuda STREQUAL OFF)
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(GPUBENCH_WITH_CUDA ON)
  elseif(_gpubench_cuda STREQUAL ON)
    message(FATAL_ERROR "GPUBENCH_CUDA=ON but no CUDA toolkit (nvcc) was found: install it, set CUDACXX, or "
                        "configure with -DGPUBENCH_CUDA=OFF (a build that trains on the CPU)")
  else()
    message(STATUS "gpubench: no CUDA toolkit (nvcc) found: building without the CUDA module (GPUBENCH_CUDA=AUTO)")
  endif()
elseif(_gpubench_cuda STREQUAL ON)
  message(FATAL_ERROR "GPUBENCH_CUDA=ON needs a CUDA build of LibTorch; the one at ${GPUBENCH_TORCH_ROOT} is a "
                      "${GPUBENCH_TORCH_KIND} build")
endif()

if(GPUBENCH_WITH_CUDA OR NOT GPUBENCH_TORCH_KIND STREQUAL CUDA)
  find_package(Torch REQUIRED)
  # LibTorch's config adds -gencode flags of its own (TORCH_CUDA_ARCH_LIST, or the GPU it sees): gpubench's kernels
  # are built for GPUBENCH_CUDA_ARCHITECTURES only.
  string(REGEX REPLACE "-gencode[ =]arch=compute_[0-9]+a?,code=[^ ]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
  set(GPUBENCH_TORCH_TARGET torch)
else()
  include("${GPUBENCH_TORCH_CMAKE_DIR}/TorchConfigVersion.cmake")
  set(Torch_VERSION "${PACKAGE_VERSION}")
  find_library(GPUBENCH_TORCH_CPU_LIBRARY torch_cpu PATHS "${GPUBENCH_TORCH_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
  find_library(GPUBENCH_C10_LIBRARY c10 PATHS "${GPUBENCH_TORCH_ROOT}/lib" NO_DEFAULT_PATH REQUIRED)
  # torch_cpu's own definitions (USE_DISTRIBUTED, USE_C10D_GLOO, ...), as its exported target would carry them.
  set(_definitions "")
  file(READ "${GPUBENCH_TORCH_ROOT}/share/cmake/Caffe2/Caffe2Targets.cmake" _targets)
  if(_targets MATCHES "set_target_properties\\(torch_cpu PROPERTIES[^)]*INTERFACE_COMPILE_DEFINITIONS \"([^\"]*)\"")
    set(_definitions "${CMAKE_MATCH_1}")
  endif()
  add_library(gpubench_torch_cpu INTERFACE)
  target_include_directories(gpubench_torch_cpu SYSTEM INTERFACE "${GPUBENCH_TORCH_ROOT}/include"
                             "${GPUBENCH_TORCH_ROOT}/include/torch/csrc/api/include")
  target_compile_definitions(gpubench_torch_cpu INTERFACE ${_definitions})
  # --no-as-needed: torch_cpu registers its operators from static initialisers; nothing may drop it.
  target_link_libraries(gpubench_torch_cpu INTERFACE "-Wl,--no-as-needed" "${GPUBENCH_TORCH_CPU_LIBRARY}"
                        "${GPUBENCH_C10_LIBRARY}" "-Wl,--as-needed")
  # The wheel's torch_cpu needs the CUDA runtime and CUPTI libraries of the nvidia-* wheels at load time (its RPATH
  # finds them); the linker resolves them the same way.
  target_link_options(gpubench_torch_cpu INTERFACE "LINKER:-rpath,${GPUBENCH_TORCH_ROOT}/lib")
  add_library(gpubench::torch_cpu ALIAS gpubench_torch_cpu)
  set(GPUBENCH_TORCH_TARGET gpubench::torch_cpu)
endif()

if(GPUBENCH_WITH_CUDA)
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)  # the same libcudart LibTorch uses
  enable_language(CUDA)
  # CMake 3.25 (Debian 12's) knows nvcc's C++17 but not its C++20 flag (nvcc has it since CUDA 12).
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  # A pip wheel's libtorch_cuda needs the libraries of its nvidia-* wheels (NCCL, cuDNN, cuBLAS, ...). Its RPATH finds
  # them when the program runs; the linker is pointed at them first, or it takes what the CUDA toolkit's lib folder
  # holds (CMake puts that on the link line): an older NCCL there left 2.15's libtorch_cuda with undefined symbols.
  file(GLOB _gpubench_wheel_libs LIST_DIRECTORIES true "${GPUBENCH_TORCH_ROOT}/../nvidia/*/lib")
  if(_gpubench_wheel_libs)
    list(JOIN _gpubench_wheel_libs ":" _gpubench_wheel_libs)
    add_link_options("LINKER:-rpath-link,${_gpubench_wheel_libs}")
  endif()
endif()
