# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A configure with a misspelt RSHARE_PARTS entry must fail and name it (it
# used to be skipped silently). Usage: cmake -DSRC=dir -DWORK=dir -P unknown_part.cmake
file(REMOVE_RECURSE ${WORK})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${WORK} "-DRSHARE_PARTS=tests/hw;bindngs/python"
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(REMOVE_RECURSE ${WORK})
if(result EQUAL 0)
  message(FATAL_ERROR "the configure with RSHARE_PARTS=tests/hw;bindngs/python succeeded")
endif()
if(NOT err MATCHES "RSHARE_PARTS: no part \"bindngs/python\"")
  message(FATAL_ERROR "the configure failed without naming the bad entry:\n${err}")
endif()
message(STATUS "refused, naming the entry: RSHARE_PARTS: no part \"bindngs/python\"")
