# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Run by `cmake --install` (install(SCRIPT), component "python"): the
# package goes to the site directory of the install-time prefix, which
# sitedir.py computes (so `cmake --install build --prefix /usr` lands in
# Debian's lib/python3/dist-packages whatever prefix was configured).
# RSHARE_PY_* are set by the install(CODE) line before this script.
if(RSHARE_PY_SITEDIR)
  set(_site "${RSHARE_PY_SITEDIR}")
else()
  execute_process(
    COMMAND "${RSHARE_PY_EXE}" "${RSHARE_PY_SOURCE_DIR}/sitedir.py" "${CMAKE_INSTALL_PREFIX}"
    OUTPUT_VARIABLE _site RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0 OR NOT _site)
    message(FATAL_ERROR "rshare: cannot compute the Python site directory (rc ${_rc})")
  endif()
endif()
# file(INSTALL) adds $DESTDIR itself.
set(_dest "${CMAKE_INSTALL_PREFIX}/${_site}")

file(INSTALL DESTINATION "${_dest}/rshare" TYPE FILE FILES ${RSHARE_PY_FILES})
# The module linked for installation (RUNPATH: the prefix's libdir,
# relative to the module; see CMakeLists.txt).
file(INSTALL DESTINATION "${_dest}/rshare" TYPE MODULE FILES "${RSHARE_PY_MODULE}")
# Package metadata, so importlib.metadata and pip see the package.
file(INSTALL DESTINATION "${_dest}" TYPE DIRECTORY FILES "${RSHARE_PY_DIST_INFO}")
