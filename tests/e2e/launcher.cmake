# build/bin/memshim, the launcher generated from scripts/memshim.in.
if(TARGET mlp-train-sim AND TARGET memshim-analyze)
  # nosan: it preloads the shim into /bin/sh, which the sanitizer runtimes are not built for.
  memshim_script_test(NAME launcher LABELS nosan
                      COMMAND ${CMAKE_CURRENT_LIST_DIR}/launcher_check.sh ${MEMSHIM_BIN_DIR}/memshim
                              $<TARGET_FILE:memshim-analyze> $<TARGET_FILE:mlp-train-sim>
                              ${MEMSHIM_TEST_DIR}/launcher)
endif()
