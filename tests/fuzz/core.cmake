# libFuzzer targets for the shim's parsers (scripts/fuzz.sh runs them on
# tests/fuzz/corpus/{rules,options,costs,elfsym}). The parsers are compiled into each target so
# that they carry the fuzzer's coverage instrumentation.
if(MEMSHIM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(WARNING "MEMSHIM_FUZZ needs clang; the shim's fuzz targets are skipped")
  else()
    set(CORE_FUZZ_SOURCES_rules ${CMAKE_SOURCE_DIR}/shim/core/rules.c ${CMAKE_SOURCE_DIR}/shim/util/log.c)
    set(CORE_FUZZ_SOURCES_options ${CMAKE_SOURCE_DIR}/shim/core/options.c ${CMAKE_SOURCE_DIR}/shim/util/log.c
                                  ${CMAKE_SOURCE_DIR}/shim/util/secure_env.c
                                  ${CMAKE_SOURCE_DIR}/common/costs_parse.c)
    set(CORE_FUZZ_SOURCES_costs ${CMAKE_SOURCE_DIR}/common/costs_parse.c)
    set(CORE_FUZZ_SOURCES_elfsym ${CMAKE_SOURCE_DIR}/shim/util/elfsym.c
                                 ${CMAKE_SOURCE_DIR}/shim/util/elfsym_index.c)
    foreach(part rules options costs elfsym)
      add_executable(fuzz_${part} ${CMAKE_CURRENT_LIST_DIR}/fuzz_${part}.c ${CORE_FUZZ_SOURCES_${part}})
      target_include_directories(fuzz_${part} PRIVATE ${MEMSHIM_SHIM_INCLUDES})
      target_link_libraries(fuzz_${part} PRIVATE memshim_headers)
      target_compile_options(fuzz_${part} PRIVATE -fsanitize=fuzzer,address,undefined
                                                  -fno-sanitize-recover=undefined)
      target_link_options(fuzz_${part} PRIVATE -fsanitize=fuzzer,address,undefined)
      set_target_properties(fuzz_${part} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR})
    endforeach()
  endif()
endif()
