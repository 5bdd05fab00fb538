-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Wait for a share in a luv (libuv) event loop, next to a timer that keeps
-- ticking: the loop is never blocked. Run from a build tree (lua5.4 with
-- rshare, or luajit with rshare.ffi; Debian's lua-luv):
--
--   LUA_PATH='build/lua/?.lua;;' LUA_CPATH='build/lua/?.so;;' lua5.4 examples/lua_luv_attach.lua
--
-- It serves a broker itself and, a little later, has a child process
-- publish a PD under "example/luv"; the loop attaches to it when it
-- appears, then gives up on a name nobody publishes after 0.3 s.
local uv = require "luv"
local rshare = require "rshare" -- rshare.ffi under LuaJIT
local rluv = require "rshare.luv"

local dir = assert(io.popen("mktemp -d /tmp/rshare-luv-XXXXXX")):read("*l")
local endpoint = dir .. "/broker.sock"
local broker = assert(rshare.serve(endpoint))

-- The running interpreter, for the child.
local i = -1
while arg[i - 1] do i = i - 1 end
local interpreter = arg[i]

local ticks = 0
local ticker = uv.new_timer()
ticker:start(50, 50, function() ticks = ticks + 1 end)

-- The publisher: another process, 0.3 s from now; it withdraws and exits
-- when we close its stdin.
local publisher_stdin = uv.new_pipe(false)
local publisher
publisher = uv.spawn(interpreter, {
  args = { "-e", ([[
    package.path = %q
    package.cpath = %q
    local rshare = require "rshare"
    os.execute("sleep 0.3")
    local dev = assert(rshare.open("sim0"))
    local pd = assert(dev:alloc_pd())
    local share = assert(rshare.publish("example/luv", dev, { pd = pd, endpoint = %q }))
    io.read("*l") -- until the parent closes our stdin
    share:withdraw(); pd:free(); dev:close()
  ]]):format(package.path, package.cpath, endpoint) },
  stdio = { publisher_stdin, 1, 2 },
}, function(status)
  print("publisher exited with status " .. status)
  publisher:close()
end)

local done = 0
local function stop_when_done()
  done = done + 1
  if done < 2 then return end
  ticker:stop(); ticker:close()
end

assert(rluv.attach(uv, rshare, "example/luv", { endpoint = endpoint, timeout = 10 },
  function(share, msg)
    assert(share, msg)
    print(("attached example/luv: PD %d, while the timer ticked %d times"):format(
      assert(share.pd:handle()), ticks))
    share:close()
    publisher_stdin:close()
    stop_when_done()
  end))

assert(rluv.attach(uv, rshare, "example/nobody", { endpoint = endpoint, timeout = 0.3 },
  function(share, msg, code)
    print(("gave up on example/nobody: %s (%s)"):format(code, msg))
    stop_when_done()
  end))

uv.run() -- returns when nothing is left: both waits over, the publisher gone
broker:stop()
os.execute("rm -rf " .. dir)
