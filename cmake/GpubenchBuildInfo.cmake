# Generates build_info.cpp at every build (not only at configure time) so the recorded git revision is never stale;
# the file is rewritten only when its content changes, so an unchanged tree relinks nothing.
set(GPUBENCH_BUILD_INFO_CPP "${CMAKE_BINARY_DIR}/generated/build_info.cpp")
add_custom_target(gpubench_build_info_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${GPUBENCH_BUILD_INFO_CPP}
          -DVERSION=${PROJECT_VERSION}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          -DCOMPILER=${CMAKE_CXX_COMPILER_ID}-${CMAKE_CXX_COMPILER_VERSION}
          -DCUDA_MODULE=${GPUBENCH_WITH_CUDA}
          -DTORCH_VERSION=${Torch_VERSION}
          -DTORCH_KIND=${GPUBENCH_TORCH_KIND}
          -P ${CMAKE_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${GPUBENCH_BUILD_INFO_CPP}
  COMMENT "Recording gpubench build info"
  VERBATIM)
