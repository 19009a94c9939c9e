# bench_tensor_hook: added ns per tensor through PyTorch's allocator interface (tests/e2e/fake_c10).
if(TARGET simcuda_cudart AND TARGET fake_c10_cuda)
  add_executable(bench_tensor_hook ${CMAKE_CURRENT_LIST_DIR}/bench_tensor_hook.c)
  target_link_libraries(bench_tensor_hook PRIVATE simcuda_headers simcuda_cudart ${CMAKE_DL_LIBS})
  add_dependencies(bench_tensor_hook memshim fake_c10_cuda)
endif()
