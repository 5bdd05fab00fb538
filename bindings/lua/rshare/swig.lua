-- rshare.swig: the rshare Lua API for PUC Lua 5.4, a thin object layer over
-- the SWIG-built C module rshare_core (swig/rshare.i + swig/lua/rshare_lua.i),
-- whose functions return the status first and then their out values.
--
-- Conventions (the same as rshare.ffi for LuaJIT):
--  * a function returns its value(s), or nil, message, code on a runtime
--    failure (message from rshare_last_error(), code the status name such as
--    "RSHARE_E_STALE"); a wrong Lua argument type raises an error;
--  * devices, PDs and VARs are objects with methods; a PD or VAR keeps its
--    device alive;
--  * finalizers (__gc) only ever release this process's handle (unimport,
--    device close), exactly once; they never destroy a shared object. An
--    explicit unimport()/free()/close() that succeeds disarms the finalizer,
--    and a second one returns nil, msg, "RSHARE_E_STALE" from the C library
--    (handles are generation-checked, so a stale one is always safe to pass).
local core = require "rshare_core"
local util = require "rshare.util"

local OK = 0
local E_BUSY = core.RSHARE_E_BUSY

local M = {}

local function fail(status)
  return nil, core.last_error(), core.status_name(status)
end

-- Check the status of a core call and pass its first out value on.
local function value(st, v)
  if st ~= OK then return fail(st) end
  return v
end

local function guid_string(g)
  return ("0x%016x"):format(g) -- a uint64 bit pattern in a Lua integer
end

-- Blob arguments: binary bytes, or the "rshare:..." text form.
local function blob_arg(blob, fname)
  util.check_type(blob, "string", fname, 1)
  if util.is_text_blob(blob) then return M.from_text(blob) end
  return blob
end

local Device = {}
Device.__index = Device
local Pd = {}
Pd.__index = Pd
local Var = {}
Var.__index = Var

------------------------------------------------------------------------
-- Devices
------------------------------------------------------------------------

-- Devices whose finalizer found them still busy. Lua 5.4 finalizes objects
-- in reverse order of creation, so a device normally goes after its
-- objects; should it go first, the objects' finalizers close it.
local pending_close = {}

local function close_pending()
  for dev in pairs(pending_close) do
    if core.device_close(dev.h) ~= E_BUSY then pending_close[dev] = nil end
  end
end

-- `armed` is true while the finalizer still owes a release.
function Device.__gc(self)
  if not self.armed then return end
  self.armed = false
  if core.device_close(self.h) == E_BUSY then pending_close[self] = true end
end

local function new_device(h)
  return setmetatable({ h = h, armed = true }, Device)
end

function M.open(name)
  if name ~= nil then util.check_type(name, "string", "open", 1) end
  local st, h = core.device_open(name)
  if st ~= OK then return fail(st) end
  return new_device(h)
end

function M.from_fd(fd)
  util.check_int(fd, "from_fd", 1)
  local st, h = core.device_import(fd)
  if st ~= OK then return fail(st) end
  return new_device(h)
end

function Device:fd() return value(core.device_fd(self.h)) end
function Device:name() return value(core.device_name(self.h)) end

function Device:guid()
  local st, g = core.device_guid(self.h)
  if st ~= OK then return fail(st) end
  return guid_string(g)
end

function Device:provider()
  local st, p = core.device_provider(self.h)
  if st ~= OK then return fail(st) end
  return util.PROVIDERS[p] or p
end

function Device:close()
  local st = core.device_close(self.h)
  if st ~= OK then return fail(st) end
  self.armed = false
  return true
end

------------------------------------------------------------------------
-- PDs and VARs
------------------------------------------------------------------------

-- The finalizer of a PD or VAR releases only this process's handle.
local function child_gc(unimport)
  return function(self)
    if not self.armed then return end
    self.armed = false
    unimport(self.h)
    if next(pending_close) then close_pending() end
  end
end
Pd.__gc = child_gc(core.pd_unimport)
Var.__gc = child_gc(core.var_unimport)

local function new_pd(dev, h)
  return setmetatable({ dev = dev, h = h, armed = true }, Pd)
end

local function new_var(dev, h)
  return setmetatable({ dev = dev, h = h, armed = true, mapgen = 0 }, Var)
end

function Device:alloc_pd()
  local st, h = core.pd_alloc(self.h)
  if st ~= OK then return fail(st) end
  return new_pd(self, h)
end

function Device:import_pd(blob)
  local bytes, msg, code = blob_arg(blob, "import_pd")
  if not bytes then return nil, msg, code end
  local st, h = core.pd_import(self.h, bytes)
  if st ~= OK then return fail(st) end
  return new_pd(self, h)
end

function Device:alloc_var(flags)
  if flags ~= nil then util.check_int(flags, "alloc_var", 1, 0) end
  local st, h = core.var_alloc(self.h, flags or 0)
  if st ~= OK then return fail(st) end
  return new_var(self, h)
end

function Device:import_var(blob)
  local bytes, msg, code = blob_arg(blob, "import_var")
  if not bytes then return nil, msg, code end
  local st, h = core.var_import(self.h, bytes)
  if st ~= OK then return fail(st) end
  return new_var(self, h)
end

-- Shared by unimport and free: on success the handle is released, so the
-- finalizer is disarmed; on failure (e.g. NOT_FOUND after another process
-- freed the object) the handle stays live and the finalizer stays armed.
local function release(self, fn)
  local st = fn(self.h)
  if st ~= OK then return fail(st) end
  self.armed = false
  if next(pending_close) then close_pending() end
  return true
end

function Pd:export() return value(core.pd_export(self.h)) end
function Pd:handle() return value(core.pd_handle(self.h)) end
function Pd:device() return self.dev end
function Pd:unimport() return release(self, core.pd_unimport) end
function Pd:free() return release(self, core.pd_free) end

function Var:export() return value(core.var_export(self.h)) end
function Var:device() return self.dev end

-- Every way the page can go away invalidates the map objects first.
function Var:unmap()
  self.mapgen = self.mapgen + 1
  local st = core.var_unmap(self.h)
  if st ~= OK then return fail(st) end
  return true
end

function Var:unimport()
  self.mapgen = self.mapgen + 1
  return release(self, core.var_unimport)
end

function Var:free()
  self.mapgen = self.mapgen + 1
  return release(self, core.var_free)
end

function Var:attrs()
  local st, page_id, length, mmap_off = core.var_attrs(self.h)
  if st ~= OK then return fail(st) end
  return { page_id = page_id, length = length, mmap_off = mmap_off }
end

------------------------------------------------------------------------
-- Mapped VAR pages: bounds-checked read/write that refuse to touch the
-- page once the VAR was unmapped, unimported or freed. The bytes move
-- through rshare_core.var_read/var_write, so Lua never holds an address.
------------------------------------------------------------------------

local Map = {}
Map.__index = Map

local function map_state(m)
  if getmetatable(m) ~= Map then error("rshare: not a VAR map object", 3) end
  if m.var.mapgen ~= m.gen then
    return nil, "rshare map: the VAR page was unmapped, unimported or freed", "RSHARE_E_STALE"
  end
  return m
end

local function range_error(what)
  return nil, "rshare map: " .. what, "RSHARE_E_INVAL"
end

function Map.read(m, off, n)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  off = off or 0
  if not util.is_count(off) or off > m.size then return range_error("offset out of range") end
  n = n or m.size - off
  if not util.is_count(n) or n > m.size - off then return range_error("length out of range") end
  return value(core.var_read(m.var.h, math.tointeger(off), math.tointeger(n)))
end

function Map.write(m, off, bytes)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  util.check_type(bytes, "string", "map:write", 2)
  if not util.is_count(off) or off > m.size then return range_error("offset out of range") end
  if #bytes > m.size - off then return range_error("write past the end of the page") end
  local st = core.var_write(m.var.h, math.tointeger(off), bytes)
  if st ~= OK then return fail(st) end
  return true
end

function Map.len(m)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  return m.size
end

function Map.valid(m) return map_state(m) ~= nil end
function Map.unmap(m) return m.var:unmap() end
Map.__len = function(m) return (Map.len(m)) end
Map.__tostring = function() return "rshare VAR map" end

function Var:map()
  local st = core.var_map(self.h)
  if st ~= OK then return fail(st) end
  local ast, _, length = core.var_attrs(self.h)
  if ast ~= OK then return fail(ast) end
  return setmetatable({ var = self, gen = self.mapgen, size = length }, Map)
end

------------------------------------------------------------------------
-- Library, device list, blobs, channel
------------------------------------------------------------------------

function M.version() return core.version() end
function M.last_error() return core.last_error() end
function M.last_errno() return core.last_errno() end

function M.status_name(status)
  util.check_type(status, "number", "status_name", 1)
  return core.status_name(status)
end

function M.strerror(status)
  util.check_type(status, "number", "strerror", 1)
  return core.strerror(status)
end

function M.devices()
  local st, count = core.devices_count()
  if st ~= OK then return fail(st) end
  local list = {}
  for i = 0, count - 1 do
    local name, guid, provider
    st, name, guid, provider = core.devices_get(i)
    if st ~= OK then return fail(st) end
    list[#list + 1] = { index = i, name = name, guid = guid_string(guid),
                        provider = util.PROVIDERS[provider] or provider }
  end
  return list
end

function M.kind(blob)
  local bytes, msg, code = blob_arg(blob, "kind")
  if not bytes then return nil, msg, code end
  local st, kind = core.blob_kind(bytes)
  if st ~= OK then return fail(st) end
  return util.KINDS[kind] or kind
end

function M.inspect(blob)
  local bytes, msg, code = blob_arg(blob, "inspect")
  if not bytes then return nil, msg, code end
  local text
  text, msg, code = value(core.blob_describe(bytes))
  if not text then return nil, msg, code end
  return util.json_decode(text)
end

function M.to_text(blob)
  util.check_type(blob, "string", "to_text", 1)
  return value(core.blob_to_text(blob))
end

function M.from_text(text)
  util.check_type(text, "string", "from_text", 1)
  return value(core.blob_from_text(text))
end

function M.send(fd, dev, payload)
  util.check_int(fd, "send", 1)
  if getmetatable(dev) ~= Device then error("rshare.send: bad argument #2 (device expected)", 2) end
  payload = payload or ""
  util.check_type(payload, "string", "send", 3)
  local st = core.channel_send(fd, dev.h, payload)
  if st ~= OK then return fail(st) end
  return true
end

-- Returns the received device and the payload string.
function M.recv(fd)
  util.check_int(fd, "recv", 1)
  local st, h, payload = core.channel_recv(fd)
  if st ~= OK then return fail(st) end
  return new_device(h), payload
end

-- Constants, for callers that do not want to spell numbers.
M.VAR_FLAG_TLP = math.tointeger(core.RSHARE_VAR_FLAG_TLP)
M.BLOB_MAX = math.tointeger(core.RSHARE_BLOB_MAX)
M.TEXT_MAX = math.tointeger(core.RSHARE_TEXT_MAX)
M.PAYLOAD_MAX = math.tointeger(core.RSHARE_PAYLOAD_MAX)
M.backend = "swig"
M.core = core -- the raw SWIG module, for callers that need the bare ABI

return M
