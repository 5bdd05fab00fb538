-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- rshare.swig: the rshare Lua API for PUC Lua 5.4 over the SWIG-built C
-- module rshare.core (swig/rshare.i + swig/lua/rshare_lua.i). The API itself
-- (classes, conventions) is rshare/objects.lua; this file is its backend.
-- rshare.core's functions already return the status first and then their
-- out values, which is the form objects.lua takes, so they serve as they
-- are; only what Lua 5.4 does differently is added here.
local core = require "rshare.core"
local objects = require "rshare.objects"

local B = setmetatable({
  name = "swig", OK = 0, E_BUSY = core.RSHARE_E_BUSY,
  VAR_FLAG_TLP = math.tointeger(core.RSHARE_VAR_FLAG_TLP),
  BLOB_MAX = math.tointeger(core.RSHARE_BLOB_MAX),
  TEXT_MAX = math.tointeger(core.RSHARE_TEXT_MAX),
  PAYLOAD_MAX = math.tointeger(core.RSHARE_PAYLOAD_MAX),
}, { __index = core })

function B.guid_string(g)
  return ("0x%016x"):format(g) -- a uint64 bit pattern in a Lua integer
end

-- Lua never holds the page's address: the bytes move through
-- rshare.core's var_read/var_write, which take integer offsets and lengths.
function B.page_read(h, _, off, n)
  return core.var_read(h, math.tointeger(off), math.tointeger(n))
end

function B.page_write(h, _, off, bytes)
  return core.var_write(h, math.tointeger(off), bytes)
end

-- Shared buffers (since 1.2): read and written through rshare.core's
-- bounds-checked buf_read/buf_write; buf_ptr's address is a light userdata.
function B.buf_read(h, off, n)
  return core.buf_read(h, math.tointeger(off), math.tointeger(n))
end

function B.buf_write(h, off, bytes)
  return core.buf_write(h, math.tointeger(off), bytes)
end

-- Mapped device memory (since 1.2): through rshare.core's bounds-checked
-- dm_map_read/dm_map_write (they map on first use); dm_map's address is a
-- light userdata.
function B.dm_map_read(h, off, n)
  return core.dm_map_read(h, math.tointeger(off), math.tointeger(n))
end

function B.dm_map_write(h, off, bytes)
  return core.dm_map_write(h, math.tointeger(off), bytes)
end

-- Lua 5.4 finalizes the object tables: __gc runs obj.finalizer(obj.h) once,
-- unless untrack() came first. A PD or VAR holds its device in obj.dev.
function B.track(obj, finalize) obj.finalizer = finalize end
function B.untrack(obj) obj.finalizer = nil end

function B.gc(obj)
  local finalize = obj.finalizer
  if finalize then
    obj.finalizer = nil
    finalize(obj.h)
  end
end

-- SWIG handles are plain userdata that SWIG never frees: keep them as they are.
function B.pending_entry(h) return h, h end

-- rshare.core's own small fd calls (swig/lua/rshare_lua.i): Lua 5.4 has
-- no way to dup or close an fd, and Debian 12 has no lua-posix for it.
B.fd_dup_inheritable, B.fd_close = core.fd_dup_inheritable, core.fd_close

-- 64-bit out values already are Lua integers (the bit pattern).
function B.u64_number(v) return v end

-- MR memory: a full userdata rshare.core makes and reads (Lua 5.4 has no
-- writable byte buffer of its own); mr_reg registers its address.
B.mem_new, B.mem_read, B.mem_write = core.mem_new, core.mem_read, core.mem_write

function B.mr_reg(pd, mem, n, access)
  return core.mr_reg(pd, core.mem_addr(mem), n, access)
end

-- Maps are tables: Lua 5.4 honours __len on them.
function B.new_map()
  local mt = {}
  return setmetatable({}, mt), mt
end

local M = objects.build(B)
M.core = core -- the raw SWIG module, for callers that need the bare ABI
require("rshare.broker").extend(M) -- named shares (since 1.1)
return M
