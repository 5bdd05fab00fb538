-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- LuaJIT: what rshare.ffi's objects cost over the bare FFI calls they wrap.
--  * an allocation-free method, pd:handle(), against
--    C.rshare_pd_handle(h, cell);
--  * an object made and released, dev:import_pd(blob):unimport(), against
--    the two bare calls C.rshare_pd_import + C.rshare_pd_unimport, and
--    against the same with the ffi.gc finalizer a raw FFI caller needs
--    for a handle that must not leak (set on import, cleared on unimport).
-- Prints ns per call (best of several runs, to ride out scheduler noise)
-- and the ratios. With limits, fails when a ratio exceeds its limit: the
-- ctest luajit_ffi_speed passes generous ones, which catch a path that
-- stops compiling (tests/lua/jit_test.lua checks that directly), not a
-- few percent.
--   usage: luajit bench_ffi.lua [max handle ratio [max import ratio]]
local ffi = require "ffi"
local rshare = require "rshare.ffi"
local C = rshare.C
local max_handle_ratio, max_import_ratio = tonumber(arg[1]), tonumber(arg[2])
local N = 2000000

local function best_ns(n, fn)
  local best = math.huge
  for _ = 1, 7 do
    local t0 = os.clock()
    fn(n)
    best = math.min(best, (os.clock() - t0) / n * 1e9)
  end
  return best
end

local dev = assert(rshare.open("sim0"))
local pd = assert(dev:alloc_pd())
local var = assert(dev:alloc_var())
local blob = assert(pd:export())
local h, dev_h = pd.h, dev.h
local cell, pd_cell = ffi.new("uint32_t[1]"), ffi.new("rshare_pd *[1]")
local sink = 0

local rows, by_name = {}, {}
local function row(name, ns)
  rows[#rows + 1] = { name, ns }
  by_name[name] = ns
end

row("bare C.rshare_version()", best_ns(N, function(n)
  for _ = 1, n do sink = sink + (C.rshare_version() ~= nil and 1 or 0) end
end))
row("bare C.rshare_pd_handle()", best_ns(N, function(n)
  for _ = 1, n do C.rshare_pd_handle(h, cell); sink = sink + cell[0] end
end))
row("pd:handle()", best_ns(N, function(n)
  for _ = 1, n do sink = sink + pd:handle() end
end))
row("var:attrs() (allocates a table)", best_ns(N / 10, function(n)
  for _ = 1, n do sink = sink + var:attrs().length end
end))
row("bare import + unimport", best_ns(N / 4, function(n)
  for _ = 1, n do
    C.rshare_pd_import(dev_h, blob, #blob, pd_cell)
    C.rshare_pd_unimport(pd_cell[0])
  end
end))
row("bare import + ffi.gc + unimport", best_ns(N / 4, function(n)
  local unimport = C.rshare_pd_unimport
  for _ = 1, n do
    C.rshare_pd_import(dev_h, blob, #blob, pd_cell)
    unimport(ffi.gc(ffi.gc(pd_cell[0], unimport), nil))
  end
end))
row("dev:import_pd(blob):unimport()", best_ns(N / 4, function(n)
  for _ = 1, n do dev:import_pd(blob):unimport() end
end))

for _, r in ipairs(rows) do io.write(("%-34s %7.1f ns\n"):format(r[1], r[2])) end
local handle_ratio = by_name["pd:handle()"] / by_name["bare C.rshare_pd_handle()"]
local import_ratio = by_name["dev:import_pd(blob):unimport()"] / by_name["bare import + unimport"]
local import_gc_ratio = by_name["dev:import_pd(blob):unimport()"] /
                        by_name["bare import + ffi.gc + unimport"]
io.write(("pd:handle() / bare call:                %.2f\n"):format(handle_ratio))
io.write(("import_pd():unimport() / bare calls:    %.2f\n"):format(import_ratio))
io.write(("import_pd():unimport() / bare + ffi.gc: %.2f\n"):format(import_gc_ratio))
assert(pd:free() and var:free() and dev:close())

local failed = false
local function limit(what, ratio, max)
  if max and ratio > max then
    io.stderr:write(("bench_ffi: %s ratio %.2f exceeds %.2f\n"):format(what, ratio, max))
    failed = true
  end
end
limit("pd:handle()", handle_ratio, max_handle_ratio)
limit("import_pd():unimport()", import_ratio, max_import_ratio)
os.exit(failed and 1 or 0)
