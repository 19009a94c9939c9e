# Python frames in call sites (MEMSHIM_PY_STACKS): a Python workload allocating through
# simcuda's libcudart via ctypes under the shim; pystack_check.py documents each mode.
find_package(Python3 COMPONENTS Interpreter)
if(NOT (Python3_Interpreter_FOUND AND TARGET memshim AND TARGET memshim-analyze
        AND TARGET simcuda_cudart))
  return()
endif()

# The interpreter is not instrumented: a sanitized shim needs its sanitizer runtimes loaded
# before anything else, which only a preload ahead of the shim achieves.
set(PYSTACK_PRELOAD "")
if(MEMSHIM_SANITIZE)
  foreach(san address:libasan.so undefined:libubsan.so)
    string(REPLACE ":" ";" san ${san})
    list(GET san 0 what)
    list(GET san 1 lib)
    if(MEMSHIM_SANITIZE MATCHES ${what})
      execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${lib}
                      OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(IS_ABSOLUTE "${path}")
        string(APPEND PYSTACK_PRELOAD ":${path}")
      endif()
    endif()
  endforeach()
endif()

set(PYSTACK_CHECK ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/pystack_check.py
    --shim $<TARGET_FILE:memshim> --analyze $<TARGET_FILE:memshim-analyze>
    "--preload-first=${PYSTACK_PRELOAD}")
memshim_script_test(NAME e2e_pystack_on COMMAND ${PYSTACK_CHECK} on)
memshim_script_test(NAME e2e_pystack_off COMMAND ${PYSTACK_CHECK} off)
memshim_script_test(NAME e2e_pystack_released_first COMMAND ${PYSTACK_CHECK} released-first)

# A python executable with the interpreter linked in (Debian's /usr/bin/python3) exports the
# API itself: the same checks there, when it is another interpreter than the one above.
find_program(PYSTACK_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(PYSTACK_SYSTEM_PYTHON)
  get_filename_component(_sys_py ${PYSTACK_SYSTEM_PYTHON} REALPATH)
  get_filename_component(_py ${Python3_EXECUTABLE} REALPATH)
  if(NOT _sys_py STREQUAL _py)
    memshim_script_test(NAME e2e_pystack_system_python
                        COMMAND ${PYSTACK_CHECK} on --python ${PYSTACK_SYSTEM_PYTHON})
  endif()
endif()
