-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Run by installed_test.sh under lua5.4 or luajit, with LUA_PATH/LUA_CPATH
-- reaching only an installed prefix and no LD_LIBRARY_PATH: the installed
-- module loads, maps the prefix's librshare.so.1 (not some other copy), and
-- works: a PD and a VAR are shared between two contexts of sim0 and the VAR
-- page is written through one and read through the other.
--   usage: installed_check.lua <prefix>
local prefix = assert(arg[1], "usage: installed_check.lua <prefix>")
local rshare = require "rshare"
local runtime = jit and "LuaJIT" or _VERSION

local function check(cond, ...)
  if not cond then
    io.stderr:write("installed_check (", runtime, "): ", table.concat({ ... }, " "), "\n")
    os.exit(1)
  end
  return cond
end

-- The library the process mapped, as the kernel names it (no "..").
local maps = assert(io.open("/proc/self/maps")):read("*a")
local lib = maps:match("(/%S*/librshare%.so[%.%d]*)\n")
check(lib, "librshare is not mapped")
check(lib:sub(1, #prefix + 1) == prefix .. "/", "mapped", lib, "which is not under", prefix)
check(rshare.backend == (jit and "ffi" or "swig"), "backend", rshare.backend)
check(type(require("rshare.luv").attach) == "function", "rshare.luv is not installed")
check(type(rshare.attach_start) == "function", "rshare.attach_start is missing")

local dev = check(rshare.open("sim0"))
local peer = check(rshare.from_fd(dev:fd()))
local pd, var = check(dev:alloc_pd()), check(dev:alloc_var())
local pd2 = check(peer:import_pd(check(rshare.to_text(pd:export()))))
local var2 = check(peer:import_var(var:export()))
check(pd2:handle() == pd:handle(), "PD handles differ")
check(var:map():write(0, "installed"), "write")
check(var2:map():read(0, 9) == "installed", "the other context does not see the write")
print(("%s from %s: %s, %s"):format(runtime, lib, tostring(pd2), tostring(var2)))
check(pd2:unimport() and var2:unimport() and pd:free() and var:free(), "release")
check(peer:close() and dev:close(), "close")
