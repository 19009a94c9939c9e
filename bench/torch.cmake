# torch_overhead.py: CPU time per step of examples/pytorch/train.py on simcuda (no-op kernels),
# bare and under the shim, and the trace's bytes per step and per launch. torch_perf.py: the
# shim's own CPU time per step of the same training, sampled with perf (long run minus short
# run): steadier than CPU time, and it sees prefetching, which callgrind does not. Both need the
# torch interpreter of the torch tests (MEMSHIM_TORCH_PYTHON, tests/CMakeLists.txt).
find_package(Python3 COMPONENTS Interpreter)
if(TARGET memshim AND TARGET simcuda_cudart AND Python3_Interpreter_FOUND AND MEMSHIM_TORCH_PYTHON
   AND EXISTS ${MEMSHIM_TORCH_PYTHON})
  foreach(bench overhead perf)
    add_custom_target(bench_torch_${bench}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_${bench}.py ${CMAKE_BINARY_DIR}
              ${MEMSHIM_TORCH_PYTHON}
      DEPENDS memshim simcuda_cudart simcuda_cublas simcuda_cublaslt USES_TERMINAL)
  endforeach()
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

# torch_callgrind.py: the same step counted in instructions (callgrind, only the chosen steps:
# callgrind_steps.c's client requests), stable where CPU time on a shared machine is not.
include(CheckIncludeFile)
check_include_file(valgrind/callgrind.h MEMSHIM_HAVE_CALLGRIND_H)
if(MEMSHIM_HAVE_CALLGRIND_H AND TARGET memshim AND TARGET simcuda_cudart
   AND Python3_Interpreter_FOUND AND MEMSHIM_TORCH_PYTHON AND EXISTS ${MEMSHIM_TORCH_PYTHON})
  add_library(callgrind_steps MODULE ${CMAKE_CURRENT_LIST_DIR}/callgrind_steps.c)
  set_target_properties(callgrind_steps PROPERTIES LIBRARY_OUTPUT_DIRECTORY
                                                   ${CMAKE_BINARY_DIR}/lib)
  add_custom_target(bench_torch_callgrind
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_callgrind.py ${CMAKE_BINARY_DIR}
            ${MEMSHIM_TORCH_PYTHON}
    DEPENDS memshim simcuda_cudart simcuda_cublas simcuda_cublaslt callgrind_steps USES_TERMINAL)
endif()
