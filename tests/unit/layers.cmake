# check_layers itself (cmake/check_layers.cmake): the same two objects fail when the lower
# layer calls up, and pass when each may use the other; so the checks of the real layers
# (check_layers_shim, check_layers_analyze) can fail.
add_library(layers_low OBJECT ${CMAKE_CURRENT_LIST_DIR}/layers/low.c)
add_library(layers_high OBJECT ${CMAKE_CURRENT_LIST_DIR}/layers/high.c)
foreach(case up ok)
  if(case STREQUAL "up")
    set(_spec "low||$<TARGET_OBJECTS:layers_low>\nhigh|low|$<TARGET_OBJECTS:layers_high>\n")
  else()
    set(_spec "low|high|$<TARGET_OBJECTS:layers_low>\nhigh|low|$<TARGET_OBJECTS:layers_high>\n")
  endif()
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/layers/selftest_${case}.txt CONTENT "${_spec}")
  add_test(NAME check_layers_selftest_${case}
           COMMAND ${CMAKE_COMMAND} -DNM=${MEMSHIM_NM}
                   -DSPEC=${CMAKE_BINARY_DIR}/layers/selftest_${case}.txt
                   -P ${CMAKE_SOURCE_DIR}/cmake/check_layers.cmake)
  set_tests_properties(check_layers_selftest_${case} PROPERTIES LABELS "unit;layers")
endforeach()
# The lower layer calling up must fail, and name the symbol.
set_tests_properties(check_layers_selftest_up PROPERTIES
                     PASS_REGULAR_EXPRESSION "low/low.c.o uses layers_high from high")
