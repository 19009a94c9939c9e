# remat_bench.py: the example trainer with its readonly rules at 50% and 30% of its natural peak
# under MEMSHIM_POLICY=auto (measured costs and a forced fast GEMM), recompute and spill: bytes
# moved and GEMM FLOPs replayed per step against memshim-analyze whatif's MIN and auto replay of
# the same trace, as ratios. `cmake --build <dir> --target bench_remat`; not a test.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET mlp-train-sim AND TARGET memshim AND TARGET memshim-analyze AND Python3_Interpreter_FOUND)
  add_custom_target(bench_remat
    COMMAND ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${MEMSHIM_SIM_DIR}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/remat_bench.py
            --shim $<TARGET_FILE:memshim> --mlp $<TARGET_FILE:mlp-train-sim>
            --analyze $<TARGET_FILE:memshim-analyze>
            --rules ${CMAKE_SOURCE_DIR}/examples/mlp/memshim.rules --percent 50,30
    DEPENDS memshim mlp-train-sim memshim-analyze USES_TERMINAL)
endif()
