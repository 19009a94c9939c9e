# viz end to end: memshim-analyze timeline/export/diff on generated traces, checked with
# Python's own parsers (xml.etree, json, pickle + pickletools) by viz_check.py.
add_executable(memshim-viz-scenario ${CMAKE_CURRENT_LIST_DIR}/viz_scenario_main.c)
target_link_libraries(memshim-viz-scenario PRIVATE memshim_viz_scenario)
set_target_properties(memshim-viz-scenario PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})

# scripts/setup.sh installs python3; without it this one test is not registered.
find_program(MEMSHIM_PYTHON3 python3)
if(MEMSHIM_PYTHON3)
memshim_script_test(NAME e2e_viz
  COMMAND ${MEMSHIM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/viz_check.py
          --analyze $<TARGET_FILE:memshim-analyze>
          --tracegen $<TARGET_FILE:memshim-tracegen>
          --scenario $<TARGET_FILE:memshim-viz-scenario>
          --workdir ${CMAKE_CURRENT_BINARY_DIR}/e2e_viz)
endif()
