-- LuaJIT: the cost of an allocation-free rshare.ffi method against the
-- bare FFI call it wraps, e.g. pd:handle() against
-- C.rshare_pd_handle(h, cell). Prints ns per call; with a ratio argument,
-- fails when the method is slower than ratio times the bare call (best of
-- several runs, to ride out scheduler noise).
--   usage: luajit bench_ffi.lua [max ratio]
local ffi = require "ffi"
local rshare = require "rshare.ffi"
local C = rshare.C
local max_ratio = tonumber(arg[1])
local N = 2000000

local function best_ns(fn)
  local best = math.huge
  for _ = 1, 7 do
    local t0 = os.clock()
    fn(N)
    best = math.min(best, (os.clock() - t0) / N * 1e9)
  end
  return best
end

local dev = assert(rshare.open("sim0"))
local pd = assert(dev:alloc_pd())
local var = assert(dev:alloc_var())
local h, cell = pd.h, ffi.new("uint32_t[1]")
local sink = 0

local results = {
  { "bare C.rshare_version()", best_ns(function(n)
      for _ = 1, n do sink = sink + (C.rshare_version() ~= nil and 1 or 0) end end) },
  { "bare C.rshare_pd_handle()", best_ns(function(n)
      for _ = 1, n do C.rshare_pd_handle(h, cell); sink = sink + cell[0] end end) },
  { "pd:handle()", best_ns(function(n)
      for _ = 1, n do sink = sink + pd:handle() end end) },
  { "var:attrs() (allocates a table)", best_ns(function(n)
      for _ = 1, n / 10 do sink = sink + var:attrs().length end end) * 10 },
}
for _, r in ipairs(results) do io.write(("%-34s %7.1f ns\n"):format(r[1], r[2])) end

local ratio = results[3][2] / results[2][2]
io.write(("pd:handle() / bare call: %.2f\n"):format(ratio))
assert(pd:free() and var:free() and dev:close())
if max_ratio and ratio > max_ratio then
  io.stderr:write(("bench_ffi: ratio %.2f exceeds %.2f\n"):format(ratio, max_ratio))
  os.exit(1)
end
