-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Named shares from Lua (rshare.serve/publish/attach/shares/withdraw) with
-- real processes: the other sides are fresh interpreters (broker_child.lua)
-- started through the shell, meeting this one only by name, through a
-- broker embedded here and through the `rshare serve` daemon.
-- Usage: broker_test.lua MODULE (rshare under lua5.4, rshare.ffi under luajit)
local T = dofile(arg[0]:gsub("[^/]*$", "") .. "testlib.lua")
local MODULE = arg[1] or "rshare"
local rshare = require(MODULE)
local HERE = arg[0]:gsub("[^/]*$", "")
local CHILD = HERE .. "broker_child.lua"
local CLI = assert(os.getenv("RSHARE_CLI"), "RSHARE_CLI: the rshare command")

-- The running interpreter, for the children.
local function interpreter()
  local i = -1
  while arg[i - 1] do i = i - 1 end
  return arg[i]
end
local LUA = interpreter()

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

local function fresh_endpoint()
  local dir = sh("d=$(mktemp -d /tmp/rshare-lua-XXXXXX) && chmod 755 $d && echo $d"):gsub("%s+$", "")
  return dir .. "/b.sock", dir
end

-- A child: returns its pipe, and its pid (the first line it prints).
local function child(prefix, ...)
  local args = { ... }
  for i, a in ipairs(args) do args[i] = ("%q"):format(tostring(a)) end
  local p = assert(io.popen(("sh -c 'echo $$; exec %s %s %s %s 2>&1'"):format(
    prefix or "", LUA, CHILD, MODULE .. " " .. table.concat(args, " "))))
  return p, tonumber(p:read("*l"))
end

local function start_daemon(ep)
  local pid = tonumber(sh(("%s serve --socket %s >/dev/null 2>&1 & echo $!"):format(CLI, ep)))
  for _ = 1, 500 do
    if rshare.shares(ep) then return pid end
    os.execute("sleep 0.01")
  end
  error("the daemon did not come up")
end

local function sleep(s) os.execute("sleep " .. s) end

-- The inode behind an fd of this process (/proc/self/fdinfo), nil when
-- the fd is not open: tells a closed fd from one whose number was reused.
local function inode(fd)
  local f = io.open("/proc/self/fdinfo/" .. fd)
  if not f then return nil end
  local ino = f:read("*a"):match("ino:%s*(%d+)")
  f:close()
  return ino
end

local cases = {}

function cases.embedded_broker_to_another_process()
  local ep, dir = fresh_endpoint()
  local broker = assert(rshare.serve(ep))
  T.eq(broker.endpoint, ep, "endpoint")
  T.fails("RSHARE_E_BUSY", "second broker", rshare.serve(ep))
  local dev = assert(rshare.open("sim0"))
  local pd, var = assert(dev:alloc_pd()), assert(dev:alloc_var())
  local page = assert(var:map())
  assert(page:write(0, "PUBL"))
  local share = assert(rshare.publish("lua/embedded", dev, { pd = pd, var = var, endpoint = ep }))
  local list = assert(rshare.shares(ep))
  T.eq(#list, 1, "one share")
  T.eq(list[1].name, "lua/embedded", "name")
  T.eq(list[1].blobs[1] .. "," .. list[1].blobs[2], "pd,var", "blob kinds")
  T.eq(list[1].persistent, false, "not persistent")
  local p = child(nil, "attach", ep, "lua/embedded", 0)
  T.eq(p:read("*l"), "ok " .. assert(pd:handle()), "the child attached")
  p:close()
  T.eq(page:read(4, 4), "ATCH", "the child's write")
  T.eq(rshare.shares(ep)[1].attaches, 1, "attach count")
  assert(share:withdraw())
  T.eq(#rshare.shares(ep), 0, "withdrawn")
  assert(share:withdraw()) -- idempotent
  assert(var:free()); assert(pd:free()); assert(dev:close())
  assert(broker:stop())
  os.execute("rm -rf " .. dir)
end

-- Every kind travels (rshare_kind_name drives publish, rshare.import_blobs
-- the attach): the MR into the attached PD it is registered on.
function cases.every_kind_travels()
  local ep, dir = fresh_endpoint()
  local broker = assert(rshare.serve(ep))
  local dev = assert(rshare.open("sim0"))
  local pd, var = assert(dev:alloc_pd()), assert(dev:alloc_var())
  local mr, dm = assert(pd:reg_mr(4096)), assert(dev:alloc_dm(4096))
  assert(dm:write(0, "dm bytes"))
  local share = assert(rshare.publish("lua/mem", dev, { pd = pd, var = var, mr = mr, dm = dm,
                                                         endpoint = ep }))
  T.eq(table.concat(assert(rshare.shares(ep))[1].blobs, ","), "pd,var,mr,dm", "blob kinds")
  local p = child(nil, "attach_mem", ep, "lua/mem")
  T.eq(p:read("*l"), ("ok %d 1 %d dm bytes"):format(assert(pd:handle()), assert(mr:attrs()).rkey),
       "the child imported every kind")
  p:close()
  -- Here too, and close() lets go of all of them (the MR before its PD).
  local a = assert(rshare.attach("lua/mem", { endpoint = ep }))
  T.eq(#a.objects, 4, "four objects")
  T.eq(a.mrs[1]:attrs().rkey, assert(mr:attrs()).rkey, "MR rkey")
  local imported_mr = a.mrs[1]
  assert(a:close())
  T.fails("RSHARE_E_STALE", "the attached MR is unimported", imported_mr:handle())
  T.eq(#rshare.split_blobs(assert(mr:export()) .. assert(dm:export())), 2, "split_blobs")
  T.eq(rshare.split_blobs("junk"), nil, "not blobs")
  T.eq(rshare.kind_name(3), "mr", "kind_name")
  T.eq(rshare.kind_name(99), nil, "unknown kind")
  T.eq(rshare.provider_name(2), "sim", "provider_name")
  assert(share:withdraw())
  assert(mr:dereg()); assert(dm:free()); assert(var:free()); assert(pd:free()); assert(dev:close())
  assert(broker:stop())
  os.execute("rm -rf " .. dir)
end

-- A shared buffer by name (since 1.2): its memfd travels with the share.
function cases.buffer_travels()
  local ep, dir = fresh_endpoint()
  local broker = assert(rshare.serve(ep))
  local dev = assert(rshare.open("sim0"))
  local pd = assert(dev:alloc_pd())
  local buf = assert(pd:alloc_buffer(4096))
  assert(buf:write(0, "by name, in place"))
  local share = assert(rshare.publish("lua/buf", dev, { pd = pd, buf = buf, endpoint = ep }))
  T.eq(table.concat(assert(rshare.shares(ep))[1].blobs, ","), "pd,buf", "blob kinds")
  local a = assert(rshare.attach("lua/buf", { endpoint = ep }))
  T.ok(a.buf, "the buffer, imported")
  T.eq(a.buf:read(0, 17), "by name, in place", "the same memory")
  assert(a.buf:write(0, "BY"))
  T.eq(buf:read(0, 2), "BY", "written through the attached buffer")
  T.eq(assert(a.buf:attrs()).rkey, assert(buf:attrs()).rkey, "the same keys")
  assert(a:close())
  -- import = false: the raw blobs, and the memfd for them (the Attached's).
  local raw = assert(rshare.attach("lua/buf", { endpoint = ep, import = false, timeout = 5 }))
  T.eq(raw.buf, nil, "not imported")
  T.eq(#raw.fds, 1, "the buffer's fd, returned")
  local fd = raw.fds[1]
  T.eq(inode(fd), inode(assert(buf:fd())), "the buffer's own memfd")
  local apd = assert(raw.device:import_pd(raw.blobs[1]))
  local mine = assert(apd:import_buffer(raw.blobs[2], fd))
  T.eq(mine:read(0, 2), "BY", "imported by hand, the same memory")
  assert(mine:unimport()); assert(apd:unimport())
  raw:close()
  T.eq(#raw.fds, 0, "closed by close()")
  T.ok(inode(fd) ~= inode(assert(buf:fd())), "the fd is gone")
  raw = assert(rshare.attach("lua/buf", { endpoint = ep, import = false, timeout = 5 }))
  fd = raw.fds[1]
  T.eq(inode(fd), inode(assert(buf:fd())), "a second attach's fd")
  raw = nil -- luacheck: ignore
  collectgarbage(); collectgarbage()
  T.ok(inode(fd) ~= inode(assert(buf:fd())), "closed when the Attached is collected")
  assert(share:withdraw())
  assert(buf:free()); assert(pd:free()); assert(dev:close())
  assert(broker:stop())
  os.execute("rm -rf " .. dir)
end

function cases.two_processes_through_the_daemon_and_late_attach()
  local ep, dir = fresh_endpoint()
  local daemon = start_daemon(ep)
  local pub = child(nil, "publish", ep, "lua/daemon", 0)
  T.eq(pub:read("*l"), "ready", "published")
  local att = child(nil, "attach", ep, "lua/daemon", 0)
  T.ok(att:read("*l"):match("^ok "), "attached")
  att:close()
  T.eq(pub:read("*l"), "done", "the publisher saw the attacher's write")
  pub:close()
  -- The attacher first, waiting for the name.
  att = child(nil, "attach", ep, "lua/late", 20)
  sleep(0.3)
  pub = child(nil, "publish", ep, "lua/late", 0)
  T.eq(pub:read("*l"), "ready", "published late")
  T.ok(att:read("*l"):match("^ok "), "the waiting attacher got it")
  att:close()
  T.eq(pub:read("*l"), "done", "late publisher done")
  pub:close()
  os.execute("kill " .. daemon)
  os.execute("rm -rf " .. dir)
end

function cases.killed_publisher_persistent_share_killed_broker()
  local ep, dir = fresh_endpoint()
  local daemon = start_daemon(ep)
  local pub, pid = child(nil, "publish", ep, "lua/kill", 0)
  T.eq(pub:read("*l"), "ready", "published")
  local share = assert(rshare.attach("lua/kill", { endpoint = ep }))
  os.execute("kill -9 " .. pid)
  pub:close()
  local gone = false
  for _ = 1, 200 do
    local v = rshare.attach("lua/kill", { endpoint = ep, timeout = 0 })
    if not v then gone = true break end
    v:close()
    sleep(0.01)
  end
  T.ok(gone, "the name went with its publisher")
  local page = assert(share.var:map())
  T.eq(page:read(0, 4), "PUBL", "the attacher's page still works")
  assert(page:write(8, "mine"))
  T.eq(page:read(8, 4), "mine", "and takes writes")
  assert(share:close())

  pub = child(nil, "publish", ep, "lua/keep", 1)
  T.eq(pub:read("*l"), "ready", "persistent published")
  pub:close()
  T.eq(rshare.shares(ep)[1].persistent, true, "persistent")
  local kept = assert(rshare.attach("lua/keep", { endpoint = ep }))
  T.eq(assert(kept.var:map()):read(0, 4), "PUBL", "outlived its publisher")
  kept:close()
  assert(rshare.withdraw("lua/keep", ep))
  T.fails("RSHARE_E_NOT_FOUND", "withdrawn twice", rshare.withdraw("lua/keep", ep))

  os.execute("kill -9 " .. daemon)
  sleep(0.2)
  T.fails("RSHARE_E_IO", "broker dead", rshare.shares(ep))
  daemon = start_daemon(ep) -- its stale socket replaced
  T.eq(#assert(rshare.shares(ep)), 0, "restarted")
  os.execute("kill " .. daemon)
  os.execute("rm -rf " .. dir)
end

function cases.other_uid_refused_allowed_one_served()
  if sh("id -u"):match("^0") == nil then
    print("skipped: needs root to run a child as another uid")
    return
  end
  local ep, dir = fresh_endpoint()
  local broker = assert(rshare.serve(ep))
  local dev = assert(rshare.open("sim0"))
  local pd, var = assert(dev:alloc_pd()), assert(dev:alloc_var())
  assert(assert(var:map()):write(0, "PUBL"))
  local closed = assert(rshare.publish("lua/closed", dev, { pd = pd, var = var, endpoint = ep }))
  local open = assert(rshare.publish("lua/open", dev, { pd = pd, var = var, endpoint = ep,
                                                        allow_uids = { 65534 } }))
  local group = assert(rshare.publish("lua/group", dev, { pd = pd, var = var, endpoint = ep,
                                                          allow_gids = { 4242 } }))
  local as_nobody = "setpriv --reuid=65534 --regid=65534 --groups=4242"
  local p = child(as_nobody, "attach", ep, "lua/closed", 0)
  T.ok(p:read("*l"):match("^fail RSHARE_E_PERM"), "another uid refused")
  p:close()
  p = child(as_nobody, "attach", ep, "lua/open", 0)
  T.ok(p:read("*l"):match("^ok "), "a listed uid served")
  p:close()
  p = child("setpriv --reuid=4243 --regid=4243 --groups=4242", "attach", ep, "lua/group", 0)
  T.ok(p:read("*l"):match("^ok "), "a listed group served")
  p:close()
  for _, s in ipairs({ closed, open, group }) do assert(s:withdraw()) end
  assert(var:free()); assert(pd:free()); assert(dev:close())
  assert(broker:stop())
  os.execute("rm -rf " .. dir)
end

-- A broker whose list grows past what it announced at every request (a
-- hostile one: tests/lua/growing_list_broker.py): shares() gives up with
-- RSHARE_E_NOSPACE after a few tries instead of asking forever.
function cases.shares_gives_up_on_an_always_growing_list()
  local ep, dir = fresh_endpoint()
  local count = dir .. "/count"
  local pid = tonumber(sh(("/usr/bin/python3 %sgrowing_list_broker.py %s %s >/dev/null 2>&1 & echo $!")
    :format(HERE, ep, count)))
  for _ = 1, 500 do
    if sh("test -S " .. ep .. " && echo up"):find("up") then break end
    sleep(0.01)
  end
  T.fails("RSHARE_E_NOSPACE", "an always-growing list", rshare.shares(ep))
  local f = assert(io.open(count))
  local served = tonumber(f:read("*a"))
  f:close()
  T.ok(served >= 2 and served <= 8, ("retried a few times only (%d requests)"):format(served))
  os.execute(("kill %d 2>/dev/null"):format(pid))
  os.execute("rm -rf " .. dir)
end

function cases.timeouts_names_and_arguments()
  local ep, dir = fresh_endpoint()
  local broker = assert(rshare.serve(ep))
  local t0 = os.time()
  T.fails("RSHARE_E_NOT_FOUND", "absent within 0.3 s",
          rshare.attach("lua/absent", { endpoint = ep, timeout = 0.3 }))
  T.ok(os.time() - t0 <= 3, "the timeout was honoured")
  local dev = assert(rshare.open("sim0"))
  for _, bad in ipairs({ "", "a b", "/a", "a//b", ("x"):rep(256) }) do
    T.fails("RSHARE_E_INVAL", "bad name " .. bad, rshare.publish(bad, dev, { endpoint = ep }))
  end
  T.raises("device expected", "not a device", rshare.publish, "lua/x", {}, { endpoint = ep })
  local too_many = {}
  for i = 1, 65 do too_many[i] = i end
  T.raises("at most 64", "too many uids", rshare.publish, "lua/x", dev,
           { endpoint = ep, allow_uids = too_many })
  local pd = assert(dev:alloc_pd())
  local s = assert(rshare.publish("lua/raw", dev, { blobs = { assert(pd:export()) }, endpoint = ep }))
  T.fails("RSHARE_E_BUSY", "name taken", rshare.publish("lua/raw", dev, { endpoint = ep }))
  local a = assert(rshare.attach("lua/raw", { endpoint = ep, import = false }))
  T.eq(#a.blobs, 1, "one raw blob")
  T.eq(a.pd, nil, "not imported")
  T.eq(rshare.kind(a.blobs[1]), "pd", "its kind")
  a:close()
  assert(s:withdraw())
  assert(pd:free()); assert(dev:close())
  assert(broker:stop())
  T.ok(type(rshare.default_endpoint()) == "string", "default endpoint")
  os.execute("rm -rf " .. dir)
end

T.run(cases)
