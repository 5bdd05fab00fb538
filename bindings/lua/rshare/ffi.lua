-- rshare.ffi: librshare.so.1 for LuaJIT through the FFI.
--
-- Conventions (the same as the Lua 5.4 module rshare.swig):
--  * a function returns its value(s), or nil, message, code on a runtime
--    failure (message from rshare_last_error(), code the status name such as
--    "RSHARE_E_STALE"); a wrong Lua argument type raises an error;
--  * devices, PDs and VARs are objects with methods; a PD or VAR keeps its
--    device alive;
--  * finalizers (ffi.gc) only ever release this process's handle (unimport,
--    device close), exactly once; they never destroy a shared object. An
--    explicit unimport()/free()/close() that succeeds disarms the finalizer,
--    and a second one returns nil, msg, "RSHARE_E_STALE" from the C library
--    (handles are generation-checked, so a stale one is always safe to pass).
--
-- Speed: out-parameter cells are allocated once, at load time, so calls such
-- as pd:handle() allocate nothing and compile to a plain C call.
local ffi = require "ffi"
local util = require "rshare.util"

-- Declare the ABI once: loading this module twice (or after another module
-- declared it) must not redefine the types. The declarations are generated
-- from rshare.h at build time (gen_cdef.cmake), so they match the header.
if not pcall(ffi.typeof, "rshare_var") then
  ffi.cdef(require "rshare.cdef")
end

-- Find the library: $RSHARE_LIBRARY, else the soname through the dynamic
-- loader's search path, else the build tree that generated this module.
local function load_library()
  local path = os.getenv("RSHARE_LIBRARY")
  if path and path ~= "" then return ffi.load(path) end
  local ok, lib = pcall(ffi.load, "librshare.so.1")
  if ok then return lib end
  local has_build, build_path = pcall(require, "rshare.libpath")
  if has_build then return ffi.load(build_path) end
  error("rshare.ffi: cannot load librshare.so.1 (" .. tostring(lib) ..
        "); set LD_LIBRARY_PATH or RSHARE_LIBRARY", 2)
end

local C = load_library()

local OK = C.RSHARE_OK
local E_BUSY = C.RSHARE_E_BUSY
local E_NOSPACE = C.RSHARE_E_NOSPACE
local BLOB_MAX = C.RSHARE_BLOB_MAX
local PAYLOAD_MAX = C.RSHARE_PAYLOAD_MAX

-- Out-parameter cells and buffers, made once (see the speed note above).
local dev_cell = ffi.new("rshare_device *[1]")
local pd_cell = ffi.new("rshare_pd *[1]")
local var_cell = ffi.new("rshare_var *[1]")
local int_cell = ffi.new("int[1]")
local u32_cells = ffi.new("uint32_t[2]")
local u64_cell = ffi.new("uint64_t[1]")
local size_cell = ffi.new("size_t[1]")
local addr_cell = ffi.new("void *[1]")
local blob_buf = ffi.new("uint8_t[?]", BLOB_MAX)
local text_buf = ffi.new("char[?]", 1024)
local payload_buf -- RSHARE_PAYLOAD_MAX bytes, made by the first recv()

local M = {}

local function fail(status)
  return nil, ffi.string(C.rshare_last_error()), ffi.string(C.rshare_status_name(status))
end

local function guid_string(cell)
  return ("0x%08x%08x"):format(tonumber(cell[0] / 0x100000000), tonumber(cell[0] % 0x100000000))
end

-- Run fn(a, b, buf, cap, len_cell) with text_buf, or with a buffer of the
-- size the library asks for when text_buf is too small; returns the bytes.
local function sized_call(fn, a, b)
  local st = fn(a, b, text_buf, ffi.sizeof(text_buf), size_cell)
  if st == OK then return ffi.string(text_buf, size_cell[0]) end
  if st ~= E_NOSPACE then return fail(st) end
  local cap = tonumber(size_cell[0]) + 1
  local buf = ffi.new("char[?]", cap)
  st = fn(a, b, buf, cap, size_cell)
  if st ~= OK then return fail(st) end
  return ffi.string(buf, size_cell[0])
end

-- Blob arguments: binary bytes, or the "rshare:..." text form.
local function blob_arg(blob, fname)
  util.check_type(blob, "string", fname, 1)
  if util.is_text_blob(blob) then return M.from_text(blob) end
  return blob
end

------------------------------------------------------------------------
-- Devices
------------------------------------------------------------------------

local Device = {}
Device.__index = Device
local Pd = {}
Pd.__index = Pd
local Var = {}
Var.__index = Var

-- Devices whose finalizer found them still busy. While the program runs an
-- object's finalizer keeps its device reachable (see child_finalizer), but
-- when the Lua state closes LuaJIT runs all finalizers in no set order; a
-- device that goes before its objects is then closed by the last of them.
-- Keyed by address, no Lua object: a finalizer must not reference the
-- object that owns its cdata (that would keep the cdata alive forever).
local pending_close = {}
local pending_count = 0

local function close_pending()
  for key, h in pairs(pending_close) do
    if C.rshare_device_close(h) ~= E_BUSY then
      pending_close[key] = nil
      pending_count = pending_count - 1
    end
  end
end

local function device_finalizer(h)
  if C.rshare_device_close(h) == E_BUSY then
    pending_close[tostring(ffi.cast("uintptr_t", h))] = ffi.cast("rshare_device *", h)
    pending_count = pending_count + 1
  end
end

local function new_device(h)
  return setmetatable({ h = ffi.gc(h, device_finalizer) }, Device)
end

function M.open(name)
  if name ~= nil then util.check_type(name, "string", "open", 1) end
  local st = C.rshare_device_open(name, dev_cell)
  if st ~= OK then return fail(st) end
  return new_device(dev_cell[0])
end

function M.from_fd(fd)
  util.check_int(fd, "from_fd", 1)
  local st = C.rshare_device_import(fd, dev_cell)
  if st ~= OK then return fail(st) end
  return new_device(dev_cell[0])
end

function Device:fd()
  local st = C.rshare_device_fd(self.h, int_cell)
  if st ~= OK then return fail(st) end
  return int_cell[0]
end

function Device:name()
  -- text_buf is larger than RSHARE_NAME_MAX: no retry needed.
  local st = C.rshare_device_name(self.h, text_buf, ffi.sizeof(text_buf), size_cell)
  if st ~= OK then return fail(st) end
  return ffi.string(text_buf, size_cell[0])
end

function Device:guid()
  local st = C.rshare_device_guid(self.h, u64_cell)
  if st ~= OK then return fail(st) end
  return guid_string(u64_cell)
end

function Device:provider()
  local st = C.rshare_device_provider(self.h, int_cell)
  if st ~= OK then return fail(st) end
  return util.PROVIDERS[int_cell[0]] or int_cell[0]
end

function Device:close()
  local st = C.rshare_device_close(self.h)
  if st ~= OK then return fail(st) end
  ffi.gc(self.h, nil)
  return true
end

------------------------------------------------------------------------
-- PDs and VARs
------------------------------------------------------------------------

-- The finalizer of a PD or VAR releases only this process's handle. It
-- captures the device object, so the device (and its own finalizer) cannot
-- go before it.
local function child_finalizer(unimport, dev)
  return function(h)
    unimport(h)
    if pending_count > 0 and dev then close_pending() end
  end
end

local function new_pd(dev, h)
  return setmetatable({ dev = dev,
    h = ffi.gc(h, child_finalizer(C.rshare_pd_unimport, dev)) }, Pd)
end

local function new_var(dev, h)
  return setmetatable({ dev = dev, mapgen = 0,
    h = ffi.gc(h, child_finalizer(C.rshare_var_unimport, dev)) }, Var)
end

function Device:alloc_pd()
  local st = C.rshare_pd_alloc(self.h, pd_cell)
  if st ~= OK then return fail(st) end
  return new_pd(self, pd_cell[0])
end

function Device:import_pd(blob)
  local bytes, msg, code = blob_arg(blob, "import_pd")
  if not bytes then return nil, msg, code end
  local st = C.rshare_pd_import(self.h, bytes, #bytes, pd_cell)
  if st ~= OK then return fail(st) end
  return new_pd(self, pd_cell[0])
end

function Device:alloc_var(flags)
  if flags ~= nil then util.check_int(flags, "alloc_var", 1, 0) end
  local st = C.rshare_var_alloc(self.h, flags or 0, var_cell)
  if st ~= OK then return fail(st) end
  return new_var(self, var_cell[0])
end

function Device:import_var(blob)
  local bytes, msg, code = blob_arg(blob, "import_var")
  if not bytes then return nil, msg, code end
  local st = C.rshare_var_import(self.h, bytes, #bytes, var_cell)
  if st ~= OK then return fail(st) end
  return new_var(self, var_cell[0])
end

local function export(fn, h)
  local st = fn(h, blob_buf, BLOB_MAX, size_cell)
  if st ~= OK then return fail(st) end
  return ffi.string(blob_buf, size_cell[0])
end

-- Shared by unimport and free: on success the handle is released, so the
-- finalizer is disarmed; on failure (e.g. NOT_FOUND after another process
-- freed the object) the handle stays live and the finalizer stays armed.
local function release(self, fn)
  local st = fn(self.h)
  if st ~= OK then return fail(st) end
  ffi.gc(self.h, nil)
  if pending_count > 0 then close_pending() end
  return true
end

function Pd:export() return export(C.rshare_pd_export, self.h) end
function Pd:device() return self.dev end
function Pd:unimport() return release(self, C.rshare_pd_unimport) end
function Pd:free() return release(self, C.rshare_pd_free) end

function Pd:handle()
  local st = C.rshare_pd_handle(self.h, u32_cells)
  if st ~= OK then return fail(st) end
  return u32_cells[0]
end

function Var:export() return export(C.rshare_var_export, self.h) end
function Var:device() return self.dev end

-- Every way the page can go away invalidates the map objects first.
function Var:unmap()
  self.mapgen = self.mapgen + 1
  local st = C.rshare_var_unmap(self.h)
  if st ~= OK then return fail(st) end
  return true
end

function Var:unimport()
  self.mapgen = self.mapgen + 1
  return release(self, C.rshare_var_unimport)
end

function Var:free()
  self.mapgen = self.mapgen + 1
  return release(self, C.rshare_var_free)
end

function Var:attrs()
  local st = C.rshare_var_attrs(self.h, u32_cells, u32_cells + 1, u64_cell)
  if st ~= OK then return fail(st) end
  return { page_id = u32_cells[0], length = u32_cells[1], mmap_off = tonumber(u64_cell[0]) }
end

------------------------------------------------------------------------
-- Mapped VAR pages: a userdata with bounds-checked read/write that refuses
-- to touch the page once the VAR was unmapped, unimported or freed.
------------------------------------------------------------------------

local Map = {}

-- The state lives in the proxy's own metatable (newproxy gives each one its
-- own), since LuaJIT honours __len on userdata but not on tables.
local function map_state(m)
  local s = getmetatable(m)
  if type(m) ~= "userdata" or type(s) ~= "table" or s.__index ~= Map then
    error("rshare: not a VAR map object", 3)
  end
  if s.var.mapgen ~= s.gen then
    return nil, "rshare map: the VAR page was unmapped, unimported or freed", "RSHARE_E_STALE"
  end
  return s
end

local function range_error(what)
  return nil, "rshare map: " .. what, "RSHARE_E_INVAL"
end

function Map.read(m, off, n)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  off = off or 0
  if not util.is_count(off) or off > s.len then return range_error("offset out of range") end
  n = n or s.len - off
  if not util.is_count(n) or n > s.len - off then return range_error("length out of range") end
  return ffi.string(s.ptr + off, n)
end

function Map.write(m, off, bytes)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  util.check_type(bytes, "string", "map:write", 2)
  if not util.is_count(off) or off > s.len then return range_error("offset out of range") end
  if #bytes > s.len - off then return range_error("write past the end of the page") end
  ffi.copy(s.ptr + off, bytes, #bytes)
  return true
end

function Map.len(m)
  local s, msg, code = map_state(m)
  if not s then return nil, msg, code end
  return s.len
end

function Map.valid(m)
  return map_state(m) ~= nil
end

function Map.unmap(m)
  local s = getmetatable(m)
  return s.var:unmap()
end

function Var:map()
  local st = C.rshare_var_map(self.h, addr_cell)
  if st ~= OK then return fail(st) end
  local ptr = ffi.cast("uint8_t *", addr_cell[0])
  st = C.rshare_var_attrs(self.h, nil, u32_cells, nil)
  if st ~= OK then return fail(st) end
  local m = newproxy(true)
  local s = getmetatable(m)
  s.__index = Map
  s.__len = function(mm) return (Map.len(mm)) end
  s.__tostring = function() return "rshare VAR map" end
  s.var, s.gen, s.ptr, s.len = self, self.mapgen, ptr, u32_cells[0]
  return m
end

------------------------------------------------------------------------
-- Library, device list, blobs, channel
------------------------------------------------------------------------

function M.version() return ffi.string(C.rshare_version()) end
function M.last_error() return ffi.string(C.rshare_last_error()) end
function M.last_errno() return C.rshare_last_errno() end

function M.status_name(status)
  util.check_type(status, "number", "status_name", 1)
  return ffi.string(C.rshare_status_name(status))
end

function M.strerror(status)
  util.check_type(status, "number", "strerror", 1)
  return ffi.string(C.rshare_strerror(status))
end

function M.devices()
  local st = C.rshare_devices_count(size_cell)
  if st ~= OK then return fail(st) end
  local list = {}
  for i = 0, tonumber(size_cell[0]) - 1 do
    st = C.rshare_devices_get(i, text_buf, ffi.sizeof(text_buf), u64_cell, int_cell)
    if st ~= OK then return fail(st) end
    list[#list + 1] = { index = i, name = ffi.string(text_buf), guid = guid_string(u64_cell),
                        provider = util.PROVIDERS[int_cell[0]] or int_cell[0] }
  end
  return list
end

function M.kind(blob)
  local bytes, msg, code = blob_arg(blob, "kind")
  if not bytes then return nil, msg, code end
  local st = C.rshare_blob_kind(bytes, #bytes, int_cell)
  if st ~= OK then return fail(st) end
  return util.KINDS[int_cell[0]] or int_cell[0]
end

function M.inspect(blob)
  local bytes, msg, code = blob_arg(blob, "inspect")
  if not bytes then return nil, msg, code end
  local text
  text, msg, code = sized_call(C.rshare_blob_describe, bytes, #bytes)
  if not text then return nil, msg, code end
  return util.json_decode(text)
end

function M.to_text(blob)
  util.check_type(blob, "string", "to_text", 1)
  return sized_call(C.rshare_blob_to_text, blob, #blob)
end

function M.from_text(text)
  util.check_type(text, "string", "from_text", 1)
  local st = C.rshare_blob_from_text(text, blob_buf, BLOB_MAX, size_cell)
  if st ~= OK then return fail(st) end
  return ffi.string(blob_buf, size_cell[0])
end

function M.send(fd, dev, payload)
  util.check_int(fd, "send", 1)
  if getmetatable(dev) ~= Device then error("rshare.send: bad argument #2 (device expected)", 2) end
  payload = payload or ""
  util.check_type(payload, "string", "send", 3)
  local st = C.rshare_channel_send(fd, dev.h, payload, #payload)
  if st ~= OK then return fail(st) end
  return true
end

-- Returns the received device and the payload string.
function M.recv(fd)
  util.check_int(fd, "recv", 1)
  payload_buf = payload_buf or ffi.new("uint8_t[?]", PAYLOAD_MAX)
  local st = C.rshare_channel_recv(fd, dev_cell, payload_buf, PAYLOAD_MAX, size_cell)
  if st ~= OK then return fail(st) end
  return new_device(dev_cell[0]), ffi.string(payload_buf, size_cell[0])
end

-- Constants, for callers that do not want to spell numbers.
M.VAR_FLAG_TLP = C.RSHARE_VAR_FLAG_TLP
M.BLOB_MAX = BLOB_MAX
M.TEXT_MAX = C.RSHARE_TEXT_MAX
M.PAYLOAD_MAX = PAYLOAD_MAX
M.backend = "ffi"
M.C = C -- the raw library namespace, for callers that need the bare ABI

return M
