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

# The same comparison on many small buffers (spill-prog smallbufs, tests/e2e/spill.cmake): every
# allocation a block in a chunk, and chunks spilled whole by the shim and by the replay.
if(Python3_FOUND AND TARGET spill-prog AND TARGET memshim)
  memshim_script_test(NAME e2e_whatif_smallbufs LABELS spill
                      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/whatif_mlp_check.py
                              smallbufs $<TARGET_FILE:spill-prog>)
  set_tests_properties(e2e_whatif_smallbufs PROPERTIES REQUIRED_FILES
                       "${MEMSHIM_BIN_DIR}/memshim-analyze;${MEMSHIM_LIB_DIR}/libmemshim.so")
endif()
