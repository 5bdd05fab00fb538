-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- LuaJIT: rshare.ffi's hot paths compile. Each loop below runs under a
-- jit.attach trace hook (the events `luajit -jv` prints) twice:
--  1. warm-up: fails on any abort for a missing feature ("NYI: ...", e.g.
--     "NYI: bytecode 51", the closure per object that once left import_pd
--     interpreted) and unless a trace starting in the loop was completed;
--     other aborts are LuaJIT's normal search for a good trace (e.g. "loop
--     unroll limit reached" when a function got hot before the loop) and
--     may come and go;
--  2. steady state: the loop again, which must run without any abort.
-- Compiling says nothing about speed by itself: tests/lua/bench_ffi.lua
-- measures that.
--   usage: luajit jit_test.lua   (LuaJIT's own jit/*.lua on LUA_PATH)
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local rshare = require "rshare.ffi"
local vmdef = require "jit.vmdef" -- trace error texts, as -jv prints them
local funcinfo = require("jit.util").funcinfo

local ITERATIONS = 2000 -- far above the hot-loop threshold (56)

local function abort_reason(code, info)
  local text = vmdef.traceerr[code] or ("trace error " .. tostring(code))
  if type(info) == "number" and text:find("bytecode %%d") then
    return text:format(info)
  end
  return (text:gsub("%%s", tostring(info)))
end

local function where(func, pc)
  local info = funcinfo(func, pc)
  return (info.source or "?"):gsub("^@.*/", "") .. ":" .. tostring(info.currentline)
end

-- Runs loop(ITERATIONS) under the trace hook: the aborts (reason -> count),
-- how many were NYI, and how many traces starting in loop were completed.
local function run_traced(loop)
  local reasons, aborts, nyi, loop_traces = {}, 0, 0, 0
  local function hook(what, _, func, pc, code, info)
    if what == "abort" then
      local reason = where(func, pc) .. ": " .. abort_reason(code, info)
      reasons[reason] = (reasons[reason] or 0) + 1
      aborts = aborts + 1
      if reason:find(": NYI", 1, true) then nyi = nyi + 1 end
    elseif what == "stop" and func == loop then
      loop_traces = loop_traces + 1
    end
  end
  jit.attach(hook, "trace")
  local ok, err = pcall(loop, ITERATIONS)
  jit.attach(hook)
  T.ok(ok, "the loop ran: " .. tostring(err))
  local lines = {}
  for reason, n in pairs(reasons) do lines[#lines + 1] = ("%dx %s"):format(n, reason) end
  table.sort(lines)
  return aborts, nyi, loop_traces, table.concat(lines, "\n  ")
end

local function compiles(name, loop)
  jit.flush()
  local aborts, nyi, loop_traces, why = run_traced(loop)
  if nyi > 0 then
    error(("%s: %d trace(s) aborted on a missing JIT feature:\n  %s"):format(name, nyi, why), 2)
  end
  T.ok(loop_traces > 0, name .. ": no trace of the loop was completed (" .. aborts ..
       " aborts):\n  " .. why)
  aborts, _, _, why = run_traced(loop)
  if aborts > 0 then
    error(("%s: %d trace(s) aborted once compiled:\n  %s"):format(name, aborts, why), 2)
  end
end

local cases = {}

function cases.import_and_unimport_pd()
  local dev = assert(rshare.open("sim0"))
  local pd = assert(dev:alloc_pd())
  local blob = assert(pd:export())
  compiles("import_pd/unimport", function(n)
    for _ = 1, n do
      assert(dev:import_pd(blob):unimport())
    end
  end)
  T.eq(pd:free(), true, "free")
  T.eq(dev:close(), true, "close")
end

function cases.import_and_unimport_var()
  local dev = assert(rshare.open("sim0"))
  local var = assert(dev:alloc_var())
  local blob = assert(var:export())
  compiles("import_var/unimport", function(n)
    for _ = 1, n do
      assert(dev:import_var(blob):unimport())
    end
  end)
  T.eq(var:free(), true, "free")
  T.eq(dev:close(), true, "close")
end

function cases.import_and_unimport_mr()
  local dev = assert(rshare.open("sim0"))
  local pd = assert(dev:alloc_pd())
  local mr = assert(pd:reg_mr(4096))
  local blob = assert(mr:export())
  compiles("import_mr/unimport", function(n)
    for _ = 1, n do
      assert(pd:import_mr(blob):unimport())
    end
  end)
  T.eq(mr:dereg(), true, "dereg")
  T.eq(pd:free(), true, "free")
  T.eq(dev:close(), true, "close")
end

function cases.import_and_unimport_dm()
  local dev = assert(rshare.open("sim0"))
  local dm = assert(dev:alloc_dm(4096))
  local blob = assert(dm:export())
  compiles("import_dm/unimport", function(n)
    for _ = 1, n do
      assert(dev:import_dm(blob):unimport())
    end
  end)
  T.eq(dm:free(), true, "free")
  T.eq(dev:close(), true, "close")
end

function cases.alloc_and_free_pd()
  local dev = assert(rshare.open("sim0"))
  compiles("alloc_pd/free", function(n)
    for _ = 1, n do
      assert(dev:alloc_pd():free())
    end
  end)
  T.eq(dev:close(), true, "close")
end

function cases.accessors()
  local dev = assert(rshare.open("sim0"))
  local pd = assert(dev:alloc_pd())
  local sum = 0
  compiles("pd:handle/export", function(n)
    for _ = 1, n do
      sum = sum + pd:handle() + #pd:export()
    end
  end)
  T.ok(sum > 0, "the loop ran")
  T.eq(pd:free(), true, "free")
  T.eq(dev:close(), true, "close")
end

T.run(cases)
