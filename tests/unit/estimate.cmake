# memshim-analyze estimate: golden numbers from the ZeRO and Korthikanti papers, config files,
# and the command as users call it.
memshim_criterion_test(NAME test_estimate_model
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_estimate_model.c
                       LIBS memshim_analyze)
memshim_criterion_test(NAME test_estimate_config
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_estimate_config.c
                       LIBS memshim_analyze)
memshim_criterion_test(NAME test_estimate_command
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_estimate_command.c ${CMAKE_CURRENT_LIST_DIR}/cli_capture.c
                       LIBS memshim_analyze memshim_tracegen)
memshim_criterion_test(NAME test_estimate_table
                       SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_estimate_table.c ${CMAKE_CURRENT_LIST_DIR}/cli_capture.c
                       LIBS memshim_analyze)
