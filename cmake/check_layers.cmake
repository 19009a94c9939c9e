# check_layers: fail when a module calls upward, read from the symbols of the built objects
# (not from #include lines, which a declaration copied by hand would slip past).
#
#   cmake -DNM=nm -DSPEC=layers.txt -P check_layers.cmake
#
# SPEC has one line per layer: "name|layers it may use, separated by spaces|its objects,
# separated by ;". A symbol an object needs that another layer defines must come from the
# object's own layer or one it may use; anything else is reported as object -> symbol (layer)
# and the check fails. Symbols no layer defines (libc, CUDA, uthash) are not its business.
cmake_minimum_required(VERSION 3.25)
if(NOT NM OR NOT SPEC)
  message(FATAL_ERROR "usage: cmake -DNM=nm -DSPEC=layers.txt -P check_layers.cmake")
endif()

file(STRINGS ${SPEC} _lines)
set(_layers)
foreach(line ${_lines})
  string(REPLACE "|" ";" parts "${line}")
  list(GET parts 0 name)
  list(GET parts 1 uses)
  list(SUBLIST parts 2 -1 objects)
  list(APPEND _layers ${name})
  string(REPLACE " " ";" uses "${uses}")
  set(_uses_${name} ${name} ${uses})
  set(_objects_${name} ${objects})
endforeach()

# Symbols defined by each layer's objects, and each object's undefined ones.
foreach(layer ${_layers})
  set(_undef_${layer})
  foreach(obj ${_objects_${layer}})
    execute_process(COMMAND ${NM} -g ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "check_layers: ${NM} cannot read ${obj}: ${err}")
    endif()
    string(REPLACE "\n" ";" out "${out}")
    foreach(l ${out})
      if(l MATCHES "^ +U ([A-Za-z_0-9.@$]+)$")
        list(APPEND _undef_${layer} "${obj}|${CMAKE_MATCH_1}")
      elseif(l MATCHES "^[0-9a-fA-F]+ [BCDGRSTVW] ([A-Za-z_0-9.@$]+)$")
        set(_def_${CMAKE_MATCH_1} ${layer})
      endif()
    endforeach()
  endforeach()
endforeach()

set(_bad 0)
foreach(layer ${_layers})
  foreach(ref ${_undef_${layer}})
    string(REPLACE "|" ";" ref "${ref}")
    list(GET ref 0 obj)
    list(GET ref 1 sym)
    if(NOT DEFINED _def_${sym})
      continue()
    endif()
    list(FIND _uses_${layer} ${_def_${sym}} ok)
    if(ok LESS 0)
      get_filename_component(o ${obj} NAME)
      message(SEND_ERROR "check_layers: ${layer}/${o} uses ${sym} from ${_def_${sym}}, a layer "
                         "it may not call (${layer} may use: ${_uses_${layer}})")
      math(EXPR _bad "${_bad} + 1")
    endif()
  endforeach()
endforeach()
if(_bad GREATER 0)
  message(FATAL_ERROR "check_layers: ${_bad} call(s) against the direction of the layers")
endif()
list(LENGTH _layers n)
message(STATUS "check_layers: ${n} layers, no call against their direction")
