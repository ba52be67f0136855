# Compiles data files from configs/ into the binary (as C++ raw string literals), so an installed or copied gpubench
# needs no data directory. Re-run automatically when an embedded file changes.
function(gpubench_embed_text OUT_CPP SYMBOL FILE)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${FILE}")
  file(READ "${FILE}" GPUBENCH_EMBED_CONTENT)
  set(GPUBENCH_EMBED_SYMBOL "${SYMBOL}")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/embedded_text.cpp.in" "${OUT_CPP}" @ONLY)
endfunction()

# Several YAML files as one multi-document stream ("--- # file" before each), sorted by name.
function(gpubench_embed_yaml_documents OUT_CPP SYMBOL)
  set(files ${ARGN})
  list(SORT files)
  set(GPUBENCH_EMBED_CONTENT "")
  foreach(f IN LISTS files)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${f}")
    file(READ "${f}" text)
    get_filename_component(name "${f}" NAME)
    string(APPEND GPUBENCH_EMBED_CONTENT "--- # ${name}\n${text}\n")
  endforeach()
  set(GPUBENCH_EMBED_SYMBOL "${SYMBOL}")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/embedded_text.cpp.in" "${OUT_CPP}" @ONLY)
endfunction()
