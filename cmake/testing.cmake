# Test helpers shared by every tests/*/<area>.cmake file.
find_library(CRITERION_LIBRARY criterion)
find_path(CRITERION_INCLUDE_DIR criterion/criterion.h)

# Environment every test runs with: the simulated stack on the library path, nothing preloaded.
set(MEMSHIM_TEST_ENV
    "LD_LIBRARY_PATH=${MEMSHIM_SIM_DIR}"
    "MEMSHIM_BUILD_DIR=${CMAKE_BINARY_DIR}"
    "MEMSHIM_SOURCE_DIR=${CMAKE_SOURCE_DIR}"
    "SIMCUDA_DEVICE_MEMORY=16g")
if(MEMSHIM_SANITIZE)
  # The shim is preloaded into sanitized programs; ASan's link-order check would refuse that.
  list(APPEND MEMSHIM_TEST_ENV
       "ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0:allow_user_segv_handler=1:handle_segv=0"
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

# memshim_criterion_test(NAME n SOURCES a.c b.c [LIBS l...] [ENV K=V...] [LABELS ...])
function(memshim_criterion_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;ENV;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
  target_include_directories(${T_NAME} PRIVATE ${CRITERION_INCLUDE_DIR})
  target_link_libraries(${T_NAME} PRIVATE ${CRITERION_LIBRARY} ${T_LIBS})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --jobs 1)
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${MEMSHIM_TEST_ENV};${T_ENV}"
                                            LABELS "unit;${T_LABELS}" TIMEOUT 300)
endfunction()

# memshim_script_test(NAME n COMMAND cmd... [ENV K=V...] [LABELS ...] [DEPENDS targets])
function(memshim_script_test)
  cmake_parse_arguments(T "" "NAME" "COMMAND;ENV;LABELS" ${ARGN})
  add_test(NAME ${T_NAME} COMMAND ${T_COMMAND})
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${MEMSHIM_TEST_ENV};${T_ENV}"
                                            LABELS "e2e;${T_LABELS}" TIMEOUT 600)
endfunction()
