# Charts, exports and diff of memshim-analyze (analyze/util/{svg,pickle}.c, analyze/report/
# {timeline,diff}.c, analyze/export/).
memshim_criterion_test(NAME test_viz_pickle
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_viz_pickle.c
                       LIBS memshim_analyze)
memshim_criterion_test(NAME test_viz_svg
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_viz_svg.c
                       LIBS memshim_analyze)

# The hand-made trace the report tests work from (uses analyze's trace generator).
add_library(memshim_viz_scenario STATIC ${CMAKE_CURRENT_LIST_DIR}/viz_scenario.c)
target_include_directories(memshim_viz_scenario PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(memshim_viz_scenario PUBLIC memshim_tracegen)

foreach(t export diff timeline)
  memshim_criterion_test(NAME test_viz_${t}
                         SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_viz_${t}.c
                         LIBS memshim_analyze memshim_viz_scenario)
endforeach()
