-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Attach from a luv (libuv) loop (rshare.luv, rshare.attach_start): the
-- wait runs on the loop next to a timer that keeps ticking; a publisher in
-- another process (broker_child.lua) appears later and the attach
-- completes; a timed-out and a cancelled wait leave no socket, no uv handle
-- and no request at the broker.
-- Usage: luv_test.lua MODULE (rshare under lua5.4, rshare.ffi under luajit)
local T = dofile(arg[0]:gsub("[^/]*$", "") .. "testlib.lua")
local MODULE = arg[1] or "rshare"
local rshare = require(MODULE)
local uv = require "luv"
local rluv = require "rshare.luv"
local CHILD = arg[0]:gsub("[^/]*$", "") .. "broker_child.lua"

local function interpreter()
  local i = -1
  while arg[i - 1] do i = i - 1 end
  return arg[i]
end

local dir = assert(io.popen("d=$(mktemp -d /tmp/rshare-luv-XXXXXX) && chmod 755 $d && echo $d"))
  :read("*l")
local EP = dir .. "/b.sock"

-- This process's open sockets (luv tells our pid): an attach's fd is a
-- socket; pipes and the loop's own fds come and go with libuv's
-- housekeeping, so they are not counted.
local function sockets()
  T.full_gc() -- what earlier cases dropped is closed first
  local n, p = 0, assert(io.popen("ls -l /proc/" .. uv.os_getpid() .. "/fd"))
  for line in p:lines() do
    if line:find("socket:", 1, true) then n = n + 1 end
  end
  p:close() -- now: a pipe left to the collector would linger
  return n
end

local function waiting() return #assert(rshare.waiting(EP)) end

-- Run the loop until it has nothing left (bounded by a watchdog).
local function run_loop()
  local watchdog = uv.new_timer()
  watchdog:start(20000, 0, function() error("the loop ran for 20 s") end)
  uv.unref(watchdog)
  uv.run()
  watchdog:close()
  uv.run("nowait")
end

-- Start broker_child.lua with args in the loop: a table whose lines
-- (its output so far) and status (its exit code, once it exited) the loop
-- fills in.
local function spawn_child(...)
  local out, child = uv.new_pipe(false), nil
  local result = { lines = "" }
  child = uv.spawn(interpreter(), { args = { CHILD, MODULE, ... }, stdio = { nil, out, 2 } },
                   function(code)
                     result.status = code
                     child:close()
                   end)
  out:read_start(function(_, data)
    if data then result.lines = result.lines .. data else out:close() end
  end)
  return result
end

local cases = {}

function cases.attach_completes_next_to_a_timer()
  local ticks, got = 0, nil
  uv.update_time() -- the loop's clock, stale since the last run, for the timers below
  local ticker = uv.new_timer()
  ticker:start(20, 20, function() ticks = ticks + 1 end)
  local w = assert(rluv.attach(uv, rshare, "luv/share", { endpoint = EP }, function(share, msg)
    got = { msg = msg, ticks = ticks, attached = share ~= nil }
    ticker:stop(); ticker:close()
    if share then -- answer the publisher through the VAR page; it then exits
      local page = assert(share.var:map())
      got.word = page:read(0, 4)
      assert(page:write(4, "ATCH"))
      assert(share:close())
    end
  end))
  T.ok(w, "waiting")
  -- The publisher: another process, started 0.2 s into the wait.
  local pub
  local later = uv.new_timer()
  later:start(200, 0, function()
    later:close()
    pub = spawn_child("publish", EP, "luv/share", "0")
  end)
  run_loop() -- until the child saw our word and exited
  local lines, status = pub.lines, pub.status
  T.ok(got and got.attached, "attached: " .. tostring(got and got.msg))
  T.ok(got.ticks >= 3, "the timer ticked while the attach waited (" .. tostring(got.ticks) .. ")")
  T.eq(got.word, "PUBL", "the publisher's word")
  T.eq(status, 0, "publisher exit status")
  T.ok(lines:find("done"), "the publisher saw our write: " .. lines)
end

-- This process's open memfds (a shared buffer's memory).
local function memfds()
  T.full_gc()
  local n, p = 0, assert(io.popen("ls -l /proc/" .. uv.os_getpid() .. "/fd"))
  for line in p:lines() do
    if line:find("/memfd:", 1, true) then n = n + 1 end
  end
  p:close()
  return n
end

-- A share carrying a shared buffer (its memfd travels with it), published
-- by another process while the wait (with a timeout) runs: the callback
-- gets it imported and sees the publisher's bytes; by hand with
-- import = false the fd comes in share.fds. No memfd or socket is left.
function cases.buffer_share_with_a_timeout()
  local before_fds, before_socks, got = memfds(), sockets(), nil
  assert(rluv.attach(uv, rshare, "luv/buf", { endpoint = EP, timeout = 10 },
    function(share, msg, code)
      got = { msg = tostring(msg) .. " " .. tostring(code), attached = share ~= nil }
      if not share then return end
      got.word = share.buf and share.buf:read(0, 4)
      if rshare.backend == "ffi" then -- zero-copy: the mapping itself
        local p, n = share.buf:ptr()
        got.ptr_word, got.len = require("ffi").string(p, 4), n
      end
      -- Published now: an operation by hand, the fd left to the caller.
      local op = assert(rshare.attach_start("luv/buf", { endpoint = EP, import = false }))
      assert(op:wait(5000))
      local raw = assert(op:finish())
      got.raw_fds, got.raw_bufs = #raw.fds, #raw.bufs
      assert(raw:close())
      assert(share.buf:write(4, "ATCH")) -- the publisher then exits
      assert(share:close())
    end))
  T.eq(waiting(), 1, "waiting at the broker")
  local pub = spawn_child("publish_buf", EP, "luv/buf")
  run_loop()
  local lines, status = pub.lines, pub.status
  T.ok(got and got.attached, "attached: " .. tostring(got and got.msg))
  T.eq(got.word, "PUBL", "the publisher's bytes through share.buf")
  if rshare.backend == "ffi" then
    T.eq(got.ptr_word, "PUBL", "the publisher's bytes through buf:ptr()")
    T.eq(got.len, 4096, "the mapping's length")
  end
  T.eq(got.raw_fds, 1, "import = false: the buffer's fd in share.fds")
  T.eq(got.raw_bufs, 0, "import = false: nothing imported")
  T.eq(status, 0, "publisher exit status")
  T.ok(lines:find("done"), "the publisher saw our write: " .. lines)
  T.eq(waiting(), 0, "waiting afterwards")
  T.eq(memfds(), before_fds, "memfds afterwards")
  T.eq(sockets(), before_socks, "sockets afterwards")
end

function cases.timeout_leaves_nothing()
  local before, result = sockets(), nil
  local t0 = uv.hrtime()
  assert(rluv.attach(uv, rshare, "luv/none", { endpoint = EP, timeout = 0.2 },
    function(share, msg, code) result = { share, msg, code } end))
  T.eq(waiting(), 1, "waiting at the broker")
  run_loop()
  T.fails("RSHARE_E_NOT_FOUND", "timed out", result[1], result[2], result[3])
  local ms = (uv.hrtime() - t0) / 1e6
  T.ok(ms >= 190 and ms < 5000, "waited about 0.2 s: " .. ms)
  T.eq(waiting(), 0, "waiting after the timeout")
  T.eq(sockets(), before, "sockets after the timeout")
end

function cases.cancel_leaves_nothing()
  local before, called = sockets(), false
  local w = assert(rluv.attach(uv, rshare, "luv/never", { endpoint = EP },
    function() called = true end))
  local t = uv.new_timer()
  local seen
  t:start(50, 0, function()
    seen = waiting()
    T.ok(w:cancel(), "cancel")
    T.ok(w:cancel(), "cancel again")
    t:close()
  end)
  run_loop() -- returns: the cancelled wait holds no handle
  T.eq(seen, 1, "waiting before the cancel")
  T.ok(not called, "a cancelled wait calls nothing")
  T.eq(waiting(), 0, "waiting after the cancel")
  T.eq(sockets(), before, "sockets after the cancel")
end

function cases.operation_by_hand()
  local op = assert(rshare.attach_start("luv/hand", { endpoint = EP }))
  T.ok(type(op:fd()) == "number" and op:fd() >= 0, "fd")
  T.fails("RSHARE_E_AGAIN", "not yet", op:finish())
  local t0 = uv.hrtime()
  T.fails("RSHARE_E_AGAIN", "blocking wait, timed out", op:wait(100))
  T.ok((uv.hrtime() - t0) / 1e6 >= 90, "op:wait(100) waited")
  T.eq(waiting(), 1, "still waiting at the broker")
  T.ok(op:cancel() and op:cancel(), "cancel, idempotent")
  T.fails("RSHARE_E_STALE", "finished", op:finish())
  T.fails("RSHARE_E_INVAL", "bad name", rshare.attach_start("bad//name", { endpoint = EP }))
  T.fails("RSHARE_E_IO", "no broker", rshare.attach_start("x", { endpoint = dir .. "/none" }))
  T.raises("function expected", "no callback", rluv.attach, uv, rshare, "x", { endpoint = EP })
end

-- The broker: `rshare serve` in a process of its own (an embedded one
-- would add its side of each connection to this process's fds), waited
-- for through --ready-fd, as a script would.
local CLI = assert(os.getenv("RSHARE_CLI"), "RSHARE_CLI: the rshare command")
assert(os.execute(("mkfifo %s/ready"):format(dir)))
local p = assert(io.popen(("%s serve --socket %s --ready-fd 3 3>%s/ready >/dev/null 2>&1 & echo $!")
  :format(CLI, EP, dir)))
local broker_pid = p:read("*l")
p:close()
local ready = assert(io.open(dir .. "/ready"))
T.eq(ready:read("*l"), "ready " .. EP, "the broker's ready line")
ready:close()
-- T.run exits with the verdict: stop the broker on the way out.
local exit = os.exit
os.exit = function(code) -- luacheck: ignore
  os.execute("kill " .. broker_pid .. "; rm -rf " .. dir)
  exit(code)
end
T.run(cases)
