# Python frames (MEMSHIM_PY_STACKS) without an interpreter: the shim's side degrades, the
# analyzer names flagged frames. The interpreter side is tests/e2e/pystack.cmake.
memshim_criterion_test(NAME test_core_pystack
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_core_pystack.c LIBS shim_core)
memshim_criterion_test(NAME test_analyze_pyframes
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_analyze_pyframes.c
                       LIBS memshim_analyze memshim_tracegen)
