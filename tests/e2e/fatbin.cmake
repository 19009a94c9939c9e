# simcuda's kernel parameter layouts from nvcc's cubins (tests/simcuda/fatbin), compressed and
# plain, against the host compiler's layout of the same parameter lists. Built only with nvcc.
foreach(mode plain zstd)
  if(TARGET simcuda_fatbin_params_${mode})
    add_test(NAME simcuda_fatbin_params_${mode} COMMAND simcuda_fatbin_params_${mode})
    set_tests_properties(simcuda_fatbin_params_${mode} PROPERTIES
      ENVIRONMENT "LD_LIBRARY_PATH=${MEMSHIM_SIM_DIR}" LABELS "e2e;simcuda" TIMEOUT 60)
  endif()
endforeach()
