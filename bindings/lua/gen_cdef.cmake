# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Generate rshare/cdef.lua, the LuaJIT FFI declarations, from the public
# header so that they cannot drift from it: the header is run through the C
# preprocessor against empty <stddef.h>/<stdint.h> stubs (LuaJIT knows those
# types already), which drops comments, macros and the C++ guards and leaves
# plain enums, typedefs and prototypes.
#
# Inputs (-D): CC, HEADER, INCLUDE_DIR, STUBS, OUT, and optionally LUAJIT to
# prove at build time that LuaJIT accepts the result.
foreach(var CC HEADER INCLUDE_DIR STUBS OUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gen_cdef.cmake: ${var} is not set")
  endif()
endforeach()

execute_process(
  COMMAND ${CC} -E -P -nostdinc -I${STUBS} -I${INCLUDE_DIR} -x c ${HEADER}
  RESULT_VARIABLE rc OUTPUT_VARIABLE decls ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "gen_cdef.cmake: preprocessing ${HEADER} failed:\n${err}")
endif()

# Squeeze the blank lines the preprocessor leaves behind.
string(REGEX REPLACE "\n[ \t]*\n+" "\n" decls "${decls}")
string(STRIP "${decls}" decls)

# LuaJIT cannot parse compiler extensions; refuse them here rather than at
# require time.
foreach(bad "__attribute__" "__extension__" "__asm" "#")
  string(FIND "${decls}" "${bad}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "gen_cdef.cmake: '${bad}' in the preprocessed header; LuaJIT's cdef cannot take it")
  endif()
endforeach()
if(NOT decls MATCHES "rshare_version")
  message(FATAL_ERROR "gen_cdef.cmake: no declarations found in ${HEADER}")
endif()

file(WRITE ${OUT}.tmp
"-- Generated at build time from capi/include/rshare/rshare.h by
-- bindings/lua/gen_cdef.cmake. Do not edit: edit the header.
return [==[
${decls}
]==]
")

if(LUAJIT)
  execute_process(
    COMMAND ${LUAJIT} -e "require('ffi').cdef(dofile([==[${OUT}.tmp]==]))"
    RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "gen_cdef.cmake: LuaJIT rejects the generated cdef:\n${err}")
  endif()
endif()
file(RENAME ${OUT}.tmp ${OUT})
