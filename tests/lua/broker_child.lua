-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- A process of its own for tests/lua/broker_test.lua, meeting the test
-- only by name:
--   broker_child.lua MODULE attach EP NAME TIMEOUT   attach, check the
--       publisher's "PUBL" at 0, write "ATCH" at 4; print "ok <pd handle>",
--       or "fail <code>"
--   broker_child.lua MODULE attach_mem EP NAME   attach a share of every
--       kind; print "ok <pd handle> <#mrs> <mr rkey> <dm bytes 0-7>"
--   broker_child.lua MODULE publish EP NAME PERSISTENT   publish a PD and a
--       VAR with "PUBL" at 0, print "ready"; unless persistent, wait (up to
--       20 s) for "ATCH" at 4, then print "done"
--   broker_child.lua MODULE publish_buf EP NAME   publish a PD and a shared
--       buffer with "PUBL" at 0, print "ready", wait (up to 20 s) for "ATCH"
--       at 4 in the buffer, then print "done"
local rshare = require(arg[1])
local mode, ep, name = arg[2], arg[3], arg[4]

if mode == "attach" then
  local timeout = tonumber(arg[5])
  local share, msg, code = rshare.attach(name, { endpoint = ep, timeout = timeout >= 0 and timeout or nil })
  if not share then
    print("fail " .. tostring(code) .. " " .. tostring(msg))
    return
  end
  local page = assert(share.var:map())
  assert(page:read(0, 4) == "PUBL", "the publisher's word")
  assert(page:write(4, "ATCH"))
  print("ok " .. assert(share.pd:handle()))
  io.stdout:flush()
  assert(share:close())
elseif mode == "attach_mem" then
  local share = assert(rshare.attach(name, { endpoint = ep, timeout = 0 }))
  assert(#share.pds == 1 and #share.vars == 1 and #share.dms == 1, "one of each")
  assert(share.mrs[1]:device() == share.pd:device(), "the MR lives in the attached PD")
  print(("ok %d %d %d %s"):format(assert(share.pd:handle()), #share.mrs,
                                  assert(share.mrs[1]:attrs()).rkey, assert(share.dms[1]:read(0, 8))))
  io.stdout:flush()
  assert(share:close())
elseif mode == "publish_buf" then
  local dev = assert(rshare.open("sim0"))
  local pd = assert(dev:alloc_pd())
  local buf = assert(pd:alloc_buffer(4096))
  assert(buf:write(0, "PUBL"))
  local share = assert(rshare.publish(name, dev, { pd = pd, buf = buf, endpoint = ep }))
  print("ready")
  io.stdout:flush()
  for _ = 1, 400 do
    if buf:read(4, 4) == "ATCH" then break end
    os.execute("sleep 0.05")
  end
  print(buf:read(4, 4) == "ATCH" and "done" or "no attacher")
  io.stdout:flush()
  share:withdraw()
  assert(buf:free())
elseif mode == "publish" then
  local dev = assert(rshare.open("sim0"))
  local pd, var = assert(dev:alloc_pd()), assert(dev:alloc_var())
  local page = assert(var:map())
  assert(page:write(0, "PUBL"))
  local share = assert(rshare.publish(name, dev, { pd = pd, var = var, endpoint = ep,
                                                   persistent = arg[5] == "1" }))
  print("ready")
  io.stdout:flush()
  if arg[5] == "1" then os.exit(0) end
  for _ = 1, 400 do
    if page:read(4, 4) == "ATCH" then break end
    os.execute("sleep 0.05")
  end
  print(page:read(4, 4) == "ATCH" and "done" or "no attacher")
  share:withdraw()
end
