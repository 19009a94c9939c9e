# memshim-analyze end to end: the real binary on synthetic traces (summary text against a
# golden report, --json against hand-computed numbers, dump, damaged traces, ranks).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  memshim_script_test(NAME e2e_analyze
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/analyze_check.py)
  set_tests_properties(e2e_analyze PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_TEST_DIR}/memshim-tracegen")
endif()
