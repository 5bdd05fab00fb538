-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- rshare.ffi: librshare.so.1 for LuaJIT through the FFI. The API itself
-- (classes, conventions) is rshare/objects.lua; this file is its backend:
-- C calls in rshare.core's status-first form, ffi.gc finalizers, and the
-- mapped page as a pointer.
--
-- Speed: out-parameter cells are allocated once, at load time, so calls such
-- as pd:handle() allocate nothing and compile to a plain C call.
local ffi = require "ffi"
local objects = require "rshare.objects"

-- Declare the ABI once: loading this module twice (or after another module
-- declared it) must not redefine the types. The declarations are generated
-- from rshare.h at build time (gen_cdef.cmake), so they match the header.
if not pcall(ffi.typeof, "rshare_var") then
  ffi.cdef(require "rshare.cdef")
end

-- Find the library: $RSHARE_LIBRARY (a path) if set; else the paths
-- rshare/libpath.lua lists, the library this module was built or installed
-- with (the installed list starts with a path relative to the module, so a
-- prefix outside the loader's search path needs no LD_LIBRARY_PATH); else
-- the soname through the dynamic loader's search path. Returns the library
-- namespace and what was loaded.
local function load_library()
  local path = os.getenv("RSHARE_LIBRARY")
  if path and path ~= "" then return ffi.load(path), path end
  local tried = {}
  local has_list, list = pcall(require, "rshare.libpath")
  for _, candidate in ipairs(has_list and list or {}) do
    local ok, lib = pcall(ffi.load, candidate)
    if ok then return lib, candidate end
    tried[#tried + 1] = tostring(lib)
  end
  local ok, lib = pcall(ffi.load, "librshare.so.1")
  if ok then return lib, "librshare.so.1" end
  tried[#tried + 1] = tostring(lib)
  error("rshare.ffi: cannot load librshare.so.1 (" .. table.concat(tried, "; ") ..
        "); set RSHARE_LIBRARY to its path", 2)
end

local C, library_path = load_library()

local OK = C.RSHARE_OK
local E_NOSPACE = C.RSHARE_E_NOSPACE
local BLOB_MAX = C.RSHARE_BLOB_MAX
local PAYLOAD_MAX = C.RSHARE_PAYLOAD_MAX

-- Out-parameter cells and buffers, made once (see the speed note above).
local dev_cell = ffi.new("rshare_device *[1]")
local pd_cell = ffi.new("rshare_pd *[1]")
local var_cell = ffi.new("rshare_var *[1]")
local mr_cell = ffi.new("rshare_mr *[1]")
local dm_cell = ffi.new("rshare_dm *[1]")
local buf_cell = ffi.new("rshare_buf *[1]")
local FDS_MAX = C.RSHARE_CHANNEL_FDS_MAX
local fds_cells = ffi.new("int[?]", FDS_MAX + 1)
local int_cell = ffi.new("int[1]")
local u32_cells = ffi.new("uint32_t[3]")
local u64_cell = ffi.new("uint64_t[1]")
local u64_cells = ffi.new("uint64_t[2]")
local size_cell = ffi.new("size_t[1]")
local addr_cell = ffi.new("void *[1]")
local blob_buf = ffi.new("uint8_t[?]", BLOB_MAX)
local TEXT_CAP = 1024 -- larger than RSHARE_NAME_MAX: names need no retry
local text_buf = ffi.new("char[?]", TEXT_CAP)
local payload_buf -- RSHARE_PAYLOAD_MAX bytes, made by the first recv()

-- The status and what the call left in a cell. The cell is read even when
-- the call failed (a stale value, never used), so success costs no branch.
local function cell_out(st, cell)
  return st, cell[0]
end

-- The status and the size_cell[0] bytes the call wrote into buf.
local function bytes_out(st, buf)
  if st ~= OK then return st end
  return st, ffi.string(buf, size_cell[0])
end

-- fn(arg, #arg, buf, cap, len_cell) into text_buf, or into a buffer of the
-- size the library asks for when text_buf is too small.
local function sized_call(fn, arg)
  local st = fn(arg, #arg, text_buf, TEXT_CAP, size_cell)
  if st ~= E_NOSPACE then return bytes_out(st, text_buf) end
  local cap = tonumber(size_cell[0]) + 1
  local buf = ffi.new("char[?]", cap)
  return bytes_out(fn(arg, #arg, buf, cap, size_cell), buf)
end

local B = {
  name = "ffi", OK = OK, E_BUSY = C.RSHARE_E_BUSY,
  VAR_FLAG_TLP = C.RSHARE_VAR_FLAG_TLP, BLOB_MAX = BLOB_MAX,
  TEXT_MAX = C.RSHARE_TEXT_MAX, PAYLOAD_MAX = PAYLOAD_MAX,
  -- Calls without out values are the C functions themselves.
  device_close = C.rshare_device_close,
  pd_unimport = C.rshare_pd_unimport, pd_free = C.rshare_pd_free,
  var_unimport = C.rshare_var_unimport, var_free = C.rshare_var_free,
  var_unmap = C.rshare_var_unmap, last_errno = C.rshare_last_errno,
  mr_unimport = C.rshare_mr_unimport, mr_dereg = C.rshare_mr_dereg,
  dm_unimport = C.rshare_dm_unimport, dm_free = C.rshare_dm_free,
  buf_unimport = C.rshare_buf_unimport, buf_free = C.rshare_buf_free,
  version_number = C.rshare_version_number,
}

function B.version() return ffi.string(C.rshare_version()) end
function B.last_error() return ffi.string(C.rshare_last_error()) end
function B.status_name(st) return ffi.string(C.rshare_status_name(st)) end
function B.strerror(st) return ffi.string(C.rshare_strerror(st)) end

local function string_or_nil(s) if s ~= nil then return ffi.string(s) end end
function B.kind_name(k) return string_or_nil(C.rshare_kind_name(k)) end
function B.provider_name(p) return string_or_nil(C.rshare_provider_name(p)) end

-- A uint64_t cdata as "0x%016x" (string.format has no 64-bit cdata %x).
function B.guid_string(g)
  return ("0x%08x%08x"):format(tonumber(g / 0x100000000), tonumber(g % 0x100000000))
end

function B.device_open(name) return cell_out(C.rshare_device_open(name, dev_cell), dev_cell) end
function B.device_import(fd) return cell_out(C.rshare_device_import(fd, dev_cell), dev_cell) end
function B.device_fd(h) return cell_out(C.rshare_device_fd(h, int_cell), int_cell) end
function B.device_guid(h) return cell_out(C.rshare_device_guid(h, u64_cell), u64_cell) end
function B.device_provider(h) return cell_out(C.rshare_device_provider(h, int_cell), int_cell) end

function B.device_name(h)
  return bytes_out(C.rshare_device_name(h, text_buf, TEXT_CAP, size_cell), text_buf)
end

function B.pd_alloc(dev) return cell_out(C.rshare_pd_alloc(dev, pd_cell), pd_cell) end
function B.pd_import(dev, b) return cell_out(C.rshare_pd_import(dev, b, #b, pd_cell), pd_cell) end
function B.pd_handle(h) return cell_out(C.rshare_pd_handle(h, u32_cells), u32_cells) end

function B.var_alloc(dev, f) return cell_out(C.rshare_var_alloc(dev, f, var_cell), var_cell) end
function B.var_import(dev, b) return cell_out(C.rshare_var_import(dev, b, #b, var_cell), var_cell) end

function B.pd_export(h)
  return bytes_out(C.rshare_pd_export(h, blob_buf, BLOB_MAX, size_cell), blob_buf)
end

function B.var_export(h)
  return bytes_out(C.rshare_var_export(h, blob_buf, BLOB_MAX, size_cell), blob_buf)
end

function B.var_attrs(h)
  local st = C.rshare_var_attrs(h, u32_cells, u32_cells + 1, u64_cell)
  return st, u32_cells[0], u32_cells[1], tonumber(u64_cell[0])
end

-- The page is a uint8_t pointer; objects.lua checks every range first.
function B.var_map(h)
  local st = C.rshare_var_map(h, addr_cell)
  return st, ffi.cast("uint8_t *", addr_cell[0])
end

function B.page_read(_, page, off, n)
  return OK, ffi.string(page + off, n)
end

function B.page_write(_, page, off, bytes)
  ffi.copy(page + off, bytes, #bytes)
  return OK
end

-- Since 1.1: capabilities, native objects, VAR handle, MRs, device memory,
-- scalar blob fields. Addresses and 64-bit values come back as Lua numbers.
local function address_out(st, cell)
  return st, tonumber(ffi.cast("uintptr_t", cell[0]))
end

function B.device_caps(h) return cell_out(C.rshare_device_caps(h, u32_cells), u32_cells) end
function B.device_native(h) return address_out(C.rshare_device_native(h, addr_cell), addr_cell) end
function B.pd_native(h) return address_out(C.rshare_pd_native(h, addr_cell), addr_cell) end
function B.var_native(h) return address_out(C.rshare_var_native(h, addr_cell), addr_cell) end
function B.mr_native(h) return address_out(C.rshare_mr_native(h, addr_cell), addr_cell) end
function B.dm_native(h) return address_out(C.rshare_dm_native(h, addr_cell), addr_cell) end
function B.var_handle(h) return cell_out(C.rshare_var_handle(h, u32_cells), u32_cells) end
function B.mr_handle(h) return cell_out(C.rshare_mr_handle(h, u32_cells), u32_cells) end
function B.dm_handle(h) return cell_out(C.rshare_dm_handle(h, u32_cells), u32_cells) end

-- MR memory: a uint8_t array the MR object keeps while registered.
function B.mem_new(n) return ffi.new("uint8_t[?]", n) end
function B.mem_read(mem, off, n) return ffi.string(mem + off, n) end
function B.mem_write(mem, off, bytes) ffi.copy(mem + off, bytes, #bytes) end

function B.mr_reg(pd, mem, n, access)
  return cell_out(C.rshare_mr_reg(pd, mem, n, access, mr_cell), mr_cell)
end
function B.mr_import(pd, b) return cell_out(C.rshare_mr_import(pd, b, #b, mr_cell), mr_cell) end

function B.mr_export(h)
  return bytes_out(C.rshare_mr_export(h, blob_buf, BLOB_MAX, size_cell), blob_buf)
end

function B.mr_attrs(h)
  local st = C.rshare_mr_attrs(h, u64_cells, u64_cells + 1, u32_cells, u32_cells + 1,
                               u32_cells + 2)
  return st, tonumber(u64_cells[0]), tonumber(u64_cells[1]), u32_cells[0], u32_cells[1],
         u32_cells[2]
end

function B.dm_alloc(dev, n) return cell_out(C.rshare_dm_alloc(dev, n, dm_cell), dm_cell) end
function B.dm_import(dev, b) return cell_out(C.rshare_dm_import(dev, b, #b, dm_cell), dm_cell) end

function B.dm_export(h)
  return bytes_out(C.rshare_dm_export(h, blob_buf, BLOB_MAX, size_cell), blob_buf)
end

function B.dm_length(h)
  local st = C.rshare_dm_length(h, u64_cell)
  return st, tonumber(u64_cell[0])
end

function B.dm_read(h, off, n)
  local buf = ffi.new("uint8_t[?]", n > 0 and n or 1)
  local st = C.rshare_dm_read(h, off, buf, n)
  if st ~= OK then return st end
  return st, ffi.string(buf, n)
end

function B.dm_write(h, off, bytes) return C.rshare_dm_write(h, off, bytes, #bytes) end

-- Mapped device memory (since 1.2): the mapping itself, a uint8_t * cdata
-- (zero-copy), valid until unmap, unimport or free.
function B.dm_map(h)
  local st = C.rshare_dm_map(h, addr_cell)
  return st, ffi.cast("uint8_t *", addr_cell[0])
end
function B.dm_unmap(h) return C.rshare_dm_unmap(h) end

-- Reads and writes through a mapping: map(h) gives the status and the
-- address (buf_ptr, dm_map); objects.lua checked the range.
local function mapped_read(map, h, off, n)
  local st, p = map(h)
  if st ~= OK then return st end
  return st, ffi.string(p + off, n)
end

local function mapped_write(map, h, off, bytes)
  local st, p = map(h)
  if st == OK then ffi.copy(p + off, bytes, #bytes) end
  return st
end

-- objects.lua checked the range against dm_length.
function B.dm_map_read(h, off, n) return mapped_read(B.dm_map, h, off, n) end
function B.dm_map_write(h, off, bytes) return mapped_write(B.dm_map, h, off, bytes) end

-- The value stays a uint64_t cdata (GUIDs need all 64 bits); objects.lua
-- turns it into a number or a "0x%016x" string with u64_number/guid_string.
function B.blob_field(b, field)
  local st = C.rshare_blob_field(b, #b, field, u64_cell)
  return st, u64_cell[0]
end
B.u64_number = tonumber

function B.devices_count()
  local st = C.rshare_devices_count(size_cell)
  return st, tonumber(size_cell[0])
end

function B.devices_get(i)
  local st = C.rshare_devices_get(i, text_buf, TEXT_CAP, u64_cell, int_cell)
  if st ~= OK then return st end
  return st, ffi.string(text_buf), u64_cell[0], int_cell[0]
end

function B.blob_size(b)
  local st = C.rshare_blob_size(b, #b, size_cell)
  return st, tonumber(size_cell[0])
end

function B.blob_kind(b) return cell_out(C.rshare_blob_kind(b, #b, int_cell), int_cell) end
function B.blob_describe(b) return sized_call(C.rshare_blob_describe, b) end
function B.blob_to_text(b) return sized_call(C.rshare_blob_to_text, b) end

function B.blob_from_text(text)
  return bytes_out(C.rshare_blob_from_text(text, blob_buf, BLOB_MAX, size_cell), blob_buf)
end

function B.channel_send(fd, dev, payload)
  return C.rshare_channel_send(fd, dev, payload, #payload)
end

function B.channel_recv(fd)
  payload_buf = payload_buf or ffi.new("uint8_t[?]", PAYLOAD_MAX)
  local st = C.rshare_channel_recv(fd, dev_cell, payload_buf, PAYLOAD_MAX, size_cell)
  if st ~= OK then return st end
  return st, dev_cell[0], ffi.string(payload_buf, size_cell[0])
end

-- Shared buffers (since 1.2). buf_ptr hands LuaJIT the mapping itself: a
-- uint8_t * cdata (zero-copy), valid until the buffer is released.
function B.buf_alloc(pd, n, access)
  return cell_out(C.rshare_buf_alloc(pd, n, access, buf_cell), buf_cell)
end
function B.buf_import(pd, b, fd)
  return cell_out(C.rshare_buf_import(pd, b, #b, fd, buf_cell), buf_cell)
end
function B.buf_export(h)
  return bytes_out(C.rshare_buf_export(h, blob_buf, BLOB_MAX, size_cell), blob_buf)
end
function B.buf_fd(h) return cell_out(C.rshare_buf_fd(h, int_cell), int_cell) end
function B.buf_mr(h) return cell_out(C.rshare_buf_mr(h, mr_cell), mr_cell) end

function B.buf_ptr(h)
  local st = C.rshare_buf_ptr(h, addr_cell, size_cell)
  return st, ffi.cast("uint8_t *", addr_cell[0]), tonumber(size_cell[0])
end

-- objects.lua checked the range against buf_ptr's length.
function B.buf_read(h, off, n) return mapped_read(B.buf_ptr, h, off, n) end
function B.buf_write(h, off, bytes) return mapped_write(B.buf_ptr, h, off, bytes) end

function B.channel_sendv(fd, dev, fds, payload)
  local n = math.min(#fds, FDS_MAX + 1) -- more: the library refuses
  for i = 1, n do fds_cells[i - 1] = fds[i] end
  return C.rshare_channel_sendv(fd, dev, fds_cells, n, payload, #payload)
end

function B.channel_recvv(fd)
  payload_buf = payload_buf or ffi.new("uint8_t[?]", PAYLOAD_MAX)
  local nfds = ffi.new("size_t[1]")
  local st = C.rshare_channel_recvv(fd, dev_cell, fds_cells, FDS_MAX, nfds, payload_buf,
                                    PAYLOAD_MAX, size_cell)
  if st ~= OK then return st end
  local fds = {}
  for i = 1, tonumber(nfds[0]) do fds[i] = fds_cells[i - 1] end
  return st, dev_cell[0], fds, ffi.string(payload_buf, size_cell[0])
end

-- Finalizers go on the handle cdata (ffi.gc); LuaJIT ignores __gc on
-- tables. They are the layer's shared finalizers, never a closure made per
-- object: LuaJIT cannot compile the making of a closure (NYI bytecode FNEW),
-- which would leave import_pd and every constructor interpreted. Nor does
-- the handle keep its device object alive (a weak-keyed side table would,
-- at twice the cost of ffi.gc): when a PD and its device are collected in
-- the same cycle, in whatever order, objects.lua's pending close covers it.
function B.track(obj, finalize) obj.h = ffi.gc(obj.h, finalize) end

function B.untrack(obj) ffi.gc(obj.h, nil) end

-- A busy device's finalizer keeps a plain pointer (no finalizer), keyed by
-- address; the cdata being finalized itself must not be kept.
function B.pending_entry(h, ctype)
  return tostring(ffi.cast("uintptr_t", h)), ffi.cast(ctype or "rshare_device *", h)
end

-- The two POSIX calls behind Device:inheritable_fd() and rshare.close_fd(),
-- declared only if nothing declared them yet (a redeclaration is an error).
for name, decl in pairs({ fcntl = "int fcntl(int fd, int cmd, ...);",
                          close = "int close(int fd);",
                          strerror = "char *strerror(int errnum);" }) do
  if not pcall(function() return ffi.C[name] end) then ffi.cdef(decl) end
end
local F_DUPFD = 0 -- <fcntl.h> on Linux: the lowest free fd >= arg, no FD_CLOEXEC
local LOWEST_FD = ffi.new("int", 3) -- a vararg must be an int cdata, not a double

local function errno_text()
  local errno = ffi.errno()
  return ffi.string(ffi.C.strerror(errno)), errno
end

function B.fd_dup_inheritable(fd)
  local dup = ffi.C.fcntl(fd, F_DUPFD, LOWEST_FD)
  if dup < 0 then return nil, errno_text() end
  return dup
end

function B.fd_close(fd)
  if ffi.C.close(fd) ~= 0 then return nil, errno_text() end
  return true
end

-- Maps are userdata (newproxy gives each its own metatable), since LuaJIT
-- honours __len on userdata but not on tables.
function B.new_map()
  local m = newproxy(true)
  return m, getmetatable(m)
end

local M = objects.build(B)
M.C = C -- the raw library namespace, for callers that need the bare ABI
M.library = library_path -- the path (or soname) the library was loaded from
require("rshare.broker").extend(M) -- named shares (since 1.1)
return M
