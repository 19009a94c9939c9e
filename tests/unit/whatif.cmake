# memshim-analyze whatif: traffic under hypothetical ceilings (MIN, LRU, the shim's policy).
memshim_criterion_test(NAME test_whatif
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_whatif.c ${CMAKE_CURRENT_LIST_DIR}/cli_capture.c
                       LIBS memshim_analyze memshim_tracegen)
memshim_criterion_test(NAME test_whatif_svg
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_whatif_svg.c
                       LIBS memshim_analyze)
