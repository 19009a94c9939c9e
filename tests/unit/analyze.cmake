# memshim-analyze unit tests, and the synthetic trace generator shared with the viz tests,
# the e2e scripts, the fuzz corpus and the benchmark.
add_library(memshim_tracegen STATIC ${CMAKE_CURRENT_LIST_DIR}/tracegen.c)
target_include_directories(memshim_tracegen PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(memshim_tracegen PUBLIC memshim_headers)

add_executable(memshim-tracegen ${CMAKE_CURRENT_LIST_DIR}/tracegen_main.c)
target_link_libraries(memshim-tracegen PRIVATE memshim_tracegen)
set_target_properties(memshim-tracegen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})

foreach(t reader model refine symbolize json merge lines tensors)
  memshim_criterion_test(NAME test_analyze_${t}
                         SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_analyze_${t}.c
                         LIBS memshim_analyze memshim_tracegen)
endforeach()

memshim_criterion_test(NAME test_analyze_cli
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_analyze_cli.c ${CMAKE_CURRENT_LIST_DIR}/cli_capture.c
                       LIBS memshim_analyze memshim_tracegen)
memshim_criterion_test(NAME test_analyze_runs
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_analyze_runs.c ${CMAKE_CURRENT_LIST_DIR}/cli_capture.c
                       LIBS memshim_analyze memshim_tracegen)
