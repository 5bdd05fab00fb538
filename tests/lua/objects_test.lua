-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- rshare/objects.lua, the object layer both modules share, over a fake
-- backend written in Lua: what the real backends cannot show on demand,
-- above all the finalizers in every order a closing Lua state may run them
-- (a device before its objects), and the checks of map objects. The fake
-- logs every release it is asked for, so each test can say exactly which C
-- calls the layer made. Runs under lua5.4 and luajit.
--   usage: objects_test.lua   (LUA_PATH must reach rshare/objects.lua)
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local objects = require "rshare.objects"

local OK, E_INVAL, E_STALE, E_BUSY = 0, -1, -5, -6
local NAMES = { [OK] = "RSHARE_OK", [E_INVAL] = "RSHARE_E_INVAL",
                [E_STALE] = "RSHARE_E_STALE", [E_BUSY] = "RSHARE_E_BUSY" }
local PAGE = 64

-- A fake library: handles are tables, a device counts its live objects.
-- Returns the module built over it and the fake's state: log (the release
-- calls, "what name -> status"), armed (handle -> finalizer, as track()
-- left it) and finalize(h), which runs a handle's finalizer as a garbage
-- collector would: once, and only if it is still armed.
local function fake()
  local F = { log = {}, armed = {}, last = "" }
  local count = 0
  local B = { name = "fake", OK = OK, E_BUSY = E_BUSY, VAR_FLAG_TLP = 1,
              BLOB_MAX = 128, TEXT_MAX = 180, PAYLOAD_MAX = 65536 }

  local function failing(st, what)
    F.last = what
    return st
  end

  local function new_handle(kind, dev)
    if dev and not dev.live then return failing(E_STALE, "alloc: stale device") end
    count = count + 1
    if dev then dev.users = dev.users + 1 end
    return OK, { name = kind .. count, live = true, users = 0, dev = dev }
  end

  local function release(what)
    return function(h)
      local st = OK
      if not h.live then
        st = failing(E_STALE, what .. ": stale")
      elseif h.users > 0 then
        st = failing(E_BUSY, what .. ": busy")
      else
        h.live = false
        if h.dev then h.dev.users = h.dev.users - 1 end
      end
      F.log[#F.log + 1] = ("%s %s -> %s"):format(what, h.name, NAMES[st])
      return st
    end
  end

  local function live_value(h, v)
    if not h.live then return failing(E_STALE, "stale handle") end
    return OK, v
  end

  function B.version() return "0.0.0" end
  function B.last_error() return F.last end
  function B.last_errno() return 0 end
  function B.status_name(st) return NAMES[st] or "RSHARE_E_UNKNOWN" end
  function B.strerror(st) return "text of " .. B.status_name(st) end
  -- The library's names (rshare_kind_name, rshare_provider_name).
  function B.kind_name(k) return ({ "pd", "var", "mr", "dm" })[k] end
  function B.provider_name(p) return ({ "hw", "sim" })[p] end
  function B.guid_string(g) return ("0x%016x"):format(g) end

  function B.device_open() return new_handle("dev") end
  B.device_close = release("close")
  function B.device_name(h) return live_value(h, "fake0") end
  function B.device_fd(h) return live_value(h, 40) end
  function B.device_provider(h) return live_value(h, 2) end
  -- The library names its own duplicate of the fd, as the C one does.
  function B.device_import(fd)
    if fd == 5 then return new_handle("dev") end
    return failing(E_INVAL, ("fd %d is not a device (fd %d refused)"):format(fd + 12, fd + 12))
  end
  -- fds: F.fds is the set of open ones; 40 is the device's.
  F.fds = { [40] = true }
  function B.fd_dup_inheritable(fd)
    if not F.fds[fd] then return nil, "Bad file descriptor", 9 end
    local new = 41
    while F.fds[new] do new = new + 1 end
    F.fds[new] = "inheritable"
    return new
  end
  function B.fd_close(fd)
    if not F.fds[fd] then return nil, "Bad file descriptor", 9 end
    F.fds[fd] = nil
    return true
  end
  function B.pd_alloc(dev) return new_handle("pd", dev) end
  function B.var_alloc(dev) return new_handle("var", dev) end
  B.pd_unimport, B.pd_free = release("unimport"), release("free")
  B.var_unimport, B.var_free = release("unimport"), release("free")
  function B.pd_handle(h) return live_value(h, 7) end
  function B.pd_export(h) return live_value(h, "blob:" .. h.name) end
  function B.pd_import(dev, bytes) return new_handle("pd(" .. bytes .. ")", dev) end
  function B.var_attrs(h)
    if not h.live then return failing(E_STALE, "stale handle") end
    return OK, 3, PAGE, 0
  end

  -- The page: a table from byte number to character, one per VAR.
  function B.var_map(h)
    h.page = h.page or {}
    return live_value(h, h.page)
  end
  function B.var_unmap(h) return live_value(h, nil) end
  function B.devices_count() return OK, 1 end
  function B.devices_get() return OK, "fake0", 0x1234, 2 end
  function B.blob_kind(bytes) return OK, bytes:find("^blob:pd") and 1 or 9 end

  function B.blob_from_text(text)
    if text == "rshare:bad" then return failing(E_INVAL, "bad text") end
    return OK, "blob:" .. text:sub(8)
  end

  function B.page_read(_, page, off, n)
    local out = {}
    for i = off + 1, off + n do out[#out + 1] = page[i] or "\0" end
    return OK, table.concat(out)
  end

  function B.page_write(_, page, off, bytes)
    for i = 1, #bytes do page[off + i] = bytes:sub(i, i) end
    return OK
  end

  function B.track(obj, finalize) F.armed[obj.h] = finalize end
  function B.untrack(obj) F.armed[obj.h] = nil end
  function B.pending_entry(h) return h, h end

  -- Under LuaJIT only userdata honour __len.
  function B.new_map()
    if newproxy then
      local m = newproxy(true)
      return m, getmetatable(m)
    end
    local mt = {}
    return setmetatable({}, mt), mt
  end

  function F.finalize(h)
    local finalize = F.armed[h]
    F.armed[h] = nil
    if finalize then finalize(h) end
  end

  return objects.build(B), F
end

-- The releases made for one handle that succeeded.
local function successes(F, name)
  local n = 0
  for _, line in ipairs(F.log) do
    if line:find(" " .. name .. " -> RSHARE_OK", 1, true) then n = n + 1 end
  end
  return n
end

local cases = {}

-- Whatever order the finalizers run in, every handle is released exactly
-- once and the device is closed, by the last of its objects if need be.
function cases.finalizers_in_any_order()
  local orders = { { 1, 2, 3 }, { 1, 3, 2 }, { 2, 1, 3 }, { 2, 3, 1 }, { 3, 1, 2 }, { 3, 2, 1 } }
  for _, order in ipairs(orders) do
    local rshare, F = fake()
    local dev = assert(rshare.open())
    local pd = assert(dev:alloc_pd())
    local var = assert(dev:alloc_var())
    local handles = { dev.h, pd.h, var.h }
    for _, i in ipairs(order) do F.finalize(handles[i]) end
    local what = table.concat(order, ",")
    for _, h in ipairs(handles) do
      T.eq(h.live, false, h.name .. " released (order " .. what .. ")")
      T.eq(successes(F, h.name), 1, h.name .. " released once (order " .. what .. ")")
    end
    T.eq(next(F.armed), nil, "no finalizer left armed (order " .. what .. ")")
  end
end

-- The device first: it stays pending until its last object goes.
function cases.pending_device_closed_by_its_last_object()
  local rshare, F = fake()
  local dev = assert(rshare.open())
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  F.finalize(dev.h)
  F.finalize(pd.h)
  F.finalize(var.h)
  T.eq(table.concat(F.log, "; "), "close dev1 -> RSHARE_E_BUSY; unimport pd2 -> RSHARE_OK; " ..
       "close dev1 -> RSHARE_E_BUSY; unimport var3 -> RSHARE_OK; close dev1 -> RSHARE_OK",
       "release calls")
  -- Nothing is pending any more: a later release closes nothing.
  local other = assert(rshare.open())
  local pd2 = assert(other:alloc_pd())
  F.log = {}
  T.eq(pd2:free(), true, "free")
  T.eq(table.concat(F.log, "; "), "free pd5 -> RSHARE_OK", "no close after the pending one")
end

-- An explicit release also closes a pending device.
function cases.explicit_release_closes_pending()
  local rshare, F = fake()
  local dev = assert(rshare.open())
  local pd = assert(dev:alloc_pd())
  F.finalize(dev.h)
  T.eq(pd:unimport(), true, "unimport")
  T.eq(dev.h.live, false, "the pending device was closed")
  T.eq(F.log[#F.log], "close dev1 -> RSHARE_OK", "last call")
end

-- A successful release disarms the finalizer; a failed one leaves it armed.
function cases.release_disarms_only_on_success()
  local rshare, F = fake()
  local dev = assert(rshare.open())
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  T.fails("RSHARE_E_BUSY", "close with live objects", dev:close())
  T.ok(F.armed[dev.h], "device finalizer still armed after BUSY")
  pd.h.users = 1 -- make the free fail
  T.fails("RSHARE_E_BUSY", "free of a busy PD", pd:free())
  T.ok(F.armed[pd.h], "PD finalizer still armed after a failed free")
  pd.h.users = 0
  T.eq(pd:free(), true, "free")
  T.eq(F.armed[pd.h], nil, "PD finalizer disarmed")
  local msg = T.fails("RSHARE_E_STALE", "double free", pd:free())
  T.eq(msg, "free: stale", "the message is the library's last error")
  T.eq(var:unimport(), true, "unimport")
  T.eq(dev:close(), true, "close")
  T.eq(next(F.armed), nil, "nothing armed")
  local log = #F.log
  F.finalize(pd.h)
  F.finalize(dev.h)
  T.eq(#F.log, log, "disarmed finalizers make no call")
end

function cases.values_and_conversions()
  local rshare = fake()
  local dev = assert(rshare.open())
  T.eq(dev:name(), "fake0", "name")
  local pd = assert(dev:alloc_pd())
  T.eq(pd:handle(), 7, "handle")
  T.eq(pd:device(), dev, "device")
  local blob = assert(pd:export())
  T.eq(rshare.kind(blob), "pd", "kind name")
  T.eq(rshare.kind("other"), 9, "unknown kind as a number")
  local list = assert(rshare.devices())
  T.eq(#list, 1, "one device")
  T.eq(list[1].guid, "0x0000000000001234", "guid through guid_string")
  T.eq(list[1].provider, "sim", "provider name")
  -- Text blobs go through from_text; its failure is the call's failure.
  local copy = assert(dev:import_pd("rshare:xyz"))
  T.eq(copy.h.name, "pd(blob:xyz)3", "text blob decoded")
  T.fails("RSHARE_E_INVAL", "bad text blob", dev:import_pd("rshare:bad"))
  T.raises("string expected", "import_pd(1)", dev.import_pd, dev, 1)
  T.raises("device expected", "send(0, pd)", rshare.send, 0, pd)
  T.eq(rshare.backend, "fake", "backend name")
  T.eq(rshare.strerror(E_BUSY), "text of RSHARE_E_BUSY", "strerror")
  T.eq(pd:free(), true, "free")
  T.fails("RSHARE_E_STALE", "handle after free", pd:handle())
end

-- tostring() like Python's reprs; released objects print without a C call.
function cases.tostring()
  local rshare, F = fake()
  local dev = assert(rshare.open())
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  T.eq(tostring(dev), "rshare.Device(name=fake0, fd=40, provider=sim)", "device")
  T.eq(tostring(pd), "rshare.PD(handle=7, device=fake0)", "PD")
  T.eq(tostring(var), "rshare.VAR(page_id=3, length=" .. PAGE .. ", device=fake0)", "VAR")
  T.eq(pd:free(), true, "free")
  T.eq(var:unimport(), true, "unimport")
  local m = assert(dev:alloc_var():map())
  T.eq(m:unmap(), true, "unmap")
  T.eq(tostring(m), "rshare.VAR.map(<unmapped>)", "unmapped map")
  T.eq(dev:close(), nil, "close while the map's VAR lives")
  F.last = "marker"
  T.eq(tostring(pd), "rshare.PD(<released>)", "released PD")
  T.eq(tostring(var), "rshare.VAR(<released>)", "released VAR")
  T.eq(rshare.last_error(), "marker", "tostring of released objects asks C nothing")
  -- A handle that went stale behind the object's back shows the status.
  local other = assert(rshare.open())
  other.h.live = false
  T.eq(tostring(other), "rshare.Device(<RSHARE_E_STALE>)", "stale device")
  other.h.live, other.live = true, true
  T.eq(other:close(), true, "close other")
  T.eq(tostring(other), "rshare.Device(<closed>)", "closed device")
end

-- from_fd failures name the caller's fd, never the library's duplicate.
function cases.from_fd_names_the_callers_fd()
  local rshare = fake()
  local msg = T.fails("RSHARE_E_INVAL", "from_fd(3)", rshare.from_fd(3))
  T.eq(msg, "fd 3 is not a device (fd 3 refused)", "message")
  T.ok(assert(rshare.from_fd(5)), "from_fd(5) works")
end

-- inheritable_fd() duplicates the device fd; close_fd() closes it.
function cases.inheritable_fd()
  local rshare, F = fake()
  local dev = assert(rshare.open())
  local fd = assert(dev:inheritable_fd())
  T.eq(fd, 41, "a new fd")
  T.eq(F.fds[fd], "inheritable", "made by fd_dup_inheritable")
  T.eq(rshare.close_fd(fd), true, "close_fd")
  T.eq(F.fds[fd], nil, "closed")
  local msg = T.fails("RSHARE_E_INVAL", "close_fd twice", rshare.close_fd(fd))
  T.ok(msg:find("fd 41: Bad file descriptor", 1, true), "close_fd message: " .. msg)
  T.raises("integer in [", "close_fd(1.5)", rshare.close_fd, 1.5)
  F.fds[40] = nil -- the device's fd vanished: the dup fails
  msg = T.fails("RSHARE_E_IO", "dup of a bad fd", dev:inheritable_fd())
  T.ok(msg:find("cannot duplicate fd 40", 1, true), "dup message: " .. msg)
  T.eq(dev:close(), true, "close")
  T.fails("RSHARE_E_STALE", "inheritable_fd after close", dev:inheritable_fd())
end

function cases.maps()
  local rshare = fake()
  local dev = assert(rshare.open())
  local var = assert(dev:alloc_var())
  local m = assert(var:map())
  T.eq(#m, PAGE, "#m")
  T.eq(tostring(m), "rshare.VAR.map(length=" .. PAGE .. ")", "tostring")
  T.eq(m:write(PAGE - 2, "ab"), true, "write at the end")
  T.eq(m:read(PAGE - 3), "\0ab", "read to the end")
  T.fails("RSHARE_E_INVAL", "write past the end", m:write(PAGE - 1, "ab"))
  T.fails("RSHARE_E_INVAL", "read past the end", m:read(1, PAGE))
  T.fails("RSHARE_E_INVAL", "fractional offset", m:read(0.5, 1))
  -- Only what map() made is a map, even with a map's metatable.
  local forged = newproxy and newproxy(m) or setmetatable({}, getmetatable(m))
  T.raises("not a VAR map object", "forged read", m.read, forged, 0, 1)
  T.raises("not a VAR map object", "forged unmap", m.unmap, forged)
  T.raises("not a VAR map object", "read on a VAR", m.read, var, 0, 1)
  local m2 = assert(var:map())
  T.eq(m:unmap(), true, "unmap through the map")
  for _, each in ipairs({ m, m2 }) do
    T.eq(each:valid(), false, "every map of the VAR is invalid")
    T.fails("RSHARE_E_STALE", "read after unmap", each:read(0, 1))
    T.fails("RSHARE_E_STALE", "len after unmap", each:len())
  end
  local m3 = assert(var:map())
  T.eq(m3:read(PAGE - 2, 2), "ab", "a new map sees the page")
  T.eq(var:free(), true, "free")
  T.fails("RSHARE_E_STALE", "write after free", m3:write(0, "x"))
  T.fails("RSHARE_E_STALE", "map after free", var:map())
end

T.run(cases)
