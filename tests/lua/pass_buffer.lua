-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- One side of a two-process test, run by pair_launch.c under lua5.4 and
-- luajit (every pairing): the sender allocates a shared buffer and device
-- memory on sim0, fills both (the buffer through its mapping, the device
-- memory through rshare_dm_map's mapping) and sends the device, both blobs
-- and the buffer's memfd over the socket (rshare.send with fds); the
-- receiver imports the buffer with that fd and the device memory, checks
-- the sender's bytes through its own mappings, writes its own and sends the
-- device back; the sender then reads the receiver's bytes. Any failed check
-- exits non-zero.
--   usage: pass_buffer.lua send|recv FD
local rshare = require "rshare"
local role, sock = arg[1], math.floor(assert(tonumber(arg[2]), "FD expected"))
local runtime = jit and "LuaJIT" or _VERSION

local function check(cond, what, ...)
  if not cond then
    io.stderr:write("pass_buffer (", role, ", ", runtime, "): ", what, " ",
                    table.concat({ tostring((...)), select(2, ...) }, " "), "\n")
    os.exit(1)
  end
  return cond, ...
end

local function ok(v, msg, code) return check(v, "failed:", msg, code) end

-- A store of s at off: through the cdata pointer under LuaJIT (zero-copy),
-- the bounds-checked mapped write under Lua 5.4.
local function poke(obj, p, off, s)
  if rshare.backend == "ffi" then
    for i = 1, #s do p[off + i - 1] = s:byte(i) end
  elseif obj.map_write then
    ok(obj:map_write(off, s))
  else
    ok(obj:write(off, s))
  end
end

-- The same for loads.
local function peek(obj, p, off, n)
  if rshare.backend == "ffi" then
    local t = {}
    for i = 1, n do t[i] = string.char(p[off + i - 1]) end
    return table.concat(t)
  elseif obj.map_read then
    return ok(obj:map_read(off, n))
  end
  return ok(obj:read(off, n))
end

if role == "send" then
  local dev = ok(rshare.open("sim0"))
  local pd = ok(dev:alloc_pd())
  local buf = ok(pd:alloc_buffer(8192))
  local bp = ok(buf:ptr())
  local dm = ok(dev:alloc_dm(4096))
  local dp = ok(dm:map())
  local mine = ("sent by %s"):format(runtime)
  poke(buf, bp, 4000, mine)
  poke(dm, dp, 1000, mine)
  local payload = table.concat({ ok(rshare.to_text(ok(pd:export()))),
                                 ok(rshare.to_text(ok(buf:export()))),
                                 ok(rshare.to_text(ok(dm:export()))) }, " ")
  ok(rshare.send(sock, dev, payload, { ok(buf:fd()) }))
  -- The receiver answers with the device and what it wrote.
  local back, theirs = rshare.recv(sock)
  check(back, "recv of the reply failed:", theirs)
  check(peek(buf, bp, 100, #theirs) == theirs, "the receiver's write to the buffer",
        peek(buf, bp, 100, #theirs))
  check(peek(dm, dp, 100, #theirs) == theirs, "the receiver's write to the device memory")
  check(dm:read(100, #theirs) == theirs, "the same through rshare_dm_read")
  ok(back:close())
  ok(dm:free())
  ok(buf:free())
  ok(pd:free())
  ok(dev:close())
elseif role == "recv" then
  local dev, payload, fds = rshare.recv_fds(sock)
  check(dev, "recv_fds failed:", payload, fds)
  check(#fds == 1, "one fd expected, got", #fds)
  local pd_text, buf_text, dm_text = payload:match("^(%S+) (%S+) (%S+)$")
  check(dm_text, "three blobs expected in", payload)
  local pd = ok(dev:import_pd(ok(rshare.from_text(pd_text))))
  local buf = ok(pd:import_buffer(ok(rshare.from_text(buf_text)), fds[1]))
  ok(rshare.close_fd(fds[1])) -- the import mapped it: the fd is no longer needed
  local dm = ok(dev:import_dm(ok(rshare.from_text(dm_text))))
  local bp, dp = ok(buf:ptr()), ok(dm:map())
  local want = "sent by " -- then the sender's runtime
  local got = peek(buf, bp, 4000, 40):gsub("%z+$", "")
  check(got:sub(1, #want) == want, "the sender's bytes in the buffer, got", got)
  check(peek(dm, dp, 1000, #got) == got, "the sender's bytes in the device memory")
  local mine = ("written by %s"):format(runtime)
  poke(buf, bp, 100, mine)
  poke(dm, dp, 100, mine)
  ok(dm:unimport())
  ok(buf:unimport())
  ok(pd:unimport())
  ok(rshare.send(sock, dev, mine))
  ok(dev:close())
else
  check(false, "unknown role", role)
end
print(("pass_buffer %s (%s): ok"):format(role, runtime))
