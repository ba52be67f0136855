# gpubench_set_warnings(target): the warning set every gpubench target compiles with (C++ sources only: nvcc's
# generated host code does not take them).
function(gpubench_set_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    # Not -Wmissing-field-initializers: aggregates here leave members with default initialisers out on purpose, and
    # GCC warns of each in C++20.
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wnon-virtual-dtor
                                                                       -Wno-missing-field-initializers>)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wshadow=local>)
      # GCC 12 in C++20 warns of an overlapping or oversized memcpy inside std::string's operator+ (GCC bugs 105651
      # and 105329, false positives fixed in GCC 13).
      if(CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict -Wno-stringop-overflow>)
      endif()
    endif()
    if(GPUBENCH_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
    endif()
  endif()
endfunction()
