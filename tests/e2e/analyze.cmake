# memshim-analyze end to end: the real binary on synthetic traces (summary text against a
# golden report, --json against hand-computed numbers, dump, damaged traces, ranks).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  memshim_script_test(NAME e2e_analyze
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/analyze_check.py)
  set_tests_properties(e2e_analyze PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_TEST_DIR}/memshim-tracegen")
endif()

# The same on real traces: the example trainer under the shim on simcuda.
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_analyze_mlp
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/analyze_mlp_check.py)
  set_tests_properties(e2e_analyze_mlp PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()

# estimate --trace: the textbook bytes per parameter against the trainer's measured ones.
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_estimate_mlp
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/estimate_mlp_check.py)
  set_tests_properties(e2e_estimate_mlp PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()

# Categories without tags: the trainer's --no-tags run against its tagged run, allocation by
# allocation, and the user's rules file (precedence, .symtab symbols, unused rules).
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_categories_mlp
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/categories_mlp_check.py)
  set_tests_properties(e2e_categories_mlp PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()
