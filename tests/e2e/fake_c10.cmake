# shim/hooks/torch_alloc.c without PyTorch: tests/e2e/fake_c10 is a libc10_cuda.so with the same
# exported allocator object and layouts; bench_tensor_hook drives it as PyTorch's callers do.
find_package(Python3 COMPONENTS Interpreter)
if(NOT (Python3_Interpreter_FOUND AND TARGET memshim AND TARGET memshim-analyze
        AND TARGET simcuda_cudart))
  return()
endif()
add_library(fake_c10_cuda SHARED ${CMAKE_CURRENT_LIST_DIR}/fake_c10/fake_c10_cuda.c)
target_link_libraries(fake_c10_cuda PRIVATE simcuda_headers simcuda_cudart)
set_target_properties(fake_c10_cuda PROPERTIES OUTPUT_NAME c10_cuda C_VISIBILITY_PRESET hidden
                      LIBRARY_OUTPUT_DIRECTORY ${MEMSHIM_TEST_DIR}/fake_c10)
memshim_script_test(NAME e2e_torch_alloc_fake
                    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_alloc_check.py
                            $<TARGET_FILE:bench_tensor_hook> $<TARGET_FILE:memshim>
                            $<TARGET_FILE:fake_c10_cuda> $<TARGET_FILE:memshim-analyze>)
