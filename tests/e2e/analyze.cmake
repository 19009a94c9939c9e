# memshim-analyze end to end: the real binary on synthetic traces (summary text against a
# golden report, --json against hand-computed numbers, dump, damaged traces, ranks).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
  memshim_script_test(NAME e2e_analyze
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/analyze_check.py)
  set_tests_properties(e2e_analyze PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_TEST_DIR}/memshim-tracegen")
endif()

# The same on real traces: the example trainer under the shim on simcuda. File:line checks need
# an analyzer built with libdw.
get_target_property(ANALYZE_DEFINITIONS analyze_input INTERFACE_COMPILE_DEFINITIONS)
set(ANALYZE_LINES_ENV "MEMSHIM_ANALYZE_LINES=0")
if("MEMSHIM_HAVE_LIBDW=1" IN_LIST ANALYZE_DEFINITIONS)
  set(ANALYZE_LINES_ENV "MEMSHIM_ANALYZE_LINES=1")
endif()
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_analyze_mlp ENV ${ANALYZE_LINES_ENV}
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

# Tests whose real consumer is a Python library (pandas, torch) that CI does not install: they
# use the interpreter named here, or $MEMSHIM_TORCH_PYTHON, and skip (77) without it.
set(TORCH_PY_ENV)
if(MEMSHIM_TORCH_PYTHON)
  set(TORCH_PY_ENV "MEMSHIM_TORCH_PYTHON=${MEMSHIM_TORCH_PYTHON}")
endif()
if(Python3_FOUND)
  memshim_script_test(NAME e2e_estimate_table_pandas LABELS torch ENV ${TORCH_PY_ENV}
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/estimate_table_check.py)
  set_tests_properties(e2e_estimate_table_pandas PROPERTIES SKIP_RETURN_CODE 77 REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze")
endif()

# Categories without tags: the trainer's --no-tags run against its tagged run, allocation by
# allocation, and the user's rules file (precedence, .symtab symbols, unused rules).
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_categories_mlp
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/categories_mlp_check.py)
  set_tests_properties(e2e_categories_mlp PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()
