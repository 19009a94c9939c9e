# cuBLAS hooks (issue 3): operand extents, the cuBLASLt descriptor side table and the registry
# category change behind workspace retags, linked against memshim_core without CUDA.
memshim_criterion_test(NAME test_blas_parts
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_blas_parts.c
  LIBS memshim_core)
