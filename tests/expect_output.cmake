# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Run a test program and pass only if it both exits 0 and prints what it
# should. (ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status:
# a program that printed the right line and then failed would pass.)
#
#   cmake -DEXPECT=<regex> [-DSKIP_CODE=<n>] -P expect_output.cmake -- CMD ARGS...
#
# The program's stdout and stderr are echoed and matched together against
# EXPECT (a CMake regular expression, as PASS_REGULAR_EXPRESSION takes).
# With SKIP_CODE, exiting with that code and printing EXPECT means skipped:
# the script then prints "expect_output: skipped", which the test's
# SKIP_REGULAR_EXPRESSION turns into a skip (cmake -P cannot exit with 77).
if(NOT DEFINED EXPECT)
  message(FATAL_ERROR "expect_output: no EXPECT given")
endif()
set(cmd)
set(after_dashes FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_dashes)
    # One argument stays one, semicolons and all.
    string(REPLACE ";" "\\;" arg "${CMAKE_ARGV${i}}")
    list(APPEND cmd "${arg}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(after_dashes TRUE)
  endif()
endforeach()
if(NOT cmd)
  message(FATAL_ERROR "expect_output: no command after --")
endif()

execute_process(COMMAND ${cmd} RESULT_VARIABLE rc
  OUTPUT_VARIABLE out ERROR_VARIABLE out ECHO_OUTPUT_VARIABLE ECHO_ERROR_VARIABLE)
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "expect_output: the output lacks \"${EXPECT}\" (exit status ${rc})")
endif()
if(DEFINED SKIP_CODE AND rc STREQUAL "${SKIP_CODE}")
  message("expect_output: skipped (exit status ${rc})")
elseif(NOT rc STREQUAL "0")
  message(FATAL_ERROR "expect_output: exit status ${rc}, want 0 (the output was right)")
endif()
