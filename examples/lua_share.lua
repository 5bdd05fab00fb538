-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Share a PD and a VAR with a child Lua process started by os.execute, with
-- nothing but the standard library: the child inherits a duplicate of the
-- device fd (dev:inheritable_fd(); the device's own fd is close-on-exec) and
-- finds the objects as text blobs in its environment. It imports them, writes
-- into the shared VAR page, and the parent reads what it wrote.
--
--   lua5.4 examples/lua_share.lua      (or luajit; LUA_PATH and LUA_CPATH
--                                       as in docs/lua.md)
-- Exits 0 when the parent sees the child's write.
local rshare = require "rshare"

local GREETING = "hello from the child: PD handle %d, VAR page %d"

if arg[1] == "child" then
  -- rshare.from_fd imports its own duplicate: the inherited fd is ours to close.
  local fd = assert(tonumber(os.getenv("RSHARE_FD")), "RSHARE_FD not set")
  local dev = assert(rshare.from_fd(fd))
  assert(rshare.close_fd(fd))
  local pd = assert(dev:import_pd(os.getenv("RSHARE_PD")))
  local var = assert(dev:import_var(os.getenv("RSHARE_VAR")))
  local page = assert(var:map())
  assert(page:write(0, GREETING:format(pd:handle(), var:attrs().page_id) .. "\0"))
  print("child:  imported " .. tostring(pd) .. " and " .. tostring(var))
  -- Our handles only: the objects stay the parent's.
  assert(pd:unimport() and var:unimport() and dev:close())
  os.exit(0)
end

local function shell_quote(s)
  return "'" .. s:gsub("'", [['\'']]) .. "'"
end

local dev = assert(rshare.open("sim0"))
-- A first PD and VAR, kept here, so that the shared ones are not number 0.
local first_pd, first_var = assert(dev:alloc_pd()), assert(dev:alloc_var())
local pd = assert(dev:alloc_pd())
local var = assert(dev:alloc_var())
local page = assert(var:map())
print("parent: " .. tostring(dev) .. ", " .. tostring(pd) .. ", " .. tostring(var))

-- The child: this script again, under the interpreter running it.
local fd = assert(dev:inheritable_fd())
local command = ("RSHARE_FD=%d RSHARE_PD=%s RSHARE_VAR=%s %s %s child"):format(
  fd, shell_quote(assert(rshare.to_text(pd:export()))),
  shell_quote(assert(rshare.to_text(var:export()))), shell_quote(arg[-1]), shell_quote(arg[0]))
io.stdout:flush() -- before the child writes to the same stdout
local ok, how, code = os.execute(command)
assert(rshare.close_fd(fd)) -- the child has its copy now
-- Lua 5.4 returns true|nil, "exit", code; LuaJIT (5.1) the status number.
if not (ok == true or ok == 0) then
  io.stderr:write(("parent: the child failed (%s %s)\n"):format(tostring(how), tostring(code)))
  os.exit(1)
end

local want = GREETING:format(pd:handle(), var:attrs().page_id)
local got = page:read(0, #want + 1)
print("parent: the page says \"" .. got:sub(1, -2) .. "\"")
assert(pd:free() and var:free() and first_pd:free() and first_var:free() and dev:close())
if got ~= want .. "\0" then
  io.stderr:write("parent: expected \"" .. want .. "\"\n")
  os.exit(1)
end
