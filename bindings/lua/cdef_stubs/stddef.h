/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Empty on purpose: LuaJIT's FFI already knows size_t, so the cdef is made
 * by preprocessing rshare.h against these stubs instead of the libc headers
 * (see gen_cdef.cmake). */
