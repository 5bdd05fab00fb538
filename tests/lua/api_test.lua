-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- The rshare Lua API, function by function and error by error, on the
-- simulated device. The same script runs under lua5.4 (rshare over SWIG) and
-- luajit (rshare.ffi), which is what keeps the two modules' APIs identical.
--   usage: api_test.lua <module name>
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local modname = arg[1] or "rshare"
local rshare = require(modname)

local function sim()
  return assert(rshare.open("sim0"))
end

-- Flip one byte in the middle of a blob (keeps its length).
local function corrupt(blob)
  local i = math.floor(#blob / 2)
  return blob:sub(1, i - 1) .. string.char((blob:byte(i) + 1) % 256) .. blob:sub(i + 1)
end

local cases = {}

function cases.library()
  T.ok(rshare.version():match("^%d+%.%d+%.%d+$"), "version format")
  T.eq(rshare.status_name(-5), "RSHARE_E_STALE", "status_name")
  T.eq(rshare.status_name(0), "RSHARE_OK", "status_name(0)")
  T.eq(rshare.status_name(12345), "RSHARE_E_UNKNOWN", "unknown status")
  T.ok(#rshare.strerror(-5) > 0, "strerror text")
  T.eq(type(rshare.last_error()), "string", "last_error type")
  T.eq(math.type and math.type(rshare.last_errno()) or "integer",
       "integer", "last_errno is an integer")
  T.eq(rshare.VAR_FLAG_TLP, 1, "VAR_FLAG_TLP")
  T.eq(rshare.BLOB_MAX, 128, "BLOB_MAX")
  T.raises("number expected", "status_name(nil)", rshare.status_name, nil)
end

function cases.devices()
  local list = assert(rshare.devices())
  local found
  for i, d in ipairs(list) do
    T.eq(d.index, i - 1, "device index")
    T.ok(d.guid:match("^0x%x+$") and #d.guid == 18, "device guid format " .. d.guid)
    if d.name == "sim0" then found = d end
  end
  T.ok(found, "sim0 listed")
  T.eq(found.provider, "sim", "sim0 provider")
end

function cases.open_and_describe()
  local dev = sim()
  local fd = dev:fd()
  T.ok(fd >= 0, "fd")
  T.eq(math.type and math.type(fd) or "integer", "integer", "fd type")
  T.eq(dev:name(), "sim0", "name")
  T.eq(dev:provider(), "sim", "provider")
  T.ok(dev:guid():match("^0x%x+$") and #dev:guid() == 18, "guid format")
  T.fails("RSHARE_E_NODEV", "open(nope)", rshare.open("no-such-device"))
  T.raises("string expected", "open(42)", rshare.open, 42)
  -- The default device is sim0 on a machine without RDMA.
  local default = assert(rshare.open())
  T.ok(default:name() ~= nil, "default device has a name")
  T.eq(default:close(), true, "close default")
  T.eq(dev:close(), true, "close")
end

function cases.from_fd_shares_the_table()
  local dev = sim()
  local peer = assert(rshare.from_fd(dev:fd()))
  T.eq(peer:guid(), dev:guid(), "same guid through the fd")
  local pd = assert(dev:alloc_pd())
  local copy = assert(peer:import_pd(pd:export()))
  T.eq(copy:handle(), pd:handle(), "same PD handle in the shared table")
  T.ok(peer:fd() ~= dev:fd(), "the imported fd is a dup")
  T.fails("RSHARE_E_INVAL", "from_fd(-1)", rshare.from_fd(-1))
  T.raises("number expected", "from_fd('x')", rshare.from_fd, "x")
  T.raises("integer in [", "from_fd(1.5)", rshare.from_fd, 1.5)
  -- Beyond a C int, an fd would be truncated to another one (2^32 to 0).
  T.raises("integer in [-2147483648, 2147483647] expected", "from_fd(2^32)", rshare.from_fd, 2^32)
  T.eq(copy:unimport(), true, "unimport copy")
  T.eq(pd:free(), true, "free")
  T.eq(peer:close(), true, "close peer")
  T.eq(dev:close(), true, "close dev")
end

function cases.pd_lifecycle()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  T.eq(pd:device(), dev, "pd:device()")
  local handle = pd:handle()
  T.eq(math.type and math.type(handle) or "integer", "integer", "handle type")
  local blob = assert(pd:export())
  T.ok(#blob > 0 and #blob <= rshare.BLOB_MAX, "blob size")
  T.eq(rshare.kind(blob), "pd", "kind")

  local info = assert(rshare.inspect(blob))
  T.eq(info.kind, "pd", "inspect kind")
  T.eq(info.provider, "sim", "inspect provider")
  T.eq(info.handle, handle, "inspect handle")
  T.eq(info.guid, dev:guid(), "inspect guid")

  local text = assert(rshare.to_text(blob))
  T.eq(text:sub(1, 7), "rshare:", "text prefix")
  T.ok(#text < rshare.TEXT_MAX, "text size")
  T.eq(rshare.from_text(text), blob, "text round trip")

  local imported = assert(dev:import_pd(blob))
  T.eq(imported:handle(), handle, "imported handle")
  local from_text = assert(dev:import_pd(text))
  T.eq(from_text:handle(), handle, "imported from text")
  T.eq(imported:unimport(), true, "unimport")
  T.fails("RSHARE_E_STALE", "double unimport", imported:unimport())
  T.fails("RSHARE_E_STALE", "handle after unimport", imported:handle())
  T.eq(from_text:unimport(), true, "unimport text copy")

  T.eq(pd:free(), true, "free")
  T.fails("RSHARE_E_STALE", "double free", pd:free())
  T.fails("RSHARE_E_STALE", "unimport after free", pd:unimport())
  T.fails("RSHARE_E_STALE", "handle after free", pd:handle())
  T.fails("RSHARE_E_STALE", "export after free", pd:export())
  T.fails("RSHARE_E_NOT_FOUND", "import after free", dev:import_pd(blob))
  T.eq(dev:close(), true, "close")
end

function cases.pd_freed_through_another_handle()
  local dev = sim()
  local peer = assert(rshare.from_fd(dev:fd()))
  local pd = assert(dev:alloc_pd())
  local copy = assert(peer:import_pd(pd:export()))
  T.eq(copy:free(), true, "free through the copy")
  -- The original handle stays live: free says NOT_FOUND, unimport releases.
  T.fails("RSHARE_E_NOT_FOUND", "free of a destroyed PD", pd:free())
  T.eq(pd:unimport(), true, "unimport after NOT_FOUND")
  T.fails("RSHARE_E_STALE", "unimport twice", pd:unimport())
  T.eq(peer:close(), true, "close peer")
  T.eq(dev:close(), true, "close dev")
end

function cases.blob_errors()
  local dev, other = sim(), sim()
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  local pd_blob, var_blob = pd:export(), var:export()
  T.eq(rshare.kind(var_blob), "var", "var kind")
  T.fails("RSHARE_E_BLOB_KIND", "PD blob as VAR", dev:import_var(pd_blob))
  T.fails("RSHARE_E_BLOB_KIND", "VAR blob as PD", dev:import_pd(var_blob))
  T.fails("RSHARE_E_BLOB_CORRUPT", "corrupt PD blob", dev:import_pd(corrupt(pd_blob)))
  T.fails("RSHARE_E_BLOB_CORRUPT", "corrupt kind", rshare.kind(corrupt(pd_blob)))
  T.fails("RSHARE_E_BLOB_CORRUPT", "corrupt inspect", rshare.inspect(corrupt(var_blob)))
  T.fails("RSHARE_E_BLOB_CORRUPT", "corrupt to_text", rshare.to_text(corrupt(var_blob)))
  T.fails("RSHARE_E_BLOB_CORRUPT", "garbage blob", dev:import_pd(("x"):rep(40)))
  T.fails("RSHARE_E_DEVICE_MISMATCH", "PD into another sim0", other:import_pd(pd_blob))
  T.fails("RSHARE_E_DEVICE_MISMATCH", "VAR into another sim0", other:import_var(var_blob))
  T.fails("RSHARE_E_INVAL", "text without prefix", rshare.from_text("hello"))
  T.fails("RSHARE_E_INVAL", "text with bad base64", rshare.from_text("rshare:*&^%"))
  T.fails("RSHARE_E_INVAL", "bad text as a blob", dev:import_pd("rshare:*&^%"))
  T.raises("string expected", "import_pd(42)", dev.import_pd, dev, 42)
  T.raises("string expected", "to_text(nil)", rshare.to_text, nil)
  T.raises("string expected", "from_text({})", rshare.from_text, {})
  T.eq(pd:free(), true, "free pd")
  T.eq(var:free(), true, "free var")
  T.eq(dev:close(), true, "close")
  T.eq(other:close(), true, "close other")
end

function cases.var_lifecycle()
  local dev = sim()
  local var = assert(dev:alloc_var())
  T.eq(var:device(), dev, "var:device()")
  local attrs = assert(var:attrs())
  T.eq(attrs.length, 4096, "length")
  T.ok(attrs.page_id >= 0 and attrs.mmap_off >= 0, "page id and offset")
  local blob = assert(var:export())
  local info = assert(rshare.inspect(blob))
  T.eq(info.kind, "var", "inspect kind")
  T.eq(info.page_id, attrs.page_id, "inspect page_id")
  T.eq(info.length, attrs.length, "inspect length")
  T.eq(info.mmap_off, attrs.mmap_off, "inspect mmap_off")

  local copy = assert(dev:import_var(rshare.to_text(blob)))
  T.eq(copy:attrs().page_id, attrs.page_id, "imported page id")
  T.eq(copy:unimport(), true, "unimport")
  T.fails("RSHARE_E_STALE", "double unimport", copy:unimport())
  T.fails("RSHARE_E_STALE", "attrs after unimport", copy:attrs())
  T.fails("RSHARE_E_STALE", "map after unimport", copy:map())

  local tlp = assert(dev:alloc_var(rshare.VAR_FLAG_TLP))
  T.eq(tlp:free(), true, "free TLP var")
  T.fails("RSHARE_E_INVAL", "unknown VAR flags", dev:alloc_var(0x80))
  T.raises("integer in [0, 4294967295] expected", "negative VAR flags", dev.alloc_var, dev, -1)
  T.raises("integer in [0, 4294967295] expected", "VAR flags past 32 bits", dev.alloc_var, dev,
           2^32 + 1)

  T.eq(var:free(), true, "free")
  T.fails("RSHARE_E_STALE", "double free", var:free())
  T.fails("RSHARE_E_STALE", "export after free", var:export())
  T.fails("RSHARE_E_STALE", "unmap after free", var:unmap())
  T.fails("RSHARE_E_NOT_FOUND", "import after free", dev:import_var(blob))
  T.eq(dev:close(), true, "close")
end

function cases.var_map()
  local dev = sim()
  local var = assert(dev:alloc_var())
  local m = assert(var:map())
  T.eq(#m, 4096, "#m")
  T.eq(m:len(), 4096, "m:len()")
  T.eq(m:write(0, "hello"), true, "write")
  T.eq(m:read(0, 5), "hello", "read back")
  T.eq(m:write(4091, "world"), true, "write at the end")
  T.eq(#m:read(), 4096, "read the whole page")
  T.eq(m:read(4091), "world", "read to the end")
  T.eq(m:read(4096, 0), "", "empty read at the end")

  -- Another handle on the same page (same process) sees the write.
  local copy = assert(dev:import_var(var:export()))
  local m2 = assert(copy:map())
  T.eq(m2:read(0, 5), "hello", "shared page")
  T.eq(m2:write(5, "!"), true, "write through the copy")
  T.eq(m:read(0, 6), "hello!", "seen through the first map")

  -- Bounds.
  T.fails("RSHARE_E_INVAL", "read past the end", m:read(4090, 10))
  T.fails("RSHARE_E_INVAL", "read offset past the end", m:read(4097, 0))
  T.fails("RSHARE_E_INVAL", "negative offset", m:read(-1, 1))
  T.fails("RSHARE_E_INVAL", "fractional length", m:read(0, 1.5))
  T.fails("RSHARE_E_INVAL", "write past the end", m:write(4095, "ab"))
  T.fails("RSHARE_E_INVAL", "write at a negative offset", m:write(-1, "a"))
  T.raises("string expected", "write a number", m.write, m, 0, 42)

  -- Unmap invalidates every map object of that VAR; map() maps again.
  T.eq(var:unmap(), true, "unmap")
  T.eq(var:unmap(), true, "unmap is idempotent")
  T.fails("RSHARE_E_STALE", "read after unmap", m:read(0, 1))
  T.fails("RSHARE_E_STALE", "write after unmap", m:write(0, "x"))
  T.eq(m:valid(), false, "valid() after unmap")
  local m3 = assert(var:map())
  T.eq(m3:read(0, 6), "hello!", "remapped")
  T.eq(m3:unmap(), true, "m:unmap()")
  T.fails("RSHARE_E_STALE", "read after m:unmap", m3:read(0, 1))

  -- Unimport and free invalidate too.
  T.eq(copy:unimport(), true, "unimport copy")
  T.fails("RSHARE_E_STALE", "read after unimport", m2:read(0, 1))
  local m4 = assert(var:map())
  T.eq(var:free(), true, "free")
  T.fails("RSHARE_E_STALE", "read after free", m4:read(0, 1))
  T.fails("RSHARE_E_STALE", "len after free", m4:len())
  T.fails("RSHARE_E_STALE", "map after free", var:map())
  T.eq(dev:close(), true, "close")
end

function cases.device_close()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  T.fails("RSHARE_E_BUSY", "close with live objects", dev:close())
  T.eq(dev:name(), "sim0", "still open after BUSY")
  T.eq(pd:free(), true, "free pd")
  T.fails("RSHARE_E_BUSY", "close with a live VAR", dev:close())
  T.eq(var:unimport(), true, "unimport var")
  T.eq(dev:close(), true, "close")
  T.fails("RSHARE_E_STALE", "double close", dev:close())
  T.fails("RSHARE_E_STALE", "fd after close", dev:fd())
  T.fails("RSHARE_E_STALE", "name after close", dev:name())
  T.fails("RSHARE_E_STALE", "guid after close", dev:guid())
  T.fails("RSHARE_E_STALE", "provider after close", dev:provider())
  T.fails("RSHARE_E_STALE", "alloc_pd after close", dev:alloc_pd())
  T.fails("RSHARE_E_STALE", "alloc_var after close", dev:alloc_var())
end

function cases.channel_errors()
  local dev = sim()
  T.fails("RSHARE_E_INVAL", "send(-1)", rshare.send(-1, dev, "x"))
  T.fails("RSHARE_E_INVAL", "recv(-1)", rshare.recv(-1))
  -- The device fd is a memfd, not a socket.
  T.fails("RSHARE_E_INVAL", "send on a non-socket", rshare.send(dev:fd(), dev, "x"))
  T.fails("RSHARE_E_INVAL", "recv on a non-socket", rshare.recv(dev:fd()))
  T.raises("device expected", "send(fd, nil)", rshare.send, 0, nil)
  T.raises("number expected", "recv('x')", rshare.recv, "x")
  T.raises("integer in [", "recv(2^33)", rshare.recv, 2^33)
  T.raises("integer in [", "send(2^33)", rshare.send, 2^33, dev, "x")
  T.eq(dev:close(), true, "close")
  T.fails("RSHARE_E_STALE", "send a closed device", rshare.send(0, dev, "x"))
end

function cases.tostring_like_python_reprs()
  local dev = sim()
  local fd = dev:fd()
  T.eq(tostring(dev), ("rshare.Device(name=sim0, fd=%d, provider=sim)"):format(fd), "device")
  local pd = assert(dev:alloc_pd())
  T.eq(tostring(pd), ("rshare.PD(handle=%d, device=sim0)"):format(pd:handle()), "PD")
  local var = assert(dev:alloc_var())
  local attrs = assert(var:attrs())
  T.eq(tostring(var), ("rshare.VAR(page_id=%d, length=4096, device=sim0)"):format(attrs.page_id),
       "VAR")
  local m = assert(var:map())
  T.eq(tostring(m), "rshare.VAR.map(length=4096)", "map")
  T.eq(pd:free(), true, "free pd")
  T.eq(var:free(), true, "free var")
  T.fails("RSHARE_E_NODEV", "set a marker error", rshare.open("marker-device"))
  local marker = rshare.last_error()
  T.eq(tostring(pd), "rshare.PD(<released>)", "released PD")
  T.eq(tostring(var), "rshare.VAR(<released>)", "released VAR")
  T.eq(tostring(m), "rshare.VAR.map(<unmapped>)", "map of a freed VAR")
  T.eq(dev:close(), true, "close")
  T.eq(tostring(dev), "rshare.Device(<closed>)", "closed device")
  T.eq(rshare.last_error(), marker, "printing released objects leaves last_error alone")
end

-- The O_CLOEXEC bit of an fd, from /proc/self/fdinfo (flags are octal).
local function cloexec(fd)
  local f = assert(io.open("/proc/self/fdinfo/" .. fd))
  local flags = f:read("*a"):match("flags:%s*(%d+)")
  f:close()
  return math.floor(tonumber(flags, 8) / 0x80000) % 2 == 1 -- O_CLOEXEC = 02000000
end

function cases.inheritable_fd()
  local dev = sim()
  T.eq(cloexec(dev:fd()), true, "the device's own fd is close-on-exec")
  local fd = assert(dev:inheritable_fd())
  T.eq(math.type and math.type(fd) or "integer", "integer", "fd type")
  T.ok(fd >= 3 and fd ~= dev:fd(), "a new fd: " .. fd)
  T.eq(cloexec(fd), false, "the duplicate is inherited across exec")
  -- It is the same device context.
  local peer = assert(rshare.from_fd(fd))
  T.eq(peer:guid(), dev:guid(), "same device through the duplicate")
  T.eq(peer:close(), true, "close peer")
  T.eq(rshare.close_fd(fd), true, "close_fd")
  T.fails("RSHARE_E_INVAL", "close_fd twice", rshare.close_fd(fd))
  T.fails("RSHARE_E_INVAL", "close_fd(-1)", rshare.close_fd(-1))
  T.raises("number expected", "close_fd('x')", rshare.close_fd, "x")
  T.raises("integer in [", "close_fd(2^32 + fd)", rshare.close_fd, 2^32 + fd)
  T.eq(dev:close(), true, "close")
  T.fails("RSHARE_E_STALE", "inheritable_fd after close", dev:inheritable_fd())
end

-- The library imports its own duplicate of the fd; its messages must name
-- the fd the caller passed. Standard output (a pipe or a terminal) is open
-- and no device context.
function cases.from_fd_errors_name_the_callers_fd()
  local msg = T.fails("RSHARE_E_NODEV", "from_fd(1)", rshare.from_fd(1))
  T.ok(msg:find("fd 1 ", 1, true), "the message names fd 1: " .. msg)
  T.ok(not msg:find("fd [02-9]") and not msg:find("fd 1%d"), "and no other fd: " .. msg)
  local dev = sim()
  local fd = assert(dev:inheritable_fd())
  T.eq(rshare.close_fd(fd), true, "close_fd")
  msg = T.fails("RSHARE_E_INVAL", "from_fd(a closed fd)", rshare.from_fd(fd))
  T.ok(msg:find("fd " .. fd .. " ", 1, true) or msg:find("fd " .. fd .. "$"),
       "the message names fd " .. fd .. ": " .. msg)
  T.eq(dev:close(), true, "close")
end

-- Finalizers only release this process's handle: the shared objects survive.
function cases.gc_never_destroys()
  local dev = sim()
  local peer = assert(rshare.from_fd(dev:fd()))
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  local pd_blob, var_blob = pd:export(), var:export()
  pd, var = nil, nil
  T.full_gc()
  local pd2 = assert(peer:import_pd(pd_blob))
  local var2 = assert(peer:import_var(var_blob))
  -- The finalizers released dev's handles, so dev closes without BUSY.
  T.eq(dev:close(), true, "close after the objects were collected")
  T.eq(pd2:free(), true, "free pd")
  T.eq(var2:free(), true, "free var")
  T.eq(peer:close(), true, "close peer")
end

-- Objects keep their device alive, whatever is dropped first.
function cases.gc_any_order()
  for order = 1, 4 do
    local dev = sim()
    local fd = dev:fd()
    local peer = assert(rshare.from_fd(fd))
    local pd = assert(dev:alloc_pd())
    local var = assert(dev:alloc_var())
    local m = assert(var:map())
    m:write(0, "order" .. order)
    if order == 1 then dev = nil end
    if order == 2 then var, pd = nil, nil end
    if order == 3 then var, dev = nil, nil end
    T.full_gc()
    -- Whatever survives still works, through the device it keeps alive.
    if pd then T.ok(pd:handle() >= 0, "pd alive") end
    if pd then T.eq(pd:device():name(), "sim0", "device kept alive") end
    T.eq(m:read(0, 6), "order" .. order, "map kept alive")
    dev, pd, var, m = nil, nil, nil, nil
    T.full_gc()
    -- Everything is released now, the device too: its fd is closed, so it
    -- cannot be imported any more (nothing else opened an fd meanwhile).
    local gone, msg = rshare.from_fd(fd)
    T.eq(gone, nil, "the collected device's fd still imports: " .. tostring(msg))
    T.eq(peer:close(), true, "close peer")
  end
end

-- An explicit release disarms the finalizer: it does not run a second time.
-- A second release would fail with STALE and overwrite rshare.last_error().
function cases.gc_after_explicit_release()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  local var = assert(dev:alloc_var())
  local other = sim()
  T.eq(pd:free(), true, "free pd")
  T.eq(var:unimport(), true, "unimport var")
  T.eq(other:close(), true, "close other")
  T.fails("RSHARE_E_NODEV", "set a marker error", rshare.open("marker-device"))
  local marker = rshare.last_error()
  pd, var, other = nil, nil, nil
  T.full_gc()
  T.eq(rshare.last_error(), marker, "no finalizer ran on a released handle")
  T.eq(dev:close(), true, "close")
end

-- Since 1.1 -------------------------------------------------------------

function cases.version_info_and_caps()
  local v = rshare.version_info()
  T.eq(("%d.%d.%d"):format(v.major, v.minor, v.patch), rshare.version(), "version_info")
  T.eq(v.minor, 2, "minor version")
  local dev = sim()
  local caps = assert(dev:caps())
  T.ok(caps.pd and caps.var and caps.mr and caps.dm, "sim0 has PD, VAR, MR, DM")
  T.eq(caps.native, false, "sim0 has no native objects")
  T.eq(caps.mask, 15 + 64 + 128, "caps mask (PD, VAR, MR, DM, buffers, DM mapped)")
  T.ok(caps.buf and caps.dm_map, "caps.buf, caps.dm_map")
  T.fails("RSHARE_E_UNSUPPORTED", "device native", dev:native_address())
  local pd = assert(dev:alloc_pd())
  T.fails("RSHARE_E_UNSUPPORTED", "pd native", pd:native_address())
  local var = assert(dev:alloc_var())
  T.eq(var:handle(), assert(rshare.inspect(var:export())).handle, "var handle")
  T.fails("RSHARE_E_UNSUPPORTED", "var native", var:native_address())
  assert(var:free())
  T.fails("RSHARE_E_STALE", "stale var handle", var:handle())
  assert(pd:free())
  assert(dev:close())
end

function cases.memory_regions()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  local mr = assert(pd:reg_mr(4096, rshare.ACCESS_LOCAL_WRITE + rshare.ACCESS_REMOTE_READ))
  local a = assert(mr:attrs())
  T.eq(a.length, 4096, "MR length")
  T.eq(a.access, 5, "MR access")
  T.ok(tostring(mr):match("^rshare%.MR%(length=4096"), "tostring " .. tostring(mr))
  T.ok(mr:write(100, "local bytes"), "write the MR's memory")
  T.eq(mr:read(100, 11), "local bytes", "read the MR's memory")
  T.fails("RSHARE_E_INVAL", "read past the end", mr:read(4090, 7))
  T.fails("RSHARE_E_BUSY", "free a PD with an MR", pd:free())
  T.fails("RSHARE_E_BUSY", "unimport a PD with an MR", pd:unimport())
  local blob = assert(mr:export())
  local info = assert(rshare.inspect(blob))
  T.eq(info.kind, "mr", "inspect kind")
  T.eq(info.lkey, a.lkey, "inspect lkey")
  T.eq(info.pd_handle, pd:handle(), "inspect pd_handle")
  T.eq(rshare.kind(blob), "mr", "kind")
  local again = assert(pd:import_mr(rshare.to_text(blob)))
  T.eq(again:handle(), mr:handle(), "imported MR handle")
  T.eq(again:attrs().rkey, a.rkey, "imported MR rkey")
  T.fails("RSHARE_E_INVAL", "an imported MR has no local memory", again:read(0, 1))
  local other = assert(dev:alloc_pd())
  T.fails("RSHARE_E_DEVICE_MISMATCH", "MR into another PD", other:import_mr(blob))
  T.fails("RSHARE_E_BLOB_KIND", "a PD blob as MR", other:import_mr(other:export()))
  T.raises("integer in [1, ", "reg_mr(0)", pd.reg_mr, pd, 0)
  T.fails("RSHARE_E_INVAL", "unknown access", pd:reg_mr(16, 256))
  assert(again:unimport())
  assert(mr:dereg())
  T.fails("RSHARE_E_STALE", "dereg twice", mr:dereg())
  T.fails("RSHARE_E_NOT_FOUND", "import after dereg", pd:import_mr(blob))
  assert(other:free())
  assert(pd:free())
  assert(dev:close())
end

function cases.device_memory()
  local dev = sim()
  local dm = assert(dev:alloc_dm(256))
  T.eq(dm:length(), 256, "DM length")
  assert(dm:write(10, "hello"))
  T.eq(dm:read(10, 5), "hello", "DM read")
  T.eq(dm:read(0, 0), "", "empty read")
  T.fails("RSHARE_E_INVAL", "write past the end", dm:write(252, "12345"))
  T.eq(dm:read(252, 4), ("\0"):rep(4), "nothing written past the end")
  T.fails("RSHARE_E_INVAL", "read past the end", dm:read(256, 1))
  T.raises("integer in [0, ", "negative offset", dm.read, dm, -1, 1)
  local blob = assert(dm:export())
  T.eq(assert(rshare.inspect(blob)).length, 256, "inspect DM length")
  local other = assert(dev:import_dm(blob))
  T.eq(other:read(10, 5), "hello", "the same memory through an import")
  T.eq(other:handle(), dm:handle(), "DM handle")
  assert(other:unimport())
  assert(dm:free())
  T.fails("RSHARE_E_NOT_FOUND", "import after free", dev:import_dm(blob))
  T.fails("RSHARE_E_STALE", "read after free", dm:read(0, 1))
  assert(dev:close())
end

function cases.device_memory_mapped()
  local dev = sim()
  T.ok(assert(dev:caps()).dm_map, "sim0 maps device memory")
  local dm = assert(dev:alloc_dm(8192))
  assert(dm:write(100, "copied"))
  local p, n = dm:map()
  T.ok(p ~= nil, "mapped")
  T.eq(n, 8192, "map length")
  local p2 = assert(dm:map())
  T.ok(p2 == p, "the same address until unmap")
  T.eq(dm:map_read(100, 6), "copied", "a copy seen through the mapping")
  assert(dm:map_write(8188, "last"))
  T.eq(dm:read(8188, 4), "last", "a store seen by the copy path")
  T.fails("RSHARE_E_INVAL", "map_read past the end", dm:map_read(8189, 4))
  T.fails("RSHARE_E_INVAL", "map_write past the end", dm:map_write(8192, "x"))
  T.fails("RSHARE_E_INVAL", "negative offset", dm:map_read(-1, 1))
  T.eq(dm:read(8188, 4), "last", "nothing written past the end")
  -- Another handle (its own import) maps the same memory.
  local other = assert(dev:import_dm(assert(dm:export())))
  local q = assert(other:map())
  if rshare.backend == "ffi" then
    -- LuaJIT: the mapping itself, a uint8_t * cdata (zero-copy).
    T.eq(p[100], string.byte("c"), "zero-copy load")
    q[101] = string.byte("O")
    T.eq(dm:read(100, 2), "cO", "a store through the other handle's pointer")
    T.ok(p ~= q, "each handle its own mapping")
  else
    T.eq(type(p), "userdata", "Lua 5.4: a light userdata, read through map_read")
    assert(other:map_write(100, "CO"))
    T.eq(dm:map_read(100, 2), "CO", "a store through the other handle's mapping")
  end
  assert(other:unmap())
  assert(other:unmap()) -- nothing mapped: a no-op
  T.eq(other:map_read(100, 2), dm:map_read(100, 2), "map_read maps again")
  assert(other:unimport())
  assert(dm:free())
  T.fails("RSHARE_E_STALE", "map after free", dm:map())
  T.fails("RSHARE_E_STALE", "map_read after free", dm:map_read(0, 1))
  assert(dev:close())
end

function cases.gc_releases_mr_and_pd_in_any_order()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  local mr = assert(pd:reg_mr(64))
  pd, mr = nil, nil
  T.full_gc()
  T.full_gc()
  -- Only unimported: the registration lives on, and the device can close.
  T.ok(dev:close(), "device closes after the MR and PD were collected")
end

function cases.mr_unimported_here_keeps_its_memory()
  local dev = sim()
  local pd = assert(dev:alloc_pd())
  local held = setmetatable({}, { __mode = "k" })
  local kept = assert(pd:reg_mr(64))
  local blob = assert(kept:export())
  held[kept.mem] = "unimported"
  assert(kept:unimport())
  local dropped = assert(pd:reg_mr(64))
  local dropped_blob = assert(dropped:export())
  held[dropped.mem] = "collected"
  local gone = assert(pd:reg_mr(64))
  held[gone.mem] = "deregistered"
  assert(gone:dereg())
  kept, dropped, gone = nil, nil, nil
  T.full_gc()
  T.full_gc()
  -- The registrations of the first two live on: their memory must too.
  local left = {}
  for _, why in pairs(held) do left[why] = true end
  T.ok(left.unimported and left.collected, "memory of live registrations kept")
  T.ok(not left.deregistered, "memory let go after deregistration")
  for _, b in ipairs({ blob, dropped_blob }) do
    assert(assert(pd:import_mr(b)):dereg())
  end
  assert(pd:free())
  assert(dev:close())
end

function cases.shared_buffer()
  local dev = sim()
  T.ok(assert(dev:caps()).buf, "sim0 shares buffers")
  local pd = assert(dev:alloc_pd())
  local buf = assert(pd:alloc_buffer(4096, rshare.ACCESS_LOCAL_WRITE + rshare.ACCESS_REMOTE_READ))
  T.eq(buf:length(), 4096, "length")
  assert(buf:write(4090, "hello!"))
  T.eq(buf:read(4090, 6), "hello!", "read back")
  T.fails("RSHARE_E_INVAL", "read past the end", buf:read(4091, 6))
  T.fails("RSHARE_E_INVAL", "write past the end", buf:write(4096, "x"))
  T.fails("RSHARE_E_INVAL", "negative offset", buf:read(-1, 1))
  -- A second handle on the same memory: the memfd, mapped again.
  local blob = assert(buf:export())
  T.eq(rshare.kind(blob), "buf", "blob kind")
  -- inspect names the memfd the blob records: the buffer's own.
  local info = assert(rshare.inspect(blob))
  local fdinfo = assert(io.open("/proc/self/fdinfo/" .. assert(buf:fd())))
  T.eq(info.mem_ino, tonumber(fdinfo:read("*a"):match("ino:%s*(%d+)")), "inspect mem_ino")
  fdinfo:close()
  T.ok(info.mem_dev ~= nil and info.lkey ~= nil, "inspect mem_dev and the MR's fields")
  T.eq(info.ledger, nil, "no ledger serial on sim0")
  local twin = assert(pd:import_buffer(blob, assert(buf:fd())))
  assert(twin:write(0, "from the twin"))
  T.eq(buf:read(0, 13), "from the twin", "one memory")
  local a, b = assert(buf:attrs()), assert(twin:attrs())
  T.eq(b.lkey, a.lkey, "same lkey")
  T.eq(b.rkey, a.rkey, "same rkey")
  T.eq(b.addr, a.addr, "the allocator's address")
  if rshare.backend == "ffi" then
    -- LuaJIT: the mapping itself, as a cdata pointer and its length.
    local p, n = buf:ptr()
    T.eq(n, 4096, "ptr length")
    T.eq(p[0], string.byte("f"), "zero-copy read")
    p[1] = string.byte("R")
    T.eq(twin:read(0, 2), "fR", "zero-copy write seen through the other mapping")
  end
  T.fails("RSHARE_E_BUSY", "pd busy", pd:free())
  assert(twin:unimport())
  assert(buf:free())
  T.fails("RSHARE_E_STALE", "released", buf:read(0, 1))
  T.fails("RSHARE_E_STALE", "released", buf:fd())
  assert(pd:free())
  assert(dev:close())
end

T.run(cases)
