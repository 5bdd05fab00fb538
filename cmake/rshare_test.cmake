# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The one place a test is registered: every layer (tests/c, tests/hw, the
# bindings, abi/, the examples, the tools) calls rshare_test() with what it
# would give add_test(), so the project's tests have one registration
# point. The C cases come from tests/c/c_cases.def, the hardware suite's
# from tests/hw/hw_cases.def, each registered case by case.
function(rshare_test)
  # Each argument passed on as it came, empty ones included (a plain
  # ${ARGN} would drop them and shift the rest).
  set(call "add_test(")
  math(EXPR last "${ARGC} - 1")
  foreach(i RANGE ${last})
    set(arg "${ARGV${i}}")
    string(REPLACE "\\" "\\\\" arg "${arg}")
    string(REPLACE "\"" "\\\"" arg "${arg}")
    string(REPLACE "\${" "\\\${" arg "${arg}")
    string(APPEND call " \"${arg}\"")
  endforeach()
  cmake_language(EVAL CODE "${call})")
endfunction()
