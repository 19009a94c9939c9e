# memshim-analyze whatif on the example trainer's real traces (whatif_mlp_check.py says what).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_whatif_mlp
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/whatif_mlp_check.py plan)
  set_tests_properties(e2e_whatif_mlp PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()

# The replay of the shim's own policy against what the spill policy actually moved at the same
# ceilings (within the factor whatif_mlp_check.py states).
if(Python3_FOUND AND TARGET mlp-train-sim AND TARGET memshim)
  memshim_script_test(NAME e2e_whatif_spill LABELS spill
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/whatif_mlp_check.py spill)
  set_tests_properties(e2e_whatif_spill PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_BIN_DIR}/mlp-train-sim;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()
