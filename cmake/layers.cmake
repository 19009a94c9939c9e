# The layering of both programs, checked at build time and as a test (check_layers.cmake).
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(_nm_names gcc-nm-${CMAKE_C_COMPILER_VERSION_MAJOR} gcc-nm)
elseif(CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(_nm_names llvm-nm-${CMAKE_C_COMPILER_VERSION_MAJOR} llvm-nm)
endif()
# The compiler's own nm reads its link-time-optimisation objects.
find_program(MEMSHIM_NM NAMES ${_nm_names} nm)

# memshim_layers(NAME n LAYERS "layer|targets it may use|its target" ...): writes the spec,
# checks it whenever one of the libraries changes (a call upward fails the build) and
# registers the test check_layers_<n>.
function(memshim_layers)
  cmake_parse_arguments(L "" "NAME" "LAYERS" ${ARGN})
  set(spec "")
  set(libs)
  foreach(entry ${L_LAYERS})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 name)
    list(GET parts 1 uses)
    list(GET parts 2 target)
    string(APPEND spec "${name}|${uses}|$<TARGET_OBJECTS:${target}>\n")
    list(APPEND libs ${target})
  endforeach()
  set(spec_file ${CMAKE_BINARY_DIR}/layers/${L_NAME}.txt)
  file(GENERATE OUTPUT ${spec_file} CONTENT "${spec}")
  set(cmd ${CMAKE_COMMAND} -DNM=${MEMSHIM_NM} -DSPEC=${spec_file} -P
      ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/layers/${L_NAME}.ok
                     COMMAND ${cmd}
                     COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/layers/${L_NAME}.ok
                     DEPENDS ${libs} ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake
                     COMMENT "Checking the direction of calls in ${L_NAME}" VERBATIM)
  add_custom_target(check_layers_${L_NAME} ALL DEPENDS ${CMAKE_BINARY_DIR}/layers/${L_NAME}.ok)
  if(MEMSHIM_WITH_TESTS)
    add_test(NAME check_layers_${L_NAME} COMMAND ${cmd})
    set_tests_properties(check_layers_${L_NAME} PROPERTIES LABELS "unit;layers")
  endif()
endfunction()
