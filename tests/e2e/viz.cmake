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

# The exports in their real consumers (pandas, torch.cuda._memory_viz): skipped (77) without an
# interpreter that has them; MEMSHIM_TORCH_PYTHON (tests/e2e/analyze.cmake) names one.
if(MEMSHIM_PYTHON3 AND TARGET mlp-train-sim AND TARGET memshim)
  set(VIEWERS_ENV)
  if(MEMSHIM_TORCH_PYTHON)
    set(VIEWERS_ENV "MEMSHIM_TORCH_PYTHON=${MEMSHIM_TORCH_PYTHON}")
  endif()
  memshim_script_test(NAME e2e_viewers LABELS torch ENV ${VIEWERS_ENV}
    COMMAND ${MEMSHIM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/viewers_check.py
            $<TARGET_FILE:memshim-viz-scenario>)
  set_tests_properties(e2e_viewers PROPERTIES SKIP_RETURN_CODE 77)
endif()

# The timeline page in headless Chromium (zoom buttons, readout under the peak ring); skipped
# (77) where Chromium is not installed, which scripts/setup.sh does not do.
if(MEMSHIM_PYTHON3)
  memshim_script_test(NAME e2e_timeline_browser
    COMMAND ${MEMSHIM_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/timeline_browser_check.py
            $<TARGET_FILE:memshim-analyze> $<TARGET_FILE:memshim-tracegen>
            ${CMAKE_CURRENT_BINARY_DIR}/e2e_timeline_browser)
  set_tests_properties(e2e_timeline_browser PROPERTIES SKIP_RETURN_CODE 77)
endif()
