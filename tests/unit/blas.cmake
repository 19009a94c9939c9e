# cuBLAS hooks: operand extents, the cuBLASLt descriptor side table and the registry
# category change behind workspace retags, linked against the hooks layer
# without CUDA.
memshim_criterion_test(NAME test_blas_parts
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_blas_parts.c
  LIBS shim_hooks)
