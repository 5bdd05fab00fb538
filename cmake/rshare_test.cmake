# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The one place a test is registered: every layer (tests/c, tests/hw, the
# bindings, abi/, the examples, the tools) calls rshare_test() with what it
# would give add_test(), so the project's tests have one registration
# point. The C cases come from tests/c/c_cases.def, the hardware suite's
# from tests/hw/hw_cases.def, each registered case by case.
function(rshare_test)
  add_test(${ARGN})
endfunction()
