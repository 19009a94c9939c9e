# examples/mlp/memshim.rules against the trainer's kernels as simcuda runs them: every parameter
# it declares read-only is left unchanged, every other pointer parameter is written.
if(TARGET mlp-train-sim)
  memshim_criterion_test(NAME test_mlp_readonly
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_mlp_readonly.c
    LIBS shim_core simcuda_headers m)
  target_include_directories(test_mlp_readonly PRIVATE ${CMAKE_SOURCE_DIR}/examples/mlp)
  target_compile_definitions(test_mlp_readonly PRIVATE
    MLP_RULES_FILE="${CMAKE_SOURCE_DIR}/examples/mlp/memshim.rules")
endif()
