# mst_layout.py: the trace layout the Python checkers read traces with (shim_trace.py), generated
# from include/memshim/trace_format.h at build time, never kept by hand.
add_executable(gen_trace_layout ${CMAKE_CURRENT_LIST_DIR}/gen_trace_layout.c)
target_link_libraries(gen_trace_layout PRIVATE memshim_headers)
set_target_properties(gen_trace_layout PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
add_custom_command(OUTPUT ${MEMSHIM_TEST_DIR}/mst_layout.py
                   COMMAND gen_trace_layout ${MEMSHIM_TEST_DIR}/mst_layout.py
                   DEPENDS gen_trace_layout
                   COMMENT "Generating the trace layout for the Python checkers")
add_custom_target(mst_layout ALL DEPENDS ${MEMSHIM_TEST_DIR}/mst_layout.py)
