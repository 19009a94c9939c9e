# viz: timeline, exports and diff of memshim-analyze (analyze/{svg,pickle,timeline,export*,diff}.c).
memshim_criterion_test(NAME test_viz_pickle
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_viz_pickle.c
                       LIBS memshim_analyze)
memshim_criterion_test(NAME test_viz_svg
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_viz_svg.c
                       LIBS memshim_analyze)
