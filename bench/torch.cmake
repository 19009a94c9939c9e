# torch_overhead.py: CPU time per step of examples/pytorch/train.py on simcuda (no-op kernels),
# bare and under the shim, and the trace's bytes per step and per launch. Needs the torch
# interpreter of the torch tests (MEMSHIM_TORCH_PYTHON, tests/CMakeLists.txt).
find_package(Python3 COMPONENTS Interpreter)
if(TARGET memshim AND TARGET simcuda_cudart AND Python3_Interpreter_FOUND AND MEMSHIM_TORCH_PYTHON
   AND EXISTS ${MEMSHIM_TORCH_PYTHON})
  add_custom_target(bench_torch_overhead
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_overhead.py ${CMAKE_BINARY_DIR}
            ${MEMSHIM_TORCH_PYTHON}
    DEPENDS memshim simcuda_cudart simcuda_cublas simcuda_cublaslt USES_TERMINAL)
endif()

# torch_ceiling.py: the GPT under MEMSHIM_POLICY=spill at 50% (default caching allocator) and
# at 50% and 30% (cudaMallocAsync) of its peak: spill traffic against whatif's MIN, by the run's
# RESIDENCY records and by whatif's replay.
if(TARGET memshim AND TARGET memshim-analyze AND TARGET simcuda_cudart AND Python3_Interpreter_FOUND
   AND MEMSHIM_TORCH_PYTHON AND EXISTS ${MEMSHIM_TORCH_PYTHON})
  add_custom_target(bench_torch_ceiling
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_ceiling.py ${CMAKE_BINARY_DIR}
            ${MEMSHIM_TORCH_PYTHON}
    DEPENDS memshim memshim-analyze simcuda_cudart simcuda_cublas simcuda_cublaslt USES_TERMINAL)
endif()
