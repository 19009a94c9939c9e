# tests/gpu/run.sh, the real-GPU check, and examples/pytorch/train.py on the CPU.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "gpu: no Python 3 interpreter, tests/gpu/run.sh and train.py are not registered")
  return()
endif()
get_filename_component(GPU_CUDA_HOME "${CUDAToolkit_BIN_DIR}" DIRECTORY)
set(GPU_RUN bash ${CMAKE_SOURCE_DIR}/tests/gpu/run.sh)
set(GPU_ENV "PYTHON=${Python3_EXECUTABLE}" "CUDA_HOME=${GPU_CUDA_HOME}")

# On a machine with a GPU this is the whole check (it builds its own copy, under 8 minutes);
# elsewhere it exits 77 and ctest reports it skipped.
memshim_script_test(NAME gpu_run COMMAND ${GPU_RUN} LABELS gpu
                    ENV ${GPU_ENV} "OUT=${MEMSHIM_TEST_DIR}/gpu-run")
set_tests_properties(gpu_run PROPERTIES SKIP_RETURN_CODE 77)

# The same script on simcuda with this build: the probe (shared cudart) and mlp-train-sim, so
# that its checks and parsing are exercised without a GPU.
if(TARGET mlp-train-sim)
  memshim_script_test(NAME gpu_run_sim COMMAND ${GPU_RUN} LABELS gpu
                      ENV ${GPU_ENV} "OUT=${MEMSHIM_TEST_DIR}/gpu-run-sim" "MEMSHIM_GPU_SIM=1"
                          "MEMSHIM_GPU_PREBUILT=${CMAKE_BINARY_DIR}")
endif()

# train.py on the CPU: needs torch, from MEMSHIM_TORCH_PYTHON (scripts/torch-venv.sh makes it;
# skipped, 77, without it).
memshim_script_test(NAME pytorch_train_cpu LABELS "torch;nosan"
                    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pytorch_check.py
                    ENV "MEMSHIM_TORCH_PYTHON=${MEMSHIM_TORCH_PYTHON}")
set_tests_properties(pytorch_train_cpu PROPERTIES SKIP_RETURN_CODE 77)
