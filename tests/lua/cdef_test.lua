-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- LuaJIT: the generated cdef against the ABI. Every function the header
-- declares is in abi/rshare.map and resolves in librshare.so.1 (and the
-- other way round), every status enum member agrees with
-- rshare_status_name(), and rshare.ffi loads twice (the cdef is guarded).
--   usage: luajit cdef_test.lua <path of abi/rshare.map>
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local ffi = require "ffi"
local cdef = require "rshare.cdef"
local rshare = require "rshare.ffi"

local function set_of(text, pattern)
  local set, n = {}, 0
  for name in text:gmatch(pattern) do
    if not set[name] then n = n + 1 end
    set[name] = true
  end
  return set, n
end

local cases = {}

function cases.functions_match_the_symbol_map()
  local path = assert(arg[1], "usage: cdef_test.lua <abi/rshare.map>")
  local map = assert(io.open(path)):read("*a"):gsub("/%*.-%*/", "") -- drop comments
  local exported, n_exported = set_of(map, "(rshare_[%w_]+);")
  local declared, n_declared = set_of(cdef, "(rshare_[%w_]+)%s*%(")
  T.ok(n_declared > 30, "declarations found in the cdef")
  for name in pairs(declared) do
    T.ok(exported[name], name .. " declared but not in abi/rshare.map")
    T.ok(pcall(function() return rshare.C[name] end), name .. " does not resolve")
  end
  for name in pairs(exported) do
    T.ok(declared[name], name .. " exported but not in the generated cdef")
  end
  T.eq(n_declared, n_exported, "as many declarations as exports")
end

function cases.status_enum_matches_the_library()
  local body = cdef:match("enum rshare_status%s*(%b{})")
  T.ok(body, "enum rshare_status in the cdef")
  local n = 0
  for name, value in body:gmatch("(RSHARE_[%w_]+)%s*=%s*(%-?%d+)") do
    n = n + 1
    T.eq(rshare.C[name], tonumber(value), name .. " through the FFI")
    T.eq(rshare.status_name(tonumber(value)), name, "rshare_status_name(" .. value .. ")")
  end
  -- As many as the library names (0 down to the lowest; numbers reserved
  -- for statuses not in this library leave gaps).
  local known = 0
  for v = 0, -64, -1 do
    if rshare.status_name(v) ~= "RSHARE_E_UNKNOWN" then known = known + 1 end
  end
  T.eq(n, known, "status count")
  T.ok(n >= 18, "RSHARE_E_AGAIN (-16) and RSHARE_E_FD_MISMATCH (-19, since 1.2) are there")
end

function cases.limits_are_visible()
  T.eq(rshare.C.RSHARE_BLOB_MAX, 128, "RSHARE_BLOB_MAX")
  T.eq(rshare.C.RSHARE_TEXT_MAX, 180, "RSHARE_TEXT_MAX")
  T.eq(ffi.sizeof("rshare_device *"), ffi.sizeof("void *"), "handle size")
end

function cases.loads_twice()
  package.loaded["rshare.ffi"] = nil
  local again = require "rshare.ffi"
  T.ok(again ~= rshare, "a second module instance")
  local dev = assert(again.open("sim0"))
  T.eq(dev:name(), "sim0", "second instance works")
  T.eq(dev:close(), true, "close")
  -- require "rshare" under LuaJIT is the FFI module too.
  T.eq(require("rshare").backend, "ffi", "require 'rshare' under LuaJIT")
end

T.run(cases)
