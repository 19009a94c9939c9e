# ceiling_bar.py: how close the shim comes at the ceiling to what `memshim-analyze whatif` says
# is possible: the smallest ceiling each policy completes at, against whatif's bound at the
# shim's charges, and the bytes spill moves at 50% and 30% of the trainer's peak, against
# whatif's MIN. Byte counts, deterministic on simcuda: the test fails when a bar is missed.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET mlp-train-sim AND TARGET memshim AND TARGET memshim-analyze AND Python3_Interpreter_FOUND)
  set(CEILING_BAR ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/ceiling_bar.py
      --shim $<TARGET_FILE:memshim> --mlp $<TARGET_FILE:mlp-train-sim>
      --analyze $<TARGET_FILE:memshim-analyze>
      --rules ${CMAKE_SOURCE_DIR}/examples/mlp/memshim.rules)
  add_custom_target(bench_ceiling
    COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${MEMSHIM_SIM_DIR} ${CEILING_BAR}
    DEPENDS memshim mlp-train-sim memshim-analyze USES_TERMINAL)
  if(MEMSHIM_WITH_TESTS)
    foreach(part fit traffic)
      add_test(NAME ceiling_bar_${part} COMMAND ${CEILING_BAR} --check ${part})
      set_tests_properties(ceiling_bar_${part} PROPERTIES LABELS "bench;nosan" TIMEOUT 1200
                           ENVIRONMENT "${MEMSHIM_TEST_ENV}")
    endforeach()
  endif()
endif()
