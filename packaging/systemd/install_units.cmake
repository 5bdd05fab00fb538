# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Install the systemd units (run by `cmake --install`, component bin):
# PREFIX/lib/systemd/{system,user}/rshare.{socket,service}, with ExecStart
# naming PREFIX/BINDIR/rshare for the prefix of this install.
if(IS_ABSOLUTE "${RSHARE_UNIT_BINDIR}")
  set(RSHARE_BINDIR "${RSHARE_UNIT_BINDIR}")
else()
  set(RSHARE_BINDIR "${CMAKE_INSTALL_PREFIX}/${RSHARE_UNIT_BINDIR}")
endif()
foreach(scope system user)
  set(dir "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/${scope}")
  if(scope STREQUAL "user")
    set(from rshare-user)
  else()
    set(from rshare)
  endif()
  foreach(kind socket service)
    message(STATUS "Installing: ${dir}/rshare.${kind}")
    configure_file("${RSHARE_UNIT_SOURCES}/${from}.${kind}.in" "${dir}/rshare.${kind}" @ONLY)
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${dir}/rshare.${kind}")
  endforeach()
endforeach()
