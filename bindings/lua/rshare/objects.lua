-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- The rshare Lua API, written once for both modules: rshare.ffi (LuaJIT)
-- and rshare.swig (Lua 5.4) each hand build() a small backend table and get
-- back the module: the device, PD, VAR and map classes and the module
-- functions, with one set of conventions (docs/lua.md):
--  * a function returns its value(s), or nil, message, code on a runtime
--    failure (message from rshare_last_error(), code the status name such as
--    "RSHARE_E_STALE"); a wrong Lua argument type raises an error;
--  * a PD or VAR keeps its device alive, a map keeps its VAR alive;
--  * finalizers only ever release this process's handle (unimport, device
--    close), exactly once; they never destroy a shared object. An explicit
--    unimport()/free()/close() that succeeds disarms the finalizer, and a
--    second one returns nil, msg, "RSHARE_E_STALE" from the C library
--    (handles are generation-checked, so a stale one is always safe to pass).
--
-- The backend. Its C calls follow rshare.core's convention: the status
-- first, then the out values, which mean something only when the status is
-- OK. They are named as in rshare.core (rshare_ prefix dropped):
--   device_open(name) device_import(fd) device_close(h) device_fd(h)
--   device_name(h) device_guid(h) device_provider(h)
--   pd_alloc(dev_h) pd_import(dev_h, bytes) pd_export(h) pd_handle(h)
--   pd_unimport(h) pd_free(h)
--   var_alloc(dev_h, flags) var_import(dev_h, bytes) var_export(h)
--   var_attrs(h) var_map(h) -> st, page  var_unmap(h) var_unimport(h)
--   var_free(h)
--   devices_count() devices_get(i) -> st, name, guid, provider
--   blob_kind(bytes) blob_describe(bytes) blob_to_text(bytes)
--   blob_from_text(text) channel_send(fd, dev_h, payload)
--   channel_recv(fd) -> st, dev_h, payload
--   since 1.1: device_caps(h) device_native(h) pd_native(h) var_native(h)
--   var_handle(h) mr_reg(pd_h, mem, n, access) mr_import(pd_h, bytes)
--   mr_export(h) mr_attrs(h) -> st, addr, length, lkey, rkey, access
--   mr_handle(h) mr_native(h) mr_unimport(h) mr_dereg(h)
--   dm_alloc(dev_h, n) dm_import(dev_h, bytes) dm_export(h) dm_length(h)
--   dm_read(h, off, n) -> st, bytes  dm_write(h, off, bytes) dm_handle(h)
--   dm_native(h) dm_unimport(h) dm_free(h) blob_field(bytes, field)
--   (the *_native calls give the address as a number)
--   since 1.2: buf_alloc(pd_h, n, access) buf_import(pd_h, bytes, fd)
--   buf_export(h) buf_fd(h) buf_mr(h) -> st, mr_h  buf_ptr(h) -> st, ptr, len
--   buf_read(h, off, n) -> st, bytes  buf_write(h, off, bytes)   (in bounds)
--   buf_unimport(h) buf_free(h)  channel_sendv(fd, dev_h, fds, payload)
--   channel_recvv(fd) -> st, dev_h, fds, payload
--   dm_map(h) -> st, ptr  dm_unmap(h)  dm_map_read(h, off, n) -> st, bytes
--   dm_map_write(h, off, bytes)   (through the mapping, in bounds)
-- and these return plain Lua values: version() version_number() last_error()
-- last_errno() status_name(st) strerror(st). Besides the C calls, only what
-- differs:
--   u64_number(v)                 a 64-bit out value of blob_field as a number
--   mem_new(n)                    -> n zeroed bytes of memory for an MR, kept
--                                 alive by whoever holds the value
--   mem_read(mem, off, n) -> bytes  mem_write(mem, off, bytes)   (in bounds)
--   OK, E_BUSY, VAR_FLAG_TLP, BLOB_MAX, TEXT_MAX, PAYLOAD_MAX, name
--   guid_string(guid)             a guid out value as "0x%016x"
--   page_read(h, page, off, n)    -> st, bytes   (h: the VAR; page: what
--   page_write(h, page, off, s)   -> st           var_map gave; in bounds)
--   track(obj, finalize)  arrange for finalize(obj.h) to run once when obj
--                         is collected (one shared finalize function per
--                         class: never make a closure per object, which
--                         LuaJIT cannot compile)
--   untrack(obj)          cancel that (the handle was released)
--   fd_dup_inheritable(fd) -> new fd, or nil, strerror text: a duplicate
--                         without close-on-exec, numbered 3 or more
--   fd_close(fd)          -> true, or nil, strerror text, errno
--   gc                    the classes' __gc metamethod, if the backend
--                         finalizes the object tables themselves
--   pending_entry(h[, ctype]) -> key, handle: how to remember a device
--                         handle (or a handle of ctype, e.g. "rshare_pd *")
--                         in a finalizer (see pending_close below)
--   new_map()             -> a new map object and its own metatable (each
--                         map has one); the object must honour __len
local util = require "rshare.util"

local objects = {}

function objects.build(B)
  local OK, E_BUSY = B.OK, B.E_BUSY
  local EBADF = 9 -- Linux's errno for a bad fd (fd_close)
  -- Locals for what the methods call (fewer lookups on the LuaJIT fast
  -- path); the rest is looked up in B when called.
  local last_error, status_name, guid_string = B.last_error, B.status_name, B.guid_string
  local device_close, pd_unimport, var_unimport = B.device_close, B.pd_unimport, B.var_unimport
  local pd_handle, pd_export, var_export = B.pd_handle, B.pd_export, B.var_export
  local var_attrs, var_map, var_unmap = B.var_attrs, B.var_map, B.var_unmap
  local page_read, page_write = B.page_read, B.page_write
  local track, untrack = B.track, B.untrack

  local M = {}

  local function fail(st)
    return nil, last_error(), status_name(st)
  end

  -- The value of a call that returns one, or the failure.
  local function value(st, v)
    if st ~= OK then return fail(st) end
    return v
  end

  -- The same, passed through as(value).
  local function value_as(as, st, v)
    if st ~= OK then return fail(st) end
    return as(v)
  end

  local function done(st)
    if st ~= OK then return fail(st) end
    return true
  end

  -- Names from the library (rshare_kind_name, rshare_provider_name); the
  -- number itself for one it does not know.
  local function provider_name(p) return B.provider_name(p) or p end
  local function kind_name(k) return B.kind_name(k) or k end

  -- Blob arguments: binary bytes, or the "rshare:..." text form.
  local function blob_arg(blob, fname)
    util.check_type(blob, "string", fname, 1)
    if util.is_text_blob(blob) then return M.from_text(blob) end
    return blob
  end

  local function class()
    local c = { __gc = B.gc }
    c.__index = c
    return c
  end
  local Device, Pd, Var, Mr, Dm = class(), class(), class(), class(), class()
  local Buf = class()

  ----------------------------------------------------------------------
  -- Finalizers
  ----------------------------------------------------------------------

  -- Devices whose finalizer found them still busy. An object keeps its
  -- device reachable, so the device is never collected before it, but the
  -- two may be collected in the same cycle, and LuaJIT then runs their
  -- finalizers in no set order (rshare.ffi gives the handle no reference
  -- to its device: see B.track there). When the Lua state closes, every
  -- finalizer runs: LuaJIT's in no set order, Lua 5.4's in reverse order of
  -- creation (the device normally last). A device that goes before its
  -- objects is closed by the last of them. The entries hold handles only, never an object:
  -- under LuaJIT a finalizer must not reach the object that owns its cdata
  -- (that would keep the cdata alive for ever).
  local pending_close, pending_count = {}, 0

  local function close_pending()
    for key, h in pairs(pending_close) do
      if device_close(h) ~= E_BUSY then
        pending_close[key] = nil
        pending_count = pending_count - 1
      end
    end
  end

  local function finalize_device(h)
    if device_close(h) == E_BUSY then
      local key, handle = B.pending_entry(h)
      pending_close[key] = handle
      pending_count = pending_count + 1
    end
  end

  local function child_finalizer(unimport)
    return function(h)
      unimport(h)
      if pending_count > 0 then close_pending() end
    end
  end
  local finalize_var = child_finalizer(var_unimport)
  local finalize_dm = child_finalizer(B.dm_unimport)

  -- A PD whose finalizer found it busy: an MR of it was still live (at
  -- state close finalizers run in no set order). The MR's finalizer, which
  -- runs later, releases it.
  local pending_pd, pending_pd_count = {}, 0

  local function finalize_pd(h)
    if pd_unimport(h) == E_BUSY then
      local key, handle = B.pending_entry(h, "rshare_pd *")
      pending_pd[key] = handle
      pending_pd_count = pending_pd_count + 1
      return
    end
    if pending_count > 0 then close_pending() end
  end

  -- What lives in a PD (an MR, a buffer): its finalizer also retries the
  -- PDs found busy.
  local function in_pd_finalizer(unimport)
    return function(h)
      unimport(h)
      for key, pd in pairs(pending_pd) do
        if pd_unimport(pd) ~= E_BUSY then
          pending_pd[key] = nil
          pending_pd_count = pending_pd_count - 1
        end
      end
      if pending_count > 0 then close_pending() end
    end
  end
  local finalize_buf = in_pd_finalizer(B.buf_unimport)

  local function finalize_mr(h)
    B.mr_unimport(h)
    for key, pd in pairs(pending_pd) do
      if pd_unimport(pd) ~= E_BUSY then
        pending_pd[key] = nil
        pending_pd_count = pending_pd_count - 1
      end
    end
    if pending_count > 0 then close_pending() end
  end

  local function new_object(class_, finalize, fields)
    local obj = setmetatable(fields, class_)
    track(obj, finalize)
    return obj
  end

  -- make(h, owner): the constructors below, for a call's new handle.
  local function adopt(make, owner, st, h)
    if st ~= OK then return fail(st) end
    return make(h, owner)
  end

  -- `live` turns false when this process released the handle, so that
  -- tostring() need not ask C (and overwrite rshare.last_error()). It is in
  -- the constructors' table, so setting it later does not grow the table.
  local function new_device(h)
    return new_object(Device, finalize_device, { h = h, live = true })
  end

  local function new_pd(h, dev)
    return new_object(Pd, finalize_pd, { h = h, dev = dev, live = true })
  end

  -- Memory registered in this process, held until its MR is deregistered:
  -- an MR only unimported here (explicitly or by the collector) leaves its
  -- registration live for the processes that imported it, and a
  -- registration must never point at memory the collector gave back.
  local registered = {}

  -- An MR lives in its PD (pd); mem is the memory it registered here (nil
  -- when imported).
  local function new_mr(h, pd, mem)
    return new_object(Mr, finalize_mr, { h = h, pd = pd, mem = mem, live = true })
  end

  local function new_dm(h, dev)
    return new_object(Dm, finalize_dm, { h = h, dev = dev, live = true })
  end

  -- A shared buffer lives in its PD (pd), as an MR does.
  local function new_buf(h, pd)
    return new_object(Buf, finalize_buf, { h = h, pd = pd, live = true })
  end

  -- mapgen counts the ways the page went away; maps remember the count.
  local function new_var(h, dev)
    return new_object(Var, finalize_var, { h = h, dev = dev, live = true, mapgen = 0 })
  end

  -- Shared by unimport and free: on success the handle is released, so the
  -- finalizer is disarmed; on failure (e.g. NOT_FOUND after another process
  -- freed the object) the handle stays live and the finalizer stays armed.
  local function release(self, fn)
    local st = fn(self.h)
    if st ~= OK then return fail(st) end
    untrack(self)
    self.live = false
    if pending_count > 0 then close_pending() end
    return true
  end

  ----------------------------------------------------------------------
  -- Devices
  ----------------------------------------------------------------------

  function M.open(name)
    if name ~= nil then util.check_type(name, "string", "open", 1) end
    return adopt(new_device, nil, B.device_open(name))
  end

  -- The library names the caller's fd in its messages since 1.1 (older ones
  -- named their private duplicate); the rewrite, a no-op now, stays for
  -- those (every fd a device import message mentions is this one or its
  -- duplicate).
  function M.from_fd(fd)
    util.check_int(fd, "from_fd", 1)
    local st, h = B.device_import(fd)
    if st ~= OK then
      local msg = last_error():gsub("fd %-?%d+", ("fd %d"):format(fd))
      return nil, msg, status_name(st)
    end
    return new_device(h)
  end

  function Device:fd() return value(B.device_fd(self.h)) end
  function Device:name() return value(B.device_name(self.h)) end

  function Device:guid() return value_as(guid_string, B.device_guid(self.h)) end
  function Device:provider() return value_as(provider_name, B.device_provider(self.h)) end

  function Device:close()
    local st = device_close(self.h)
    if st ~= OK then return fail(st) end
    untrack(self)
    self.live = false
    return true
  end

  -- A duplicate of the device fd that a child process started with
  -- os.execute or io.popen inherits (the device's own fd is close-on-exec).
  -- The caller owns it: rshare.close_fd(fd) once the child has started.
  function Device:inheritable_fd()
    local st, fd = B.device_fd(self.h)
    if st ~= OK then return fail(st) end
    local dup, err = B.fd_dup_inheritable(fd)
    if not dup then
      return nil, ("rshare: inheritable_fd: cannot duplicate fd %d: %s"):format(fd, err),
             "RSHARE_E_IO"
    end
    return dup
  end

  -- Since 1.1.
  local MAX_EXACT = 2^53 - 1 -- lengths and offsets: whole numbers a double holds exactly
  -- The RSHARE_CAP_* bits, in order .
  local CAPS = { "pd", "var", "mr", "dm", "native", "ledger", "buf", "dm_map" }

  -- The device's capabilities as a set: caps.pd, caps.var, caps.mr, caps.dm,
  -- caps.native are true or false; caps.mask is the bit mask.
  function Device:caps()
    local st, mask = B.device_caps(self.h)
    if st ~= OK then return fail(st) end
    local caps, bit = { mask = mask }, 1
    for _, name in ipairs(CAPS) do
      if name then caps[name] = mask % (2 * bit) >= bit end
      bit = bit * 2
    end
    return caps
  end

  function Device:native_address() return value(B.device_native(self.h)) end

  function Device:alloc_dm(length)
    util.check_int(length, "alloc_dm", 1, 0, MAX_EXACT)
    return adopt(new_dm, self, B.dm_alloc(self.h, length))
  end

  function Device:import_dm(blob)
    local bytes, msg, code = blob_arg(blob, "import_dm")
    if not bytes then return nil, msg, code end
    return adopt(new_dm, self, B.dm_import(self.h, bytes))
  end

  function Device:alloc_pd()
    return adopt(new_pd, self, B.pd_alloc(self.h))
  end

  function Device:alloc_var(flags)
    if flags ~= nil then util.check_int(flags, "alloc_var", 1, 0, 2^32 - 1) end
    return adopt(new_var, self, B.var_alloc(self.h, flags or 0))
  end

  function Device:import_pd(blob)
    local bytes, msg, code = blob_arg(blob, "import_pd")
    if not bytes then return nil, msg, code end
    return adopt(new_pd, self, B.pd_import(self.h, bytes))
  end

  function Device:import_var(blob)
    local bytes, msg, code = blob_arg(blob, "import_var")
    if not bytes then return nil, msg, code end
    return adopt(new_var, self, B.var_import(self.h, bytes))
  end

  ----------------------------------------------------------------------
  -- PDs and VARs
  ----------------------------------------------------------------------

  function Pd:export() return value(pd_export(self.h)) end
  function Pd:handle() return value(pd_handle(self.h)) end
  function Pd:device() return self.dev end
  function Pd:unimport() return release(self, pd_unimport) end
  function Pd:free() return release(self, B.pd_free) end
  function Pd:native_address() return value(B.pd_native(self.h)) end

  -- Register length bytes of new, zeroed memory (owned by the MR: read and
  -- write it with mr:read/mr:write) with access, a sum of rshare.ACCESS_*
  -- (default LOCAL_WRITE). While the MR lives, this PD cannot be released.
  function Pd:reg_mr(length, access)
    util.check_int(length, "reg_mr", 1, 1, MAX_EXACT)
    if access ~= nil then util.check_int(access, "reg_mr", 2, 0, 2^32 - 1) end
    local mem = B.mem_new(length)
    local st, h = B.mr_reg(self.h, mem, length, access or M.ACCESS_LOCAL_WRITE)
    if st ~= OK then return fail(st) end
    registered[mem] = true
    return new_mr(h, self, mem)
  end

  function Pd:import_mr(blob)
    local bytes, msg, code = blob_arg(blob, "import_mr")
    if not bytes then return nil, msg, code end
    return adopt(new_mr, self, B.mr_import(self.h, bytes))
  end

  -- A shared buffer of length zeroed bytes (since 1.2): memory in a sealed
  -- memfd that every process sharing it maps, registered once as an MR
  -- with access (default LOCAL_WRITE). Send it with rshare.send(fd, dev,
  -- blobs, { buf:fd() }); while it lives this PD cannot be released.
  function Pd:alloc_buffer(length, access)
    util.check_int(length, "alloc_buffer", 1, 1, MAX_EXACT)
    if access ~= nil then util.check_int(access, "alloc_buffer", 2, 0, 2^32 - 1) end
    return adopt(new_buf, self, B.buf_alloc(self.h, length, access or M.ACCESS_LOCAL_WRITE))
  end

  -- Import a buffer from its blob and its memory fd (checked to be that
  -- buffer's memfd; the caller keeps and closes its fd).
  function Pd:import_buffer(blob, fd)
    local bytes, msg, code = blob_arg(blob, "import_buffer")
    if not bytes then return nil, msg, code end
    util.check_int(fd, "import_buffer", 2)
    return adopt(new_buf, self, B.buf_import(self.h, bytes, fd))
  end

  function Var:export() return value(var_export(self.h)) end
  function Var:device() return self.dev end

  -- Every way the page can go away invalidates the map objects first.
  function Var:unmap()
    self.mapgen = self.mapgen + 1
    return done(var_unmap(self.h))
  end

  function Var:unimport()
    self.mapgen = self.mapgen + 1
    return release(self, var_unimport)
  end

  function Var:free()
    self.mapgen = self.mapgen + 1
    return release(self, B.var_free)
  end

  function Var:handle() return value(B.var_handle(self.h)) end
  function Var:native_address() return value(B.var_native(self.h)) end

  function Var:attrs()
    local st, page_id, length, mmap_off = var_attrs(self.h)
    if st ~= OK then return fail(st) end
    return { page_id = page_id, length = length, mmap_off = mmap_off }
  end

  ----------------------------------------------------------------------
  -- MRs and device memory (since 1.1)
  ----------------------------------------------------------------------

  function Mr:export() return value(B.mr_export(self.h)) end
  function Mr:handle() return value(B.mr_handle(self.h)) end
  function Mr:native_address() return value(B.mr_native(self.h)) end
  function Mr:device() return self.pd.dev end

  -- mr:read/mr:write end with the handle; the memory itself is let go only
  -- by a deregistration (see registered).
  local function release_mr(self, fn)
    local mem = self.mem
    local ok, msg, code = release(self, fn)
    if ok then
      self.mem = nil
      if fn == B.mr_dereg and mem then registered[mem] = nil end
    end
    return ok, msg, code
  end
  function Mr:unimport() return release_mr(self, B.mr_unimport) end
  function Mr:dereg() return release_mr(self, B.mr_dereg) end
  Mr.free = Mr.dereg

  -- { addr, length, lkey, rkey, access }; addr is the registering process's.
  function Mr:attrs()
    local st, addr, length, lkey, rkey, access = B.mr_attrs(self.h)
    if st ~= OK then return fail(st) end
    return { addr = addr, length = length, lkey = lkey, rkey = rkey, access = access }
  end

  -- The memory an MR registered here: bounds-checked reads and writes.
  local function mem_range(self, off, n, what)
    if not self.live or not self.mem then
      return nil, "rshare mr: " .. what .. ": no local memory (imported, or released)",
             "RSHARE_E_INVAL"
    end
    local st, _, length = B.mr_attrs(self.h)
    if st ~= OK then return fail(st) end
    if not util.is_count(off) or off > length or not util.is_count(n) or n > length - off then
      return nil, "rshare mr: " .. what .. " out of range", "RSHARE_E_INVAL"
    end
    return true
  end

  function Mr:read(off, n)
    off = off or 0
    local ok, msg, code = mem_range(self, off, n or 0, "read")
    if not ok then return nil, msg, code end
    if n == nil then n = select(3, B.mr_attrs(self.h)) - off end
    return B.mem_read(self.mem, off, n)
  end

  function Mr:write(off, bytes)
    util.check_type(bytes, "string", "mr:write", 2)
    local ok, msg, code = mem_range(self, off, #bytes, "write")
    if not ok then return nil, msg, code end
    B.mem_write(self.mem, off, bytes)
    return true
  end

  ----------------------------------------------------------------------
  -- Shared buffers (since 1.2)
  ----------------------------------------------------------------------

  function Buf:export() return value(B.buf_export(self.h)) end
  function Buf:fd() return value(B.buf_fd(self.h)) end -- borrowed: the buffer closes it
  function Buf:device() return self.pd.dev end
  function Buf:unimport() return release(self, B.buf_unimport) end
  function Buf:free() return release(self, B.buf_free) end

  function Buf:length()
    local st, _, length = B.buf_ptr(self.h)
    return value(st, length)
  end

  -- The MR's { addr, length, lkey, rkey, access }: addr is the allocator's
  -- (what work requests use), the keys every process shares.
  function Buf:attrs()
    local st, mr = B.buf_mr(self.h)
    if st ~= OK then return fail(st) end
    return Mr.attrs({ h = mr })
  end

  function Buf:handle()
    local st, mr = B.buf_mr(self.h)
    if st ~= OK then return fail(st) end
    return value(B.mr_handle(mr))
  end

  -- This process's mapping: under LuaJIT a uint8_t * cdata and the length
  -- (zero-copy; valid until unimport/free); under Lua 5.4 a light userdata
  -- Lua cannot dereference (use read/write).
  function Buf:ptr()
    local st, ptr, length = B.buf_ptr(self.h)
    if st ~= OK then return fail(st) end
    return ptr, length
  end

  -- Bounds-checked read(off, n) and write(off, bytes) methods over memory
  -- this process maps: length(h) gives the status and the length, read and
  -- write name the backend's calls; what names the memory in errors,
  -- write_method the write method in type errors.
  local function ranged_access(length, read, write, what, write_method)
    local function in_range(self, off, n)
      local st, len = length(self.h)
      if st ~= OK then return fail(st) end
      if not util.is_count(off) or off > len or not util.is_count(n) or n > len - off then
        return nil, ("rshare %s: access out of range"):format(what), "RSHARE_E_INVAL"
      end
      return true
    end
    return function(self, off, n)
      local ok, msg, code = in_range(self, off, n)
      if not ok then return nil, msg, code end
      return value(B[read](self.h, off, n))
    end, function(self, off, bytes)
      util.check_type(bytes, "string", write_method, 2)
      local ok, msg, code = in_range(self, off, #bytes)
      if not ok then return nil, msg, code end
      return done(B[write](self.h, off, bytes))
    end
  end

  -- Bounds-checked copies out of and into the memory.
  Buf.read, Buf.write = ranged_access(function(h)
    local st, _, length = B.buf_ptr(h)
    return st, length
  end, "buf_read", "buf_write", "buffer", "buf:write")

  function Dm:export() return value(B.dm_export(self.h)) end
  function Dm:handle() return value(B.dm_handle(self.h)) end
  function Dm:length() return value(B.dm_length(self.h)) end
  function Dm:native_address() return value(B.dm_native(self.h)) end
  function Dm:device() return self.dev end
  function Dm:unimport() return release(self, B.dm_unimport) end
  function Dm:free() return release(self, B.dm_free) end

  -- The C library checks the range (past the end: RSHARE_E_INVAL, nothing
  -- written); Lua checks the types.
  function Dm:read(off, n)
    util.check_int(off, "dm:read", 1, 0, MAX_EXACT)
    util.check_int(n, "dm:read", 2, 0, MAX_EXACT)
    return value(B.dm_read(self.h, off, n))
  end

  function Dm:write(off, bytes)
    util.check_int(off, "dm:write", 1, 0, MAX_EXACT)
    util.check_type(bytes, "string", "dm:write", 2)
    return done(B.dm_write(self.h, off, bytes))
  end

  -- Device memory mapped into this process (since 1.2, where the device
  -- allows it: caps().dm_map; else nil, msg, "RSHARE_E_UNSUPPORTED"). Under
  -- LuaJIT a uint8_t * cdata and the length (zero-copy), under Lua 5.4 a
  -- light userdata Lua cannot dereference (use map_read/map_write); the same
  -- address until unmap(), unimport() or free(). On mlx5 it is device
  -- memory: access it in aligned 4-byte words (docs/hardware.md).
  function Dm:map()
    local st, ptr = B.dm_map(self.h)
    if st ~= OK then return fail(st) end
    local st2, length = B.dm_length(self.h)
    if st2 ~= OK then return fail(st2) end
    return ptr, length
  end

  function Dm:unmap() return done(B.dm_unmap(self.h)) end

  -- Bounds-checked loads and stores through the mapping (mapping it first
  -- if need be), where read/write copy through the device's own calls.
  Dm.map_read, Dm.map_write = ranged_access(function(h) return B.dm_length(h) end,
                                            "dm_map_read", "dm_map_write", "device memory",
                                            "dm:map_write")

  ----------------------------------------------------------------------
  -- tostring(), like the Python module's reprs: the class, then what
  -- identifies the object, e.g. rshare.PD(handle=3, device=sim0). Released
  -- objects print <closed>/<released> without calling C.
  ----------------------------------------------------------------------

  -- "key=value, ..." from a call's out values, or "<STATUS>" if it failed.
  local function fields(st, keys, ...)
    if st ~= OK then return "<" .. status_name(st) .. ">" end
    local out = {}
    for i, key in ipairs(keys) do
      out[i] = key .. "=" .. tostring((select(i, ...)))
    end
    return table.concat(out, ", ")
  end

  local function device_label(dev)
    if not dev.live then return "<closed>" end
    local st, name = B.device_name(dev.h)
    if st ~= OK then return "<" .. status_name(st) .. ">" end
    return name
  end

  function Device:__tostring()
    if not self.live then return "rshare.Device(<closed>)" end
    local st, name = B.device_name(self.h)
    local fd, provider
    if st == OK then st, fd = B.device_fd(self.h) end
    if st == OK then st, provider = B.device_provider(self.h) end
    return ("rshare.Device(%s)"):format(
      fields(st, { "name", "fd", "provider" }, name, fd, provider_name(provider)))
  end

  function Pd:__tostring()
    if not self.live then return "rshare.PD(<released>)" end
    local st, handle = pd_handle(self.h)
    return ("rshare.PD(%s)"):format(
      fields(st, { "handle", "device" }, handle, device_label(self.dev)))
  end

  function Var:__tostring()
    if not self.live then return "rshare.VAR(<released>)" end
    local st, page_id, length = var_attrs(self.h)
    return ("rshare.VAR(%s)"):format(
      fields(st, { "page_id", "length", "device" }, page_id, length, device_label(self.dev)))
  end

  function Mr:__tostring()
    if not self.live then return "rshare.MR(<released>)" end
    local st, _, length, lkey, rkey = B.mr_attrs(self.h)
    return ("rshare.MR(%s)"):format(fields(st, { "length", "lkey", "rkey", "device" },
      length, lkey, rkey, device_label(self.pd.dev)))
  end

  function Dm:__tostring()
    if not self.live then return "rshare.DM(<released>)" end
    local st, length = B.dm_length(self.h)
    return ("rshare.DM(%s)"):format(
      fields(st, { "length", "device" }, length, device_label(self.dev)))
  end

  function Buf:__tostring()
    if not self.live then return "rshare.Buffer(<released>)" end
    local st, _, length = B.buf_ptr(self.h)
    return ("rshare.Buffer(%s)"):format(
      fields(st, { "length", "device" }, length, device_label(self.pd.dev)))
  end

  ----------------------------------------------------------------------
  -- Mapped VAR pages: objects with bounds-checked read/write that refuse
  -- to touch the page once the VAR was unmapped, unimported or freed.
  ----------------------------------------------------------------------

  local Map = {}
  local function map_len(m) return (Map.len(m)) end
  local function map_tostring(m)
    local len = Map.len(m)
    if not len then return "rshare.VAR.map(<unmapped>)" end
    return ("rshare.VAR.map(length=%d)"):format(len)
  end
  -- The map objects map() made: no other value passes for a map. A map's
  -- state is in its own metatable, which keeps its VAR alive. The values
  -- are plain `true`: a weak-keyed table under LuaJIT keeps its values
  -- alive, which must not hold a VAR (and its device) for another cycle.
  local maps = setmetatable({}, { __mode = "k" })

  local function not_a_map(level)
    error("rshare: not a VAR map object", level + 1)
  end

  local function map_state(m)
    if not maps[m] then not_a_map(3) end
    local s = getmetatable(m)
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
    return value(page_read(s.var.h, s.page, off, n))
  end

  function Map.write(m, off, bytes)
    local s, msg, code = map_state(m)
    if not s then return nil, msg, code end
    util.check_type(bytes, "string", "map:write", 2)
    if not util.is_count(off) or off > s.len then return range_error("offset out of range") end
    if #bytes > s.len - off then return range_error("write past the end of the page") end
    return done(page_write(s.var.h, s.page, off, bytes))
  end

  function Map.len(m)
    local s, msg, code = map_state(m)
    if not s then return nil, msg, code end
    return s.len
  end

  function Map.valid(m) return map_state(m) ~= nil end

  function Map.unmap(m)
    if not maps[m] then not_a_map(2) end
    return getmetatable(m).var:unmap()
  end

  function Var:map()
    local st, page = var_map(self.h)
    if st ~= OK then return fail(st) end
    local _, length
    st, _, length = var_attrs(self.h)
    if st ~= OK then return fail(st) end
    local m, s = B.new_map()
    s.__index, s.__len, s.__tostring = Map, map_len, map_tostring
    s.var, s.gen, s.page, s.len = self, self.mapgen, page, length
    maps[m] = true
    return m
  end

  ----------------------------------------------------------------------
  -- Library, device list, blobs, channel
  ----------------------------------------------------------------------

  -- Closes an fd from Device:inheritable_fd() (Lua has no close of its own).
  function M.close_fd(fd)
    util.check_int(fd, "close_fd", 1)
    local ok, err, errno = B.fd_close(fd)
    if not ok then
      return nil, ("rshare: close_fd: cannot close fd %d: %s"):format(fd, err),
             errno == EBADF and "RSHARE_E_INVAL" or "RSHARE_E_IO"
    end
    return true
  end

  function M.version() return B.version() end

  -- { major, minor, patch } of the library (since 1.1), from its number.
  function M.version_info()
    local n = B.version_number()
    local floor = math.floor
    return { major = floor(n / 10000), minor = floor(n / 100) % 100, patch = n % 100 }
  end
  function M.last_error() return last_error() end
  function M.last_errno() return B.last_errno() end

  function M.status_name(st)
    util.check_type(st, "number", "status_name", 1)
    return status_name(st)
  end

  function M.strerror(st)
    util.check_type(st, "number", "strerror", 1)
    return B.strerror(st)
  end

  function M.devices()
    local st, count = B.devices_count()
    if st ~= OK then return fail(st) end
    local list = {}
    for i = 0, count - 1 do
      local name, guid, provider
      st, name, guid, provider = B.devices_get(i)
      if st ~= OK then return fail(st) end
      list[#list + 1] = { index = i, name = name, guid = guid_string(guid),
                          provider = provider_name(provider) }
    end
    return list
  end

  function M.kind(blob)
    local bytes, msg, code = blob_arg(blob, "kind")
    if not bytes then return nil, msg, code end
    return value_as(kind_name, B.blob_kind(bytes))
  end

  -- The blob's fields as a table, read one by one with rshare_blob_field():
  -- kind, provider, guid, table (hex strings), handle, serial and the kind's
  -- own (VAR: page_id, length, mmap_off; MR: pd_handle, pd_serial, addr,
  -- length, lkey, rkey, access; DM: length; buffer: the MR's and mem_dev,
  -- mem_ino, the memfd's identity), and ledger, the ledger serial of a
  -- hardware blob made in a context with a ledger. The numbers are enum
  -- rshare_blob_field's (frozen: abi/rshare.abi.json).
  local FIELDS = { "kind", "provider", "guid", "table", "handle", "serial", "page_id", "length",
                   "mmap_off", "pd_handle", "pd_serial", "addr", "lkey", "rkey", "access",
                   "mem_dev", "mem_ino", "ledger" }
  local FIELD_NUMBER = { kind = 1, provider = 2, guid = 3, table = 4, handle = 5, serial = 6,
                         page_id = 7, length = 8, mmap_off = 9, pd_handle = 10, pd_serial = 11,
                         addr = 12, lkey = 13, rkey = 14, access = 15, mem_dev = 16,
                         mem_ino = 17, ledger = 18 }
  local E_NOT_FOUND = -12

  function M.inspect(blob)
    local bytes, msg, code = blob_arg(blob, "inspect")
    if not bytes then return nil, msg, code end
    local info = {}
    for _, name in ipairs(FIELDS) do
      local st, v = B.blob_field(bytes, FIELD_NUMBER[name])
      if st == OK then
        if name == "guid" or name == "table" then
          info[name] = guid_string(v)
        else
          info[name] = B.u64_number(v)
        end
      elseif st ~= E_NOT_FOUND then
        return fail(st) -- a bad blob fails at the first field
      end
    end
    info.kind = kind_name(info.kind)
    info.provider = provider_name(info.provider)
    return info
  end

  -- kind_name(k), provider_name(p): the library's names of enum
  -- rshare_kind and rshare_provider values ("pd", "sim"), nil if unknown.
  function M.kind_name(k) return B.kind_name(util.check_int(k, "kind_name", 1)) end
  function M.provider_name(p) return B.provider_name(util.check_int(p, "provider_name", 1)) end

  -- split_blobs(payload): the blobs a payload is made of (each framed by
  -- rshare_blob_size and validated), or nil if it is not a sequence of
  -- valid blobs.
  function M.split_blobs(payload)
    util.check_type(payload, "string", "split_blobs", 1)
    local out, off = {}, 1
    while off <= #payload do
      local rest = payload:sub(off)
      local st, n = B.blob_size(rest)
      if st ~= OK then return nil end
      local blob = rest:sub(1, n)
      if not M.kind(blob) then return nil end
      out[#out + 1] = blob
      off = off + n
    end
    return out
  end

  -- import_blobs(dev, blobs): import every blob by its kind, with the
  -- method import_<kind> of what it lives in: an object whose blob names a
  -- PD (pd_handle: an MR) into the PD imported here with that handle (none:
  -- skipped), every other into dev. Returns a table from kind name to the
  -- objects imported, in blob order, and the list of all in import order;
  -- on failure nil, msg, code, with what was imported unimported. A buffer
  -- takes the next of fds (its memory, received with the blobs).
  function M.import_blobs(dev, blobs, fds)
    local by_kind, order, pds = {}, {}, {}
    local function undo(...)
      for i = #order, 1, -1 do order[i]:unimport() end
      return ...
    end
    for pass = 1, 2 do
      for _, blob in ipairs(blobs) do
        local kind, msg, code = M.kind(blob)
        if not kind then return undo(nil, msg, code) end
        local st, pd_handle = B.blob_field(blob, FIELD_NUMBER.pd_handle)
        if st ~= OK and st ~= E_NOT_FOUND then return undo(fail(st)) end
        if (st == OK) == (pass == 2) then
          local owner = dev
          if st == OK then owner = pds[B.u64_number(pd_handle)] end
          if owner then
            local obj
            if kind == "buf" then
              local fd = fds and table.remove(fds, 1)
              if not fd then return undo(nil, "rshare: a buffer blob without its fd",
                                         "RSHARE_E_INVAL") end
              obj, msg, code = owner:import_buffer(blob, fd)
            else
              obj, msg, code = owner["import_" .. kind](owner, blob)
            end
            if not obj then return undo(nil, msg, code) end
            order[#order + 1] = obj
            by_kind[kind] = by_kind[kind] or {}
            table.insert(by_kind[kind], obj)
            if kind == "pd" and not pds[obj:handle()] then pds[obj:handle()] = obj end
          end
        end
      end
    end
    return by_kind, order
  end

  function M.to_text(blob)
    util.check_type(blob, "string", "to_text", 1)
    return value(B.blob_to_text(blob))
  end

  function M.from_text(text)
    util.check_type(text, "string", "from_text", 1)
    return value(B.blob_from_text(text))
  end

  -- fds (since 1.2): a table of up to 8 more fds to pass (e.g. buf:fd()).
  function M.send(fd, dev, payload, fds)
    util.check_int(fd, "send", 1)
    if getmetatable(dev) ~= Device then error("rshare.send: bad argument #2 (device expected)", 2) end
    payload = payload or ""
    util.check_type(payload, "string", "send", 3)
    if fds ~= nil then
      util.check_type(fds, "table", "send", 4)
      return done(B.channel_sendv(fd, dev.h, fds, payload))
    end
    return done(B.channel_send(fd, dev.h, payload))
  end

  -- Returns the received device, the payload string and the table of
  -- extra fds (the caller's to close with rshare.close_fd). Since 1.2.
  function M.recv_fds(fd)
    util.check_int(fd, "recv_fds", 1)
    local st, h, fds, payload = B.channel_recvv(fd)
    if st ~= OK then return fail(st) end
    return new_device(h), payload, fds
  end

  -- Returns the received device and the payload string.
  function M.recv(fd)
    util.check_int(fd, "recv", 1)
    local st, h, payload = B.channel_recv(fd)
    if st ~= OK then return fail(st) end
    return new_device(h), payload
  end

  -- For rshare/broker.lua: a device handle the library made (an attach).
  function M._adopt_device(h) return adopt(new_device, nil, OK, h) end

  -- Constants, for callers that do not want to spell numbers.
  M.VAR_FLAG_TLP, M.BLOB_MAX = B.VAR_FLAG_TLP, B.BLOB_MAX
  M.TEXT_MAX, M.PAYLOAD_MAX = B.TEXT_MAX, B.PAYLOAD_MAX
  -- MR access flags (the IBV_ACCESS_* values; add them).
  M.ACCESS_LOCAL_WRITE, M.ACCESS_REMOTE_WRITE = 1, 2
  M.ACCESS_REMOTE_READ, M.ACCESS_REMOTE_ATOMIC = 4, 8
  M.backend = B.name
  return M
end

return objects
