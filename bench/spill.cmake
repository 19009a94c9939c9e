# spill_bench.py: the example trainer's step time under MEMSHIM_POLICY=spill at 50% and 30% of
# its natural peak against the unconstrained run, and the bytes moved per step, on simcuda.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET mlp-train-sim AND TARGET memshim AND Python3_Interpreter_FOUND)
  add_custom_target(bench_spill
    COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${MEMSHIM_SIM_DIR}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/spill_bench.py
            --shim $<TARGET_FILE:memshim> --mlp $<TARGET_FILE:mlp-train-sim>
    DEPENDS memshim mlp-train-sim USES_TERMINAL)
  if(MEMSHIM_WITH_TESTS)
    # Only checks that the benchmark runs; asserts nothing about time.
    add_test(NAME bench_spill_smoke
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/spill_bench.py
                     --shim $<TARGET_FILE:memshim> --mlp $<TARGET_FILE:mlp-train-sim>
                     --steps 3 --repeat 1 --quick)
    set_tests_properties(bench_spill_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 600
                         ENVIRONMENT "${MEMSHIM_TEST_ENV}")
  endif()
endif()
