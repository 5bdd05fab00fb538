# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The status list, generated from its one source: the public header's enum
# rshare_status, each member with its doc comment (`RSHARE_E_X = -n, /**< text */`).
# Writes OUT: RS_STATUS_LIST(X) calling X(name, "text") for each, in enum
# order; util/status.c makes rshare_status_name() and rshare_strerror() of
# it. Usage: cmake -DHEADER=rshare.h -DOUT=rs_status_list.h -P status_list.cmake
file(READ ${HEADER} text)
# CMake lists split at ';', which the comments may hold.
string(REPLACE ";" "@SEMICOLON@" text "${text}")
string(REGEX MATCH "enum rshare_status {[^}]*}" body "${text}")
if(NOT body)
  message(FATAL_ERROR "${HEADER}: no enum rshare_status")
endif()
string(REGEX MATCHALL "RSHARE_[A-Z_]+ = -?[0-9]+,?[ \t]*/\\*\\*<[^\n]*\\*/" members "${body}")
string(REGEX MATCHALL "RSHARE_[A-Z_]+ = " all "${body}")
list(LENGTH all n_all)
list(LENGTH members n_members)
if(NOT n_all EQUAL n_members)
  message(FATAL_ERROR "${HEADER}: ${n_all} statuses in enum rshare_status, ${n_members} with a "
                      "one-line /**< text */ comment: every status needs one (its rshare_strerror text)")
endif()
set(out "/* Generated from enum rshare_status in rshare.h by capi/status_list.cmake. */\n")
string(APPEND out "#define RS_STATUS_LIST(X) \\\n")
foreach(m ${members})
  string(REGEX REPLACE "^(RSHARE_[A-Z_]+) = .*/\\*\\*<[ \t]*(.*[^ \t])[ \t]*\\*/$" "\\1" name "${m}")
  string(REGEX REPLACE "^(RSHARE_[A-Z_]+) = .*/\\*\\*<[ \t]*(.*[^ \t])[ \t]*\\*/$" "\\2" doc "${m}")
  string(REPLACE "@SEMICOLON@" ";" doc "${doc}")
  string(REPLACE "\\" "\\\\" doc "${doc}")
  string(REPLACE "\"" "\\\"" doc "${doc}")
  string(APPEND out "\tX(${name}, \"${doc}\") \\\n")
endforeach()
string(APPEND out "\t/* end */\n")
file(WRITE ${OUT}.tmp "${out}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
