# pystack_bench: what MEMSHIM_PY_STACKS adds to a captured allocation, measured in a Python
# process (bench/pystack_bench.py libpystack_bench.so prints ns per capture).
add_library(pystack_bench MODULE ${CMAKE_CURRENT_LIST_DIR}/pystack_bench.c)
target_link_libraries(pystack_bench PRIVATE shim_core)
set_target_properties(pystack_bench PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${MEMSHIM_BIN_DIR})

find_package(Python3 COMPONENTS Interpreter)
if(MEMSHIM_WITH_TESTS AND Python3_Interpreter_FOUND)
  # A short run that only checks the benchmark works; it asserts nothing about time. Not under
  # sanitizers: the instrumented library needs its runtime preloaded into the interpreter
  # (e2e_pystack_* do that and run the same code), and its timings mean nothing.
  add_test(NAME bench_pystack_smoke
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pystack_bench.py
                   $<TARGET_FILE:pystack_bench> --calls 1000 --rounds 1 --depths 3,30)
  set_tests_properties(bench_pystack_smoke PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                       ENVIRONMENT "${MEMSHIM_TEST_ENV}")
  # A worker thread without the GIL, named as PyTorch's autograd threads, names the Python line
  # that called the function its lender waits in (shim/core/pyborrow.h), read raw.
  add_test(NAME pystack_borrowed_frames
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pystack_bench.py
                   $<TARGET_FILE:pystack_bench> --calls 100 --rounds 1 --depths 3 --check-borrow)
  set_tests_properties(pystack_borrowed_frames PROPERTIES LABELS "bench;nosan" TIMEOUT 120
                       ENVIRONMENT "${MEMSHIM_TEST_ENV}")
endif()
