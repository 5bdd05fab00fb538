-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- rshare.broker: named shares through a broker, for both Lua modules
-- (rshare.swig under Lua 5.4, rshare.ffi under LuaJIT). Each module calls
-- broker.extend(M) at load time; the functions then are rshare.serve,
-- rshare.publish, rshare.attach, rshare.shares and rshare.withdraw, with the
-- module's conventions: a value, or nil, message, code (docs/lua.md,
-- docs/broker.md).
--
--   local broker = assert(rshare.serve())                 -- or `rshare serve`
--   local share = assert(rshare.publish("team/exp1", dev, { pd = pd, var = var }))
--   -- in another process:
--   local s = assert(rshare.attach("team/exp1", { timeout = 10 }))
--   s.var:map():write(0, "hi"); s:close()
--
-- attach waits in calls of at most SLICE_MS, so the interpreter's Ctrl-C
-- handler (lua, luajit) interrupts a wait between two of them. An event
-- loop uses rshare.attach_start instead (since 1.2): an operation with an
-- fd to poll, finish() and cancel(); rshare.luv drives it in a luv loop.
local util = require "rshare.util"

local broker = {}

local SLICE_MS = 100

-- The C calls, status first, for each backend (the same shapes as
-- swig/lua/broker_lua.i's natives).
local function ffi_backend(C)
  local ffi = require "ffi"
  local h_cell = ffi.new("void *[1]")
  local dev_cell = ffi.new("rshare_device *[1]")
  local size_cell = ffi.new("size_t[1]")
  local int_cell = ffi.new("int[1]")
  local path = ffi.new("char[256]")
  local payload -- RSHARE_PAYLOAD_MAX bytes, made by the first attach
  local R = {}

  local function token(h) return ffi.cast("void *", ffi.cast("uintptr_t", h)) end

  function R.broker_start(ep)
    local st = C.rshare_broker_start(ep, ffi.cast("rshare_broker **", h_cell))
    return st, ffi.cast("uintptr_t", h_cell[0])
  end
  function R.broker_stop(h) return C.rshare_broker_stop(token(h)) end
  function R.broker_endpoint(h)
    local st = h == nil and C.rshare_broker_default_endpoint(path, 256, size_cell)
               or C.rshare_broker_endpoint(token(h), path, 256, size_cell)
    if st ~= 0 then return st end
    return st, ffi.string(path, size_cell[0])
  end
  local FDS_MAX = C.RSHARE_CHANNEL_FDS_MAX
  local fd_cells = ffi.new("int[?]", FDS_MAX + 1)
  local nfds_cell = ffi.new("size_t[1]")
  function R.broker_publish(ep, name, dev_h, bytes, persistent, uids, gids, fds)
    local o = ffi.new("rshare_publish_opts")
    o.size = ffi.sizeof(o)
    o.flags = persistent and C.RSHARE_PUBLISH_PERSISTENT or 0
    local u = ffi.new("uint32_t[?]", #uids + 1)
    local g = ffi.new("uint32_t[?]", #gids + 1)
    for i, v in ipairs(uids) do u[i - 1] = v end
    for i, v in ipairs(gids) do g[i - 1] = v end
    o.n_uids, o.uids, o.n_gids, o.gids = #uids, u, #gids, g
    local n = math.min(#fds, FDS_MAX + 1) -- more: the library refuses
    for i = 1, n do fd_cells[i - 1] = fds[i] end
    local st = C.rshare_broker_publishv(ep, name, dev_h, fd_cells, n, bytes, #bytes, o,
                                        ffi.cast("rshare_share **", h_cell))
    return st, ffi.cast("uintptr_t", h_cell[0])
  end
  function R.broker_withdraw(h) return C.rshare_broker_withdraw(token(h)) end
  function R.broker_withdraw_name(ep, name) return C.rshare_broker_withdraw_name(ep, name) end
  -- An attach's status, and on success the device and the payload.
  local function attached(st, with_fds)
    if st ~= 0 then return st end
    local fds = {}
    for i = 1, with_fds and tonumber(nfds_cell[0]) or 0 do fds[i] = fd_cells[i - 1] end
    return st, dev_cell[0], ffi.string(payload, size_cell[0]), fds
  end
  function R.broker_attach(ep, name, ms)
    payload = payload or ffi.new("uint8_t[?]", C.RSHARE_PAYLOAD_MAX)
    return attached(C.rshare_broker_attachv(ep, name, ms, dev_cell, fd_cells, FDS_MAX,
                                            nfds_cell, payload, C.RSHARE_PAYLOAD_MAX,
                                            size_cell), true)
  end
  -- The list may grow between two calls: a few more tries (as the Lua 5.4
  -- module's), not an endless loop against a broker that always says
  -- NOSPACE.
  local JSON_TRIES = 8
  local function json(fn, ep)
    local cap, st = 4096, nil
    for _ = 1, JSON_TRIES do
      local buf = ffi.new("char[?]", cap)
      st = fn(ep, buf, cap, size_cell)
      if st == 0 then return st, ffi.string(buf, size_cell[0]) end
      if st ~= C.RSHARE_E_NOSPACE then return st end
      cap = tonumber(size_cell[0]) + 4096 -- it may grow before the next call
    end
    return st
  end
  function R.broker_list(ep) return json(C.rshare_broker_list, ep) end
  -- Since 1.2: attach from an event loop.
  function R.broker_waiting(ep) return json(C.rshare_broker_waiting, ep) end
  function R.attach_start(ep, name)
    -- startv: a share's buffer fds are welcome (attach_finish takes them)
    local st = C.rshare_broker_attach_startv(ep, name, ffi.cast("rshare_attach **", h_cell))
    return st, ffi.cast("uintptr_t", h_cell[0])
  end
  function R.attach_fd(h)
    local st = C.rshare_attach_fd(token(h), int_cell)
    return st, int_cell[0]
  end
  function R.attach_finish(h)
    payload = payload or ffi.new("uint8_t[?]", C.RSHARE_PAYLOAD_MAX)
    return attached(C.rshare_attach_finishv(token(h), dev_cell, fd_cells, FDS_MAX, nfds_cell,
                                            payload, C.RSHARE_PAYLOAD_MAX, size_cell), true)
  end
  function R.attach_cancel(h) return C.rshare_attach_cancel(token(h)) end
  function R.attach_wait(h, ms, flags) return C.rshare_attach_wait(token(h), ms, flags) end
  R.WAIT_SIGNAL = C.RSHARE_WAIT_SIGNAL
  R.NOT_FOUND, R.AGAIN, R.STALE = C.RSHARE_E_NOT_FOUND, C.RSHARE_E_AGAIN, C.RSHARE_E_STALE
  R.NAME_MAX, R.IDS_MAX = C.RSHARE_SHARE_NAME_MAX, C.RSHARE_SHARE_IDS_MAX
  return R
end

local function swig_backend(core)
  return {
    broker_start = core.broker_start, broker_stop = core.broker_stop,
    broker_endpoint = core.broker_endpoint, broker_publish = core.broker_publish,
    broker_withdraw = core.broker_withdraw, broker_withdraw_name = core.broker_withdraw_name,
    broker_attach = core.broker_attach, broker_list = core.broker_list,
    broker_waiting = core.broker_waiting, attach_start = core.attach_start,
    attach_fd = core.attach_fd, attach_finish = core.attach_finish,
    attach_cancel = core.attach_cancel, attach_wait = core.attach_wait,
    WAIT_SIGNAL = core.RSHARE_WAIT_SIGNAL,
    NOT_FOUND = core.RSHARE_E_NOT_FOUND, AGAIN = core.RSHARE_E_AGAIN,
    STALE = core.RSHARE_E_STALE, NAME_MAX = 255, IDS_MAX = 64,
  }
end

-- The broker's list (docs/broker.md): a JSON array of flat objects whose
-- values are strings without escapes (names are [A-Za-z0-9._/-]), numbers,
-- true, false, null or arrays of such strings. This reads exactly that.
local function decode_list(s)
  local pos = 1
  local function ws() pos = s:find("[^ \t\r\n]", pos) or #s + 1 end
  local function expect(c)
    ws()
    if s:sub(pos, pos) ~= c then error(("rshare.shares: bad list at byte %d"):format(pos), 0) end
    pos = pos + 1
  end
  local value
  local function items(close, item)
    local out = {}
    ws()
    if s:sub(pos, pos) == close then pos = pos + 1 return out end
    repeat
      item(out)
      ws()
      local c = s:sub(pos, pos)
      pos = pos + 1
    until c ~= ","
    if s:sub(pos - 1, pos - 1) ~= close then error("rshare.shares: bad list", 0) end
    return out
  end
  function value()
    ws()
    local c = s:sub(pos, pos)
    if c == '"' then
      local e = assert(s:find('"', pos + 1, true), "rshare.shares: bad string")
      local v = s:sub(pos + 1, e - 1)
      pos = e + 1
      return v
    elseif c == "[" then
      pos = pos + 1
      return items("]", function(out) out[#out + 1] = value() end)
    elseif c == "{" then
      pos = pos + 1
      return items("}", function(out)
        local k = value()
        expect(":")
        out[k] = value()
      end)
    end
    for word, v in pairs({ ["true"] = true, ["false"] = false, null = false }) do
      if s:sub(pos, pos + #word - 1) == word then pos = pos + #word return v end
    end
    local num = s:match("^-?%d+%.?%d*", pos)
    if not num then error(("rshare.shares: bad list at byte %d"):format(pos), 0) end
    pos = pos + #num
    local n = tonumber(num)
    return math.tointeger and math.tointeger(n) or n
  end
  local ok, v = pcall(value)
  if not ok then return nil, v end
  return v
end

-- A finalizer for a table under both Lua 5.4 (__gc on the table) and
-- LuaJIT (which ignores it there: a proxy userdata carries it).
local function on_collect(obj, mt, fn)
  mt.__gc = fn
  if newproxy then
    obj._gc = newproxy(true)
    getmetatable(obj._gc).__gc = function() fn(obj) end
  end
  return setmetatable(obj, mt)
end

function broker.extend(M)
  local R = M.C and ffi_backend(M.C) or swig_backend(M.core)

  local function fail(st) return nil, M.last_error(), M.status_name(st) end

  local function opt_string(v, fname, i)
    if v ~= nil then util.check_type(v, "string", fname, i) end
    return v
  end

  local function ids(list, fname, what)
    list = list or {}
    util.check_type(list, "table", fname, what)
    if #list > R.IDS_MAX then error(("rshare.%s: at most %d %s"):format(fname, R.IDS_MAX, what), 3) end
    for _, v in ipairs(list) do util.check_int(v, fname, 3, 0) end
    return list
  end

  ------------------------------------------------------------------ brokers
  local Broker = { __name = "rshare.Broker" }
  Broker.__index = Broker

  -- A broker in this process (a thread). nil, msg, "RSHARE_E_BUSY" if a
  -- live broker serves the endpoint.
  function M.serve(endpoint)
    opt_string(endpoint, "serve", 1)
    local st, h = R.broker_start(endpoint)
    if st ~= 0 then return fail(st) end
    local _, path = R.broker_endpoint(h)
    return on_collect({ h = h, endpoint = path }, Broker, function(b) b:stop() end)
  end

  -- Stop serving: every share it holds is withdrawn. True; idempotent.
  function Broker:stop()
    local h = self.h
    if h == nil then return true end
    self.h = nil
    local st = R.broker_stop(h)
    if st ~= 0 then return fail(st) end
    return true
  end

  function Broker:running() return self.h ~= nil end
  function Broker:__tostring() return ("rshare.Broker(%s)"):format(self.endpoint) end

  ------------------------------------------------------------------- shares
  local Share = { __name = "rshare.Share" }
  Share.__index = Share

  local function as_list(v)
    if v == nil then return {} end
    if getmetatable(v) and v.export then return { v } end
    return v
  end

  -- publish(name, dev[, opts]): opts.pd, opts.var, opts.mr, opts.dm,
  -- opts.buf (an object or a list of each, exported in that order; a
  -- buffer's memfd goes with it),
  -- opts.blobs (exported blobs), opts.persistent, opts.allow_uids,
  -- opts.allow_gids, opts.endpoint. The share lives until share:withdraw()
  -- (or the share is collected), or, persistent, until withdrawn by name.
  function M.publish(name, dev, opts)
    util.check_type(name, "string", "publish", 1)
    if type(dev) ~= "table" or dev.h == nil then
      error("rshare.publish: bad argument #2 (device expected)", 2)
    end
    opts = opts or {}
    util.check_type(opts, "table", "publish", 3)
    local parts, fds = {}, {}
    local k = 1
    while M.kind_name(k) do -- every kind: opts.pd, opts.var, opts.mr, opts.dm, ...
      for _, obj in ipairs(as_list(opts[M.kind_name(k)])) do
        local blob, msg, code = obj:export()
        if not blob then return nil, msg, code end
        parts[#parts + 1] = blob
        if M.kind_name(k) == "buf" then fds[#fds + 1] = obj:fd() end
      end
      k = k + 1
    end
    for _, blob in ipairs(opts.blobs or {}) do parts[#parts + 1] = blob end
    local payload = table.concat(parts)
    local st, h = R.broker_publish(opt_string(opts.endpoint, "publish", 3), name, dev.h, payload,
                                   opts.persistent and true or false,
                                   ids(opts.allow_uids, "publish", "allow_uids"),
                                   ids(opts.allow_gids, "publish", "allow_gids"), fds)
    if st ~= 0 then return fail(st) end
    local persistent = opts.persistent and true or false
    return on_collect({ h = h, name = name, persistent = persistent, payload = payload, dev = dev },
                      Share, function(s) if not s.persistent then s:withdraw() end end)
  end

  -- Withdraw it (a share already gone is fine). True; idempotent.
  function Share:withdraw()
    local h = self.h
    if h == nil then return true end
    self.h = nil
    local st = R.broker_withdraw(h)
    if st ~= 0 then return fail(st) end
    return true
  end

  function Share:__tostring() return ("rshare.Share(%s)"):format(self.name) end

  ---------------------------------------------------------------- attaching
  local Attached = { __name = "rshare.Attached" }
  Attached.__index = Attached

  local make_attached

  -- attach(name[, opts]): opts.timeout in seconds (nil: no limit, 0: do not
  -- wait), opts.endpoint, opts.import (false: the raw blobs only). Returns a
  -- table: device, payload, blobs, the objects imported by kind (pds, vars,
  -- mrs: each into the attached PD it is registered on, dms, bufs; rshare
  -- .import_blobs), pd, var, buf (the first of each), fds (with import
  -- false: the share's buffers' memory fds, in blob order, for
  -- pd:import_buffer; the Attached's, closed by close() or when it is
  -- collected; empty otherwise) and close() (unimports the objects, closes
  -- the fds and the device).
  function M.attach(name, opts)
    util.check_type(name, "string", "attach", 1)
    opts = opts or {}
    util.check_type(opts, "table", "attach", 2)
    local endpoint = opt_string(opts.endpoint, "attach", 2)
    local left = opts.timeout and math.floor(opts.timeout * 1000 + 0.5) or nil
    if left and left < 0 then error("rshare.attach: timeout must be nil or >= 0", 2) end
    local st, h, payload, fds
    repeat
      local slice = left == nil and SLICE_MS or math.min(left, SLICE_MS)
      st, h, payload, fds = R.broker_attach(endpoint, name, slice)
      fds = fds or {}
      if left then left = left - slice end
    until st ~= R.NOT_FOUND or (left and left <= 0)
    if st ~= 0 then return fail(st) end
    return make_attached(name, h, payload, opts, fds)
  end

  -- An Attached's fds (import false), at close() or collection: once.
  local function close_fds(a)
    local fds = a.fds
    for i = #fds, 1, -1 do
      M.close_fd(fds[i])
      fds[i] = nil
    end
  end

  -- The Attached for a device handle h and payload: objects imported
  -- unless opts.import is false; fds: a share's buffers' memory, closed
  -- here when imported (a buffer maps its own duplicate), else the
  -- Attached's.
  function make_attached(name, h, payload, opts, fds)
    fds = fds or {}
    local raw = opts.import == false
    local dev = M._adopt_device(h)
    local a = on_collect({ name = name, device = dev, payload = payload,
                           blobs = M.split_blobs(payload), objects = {},
                           fds = raw and fds or {} }, Attached, close_fds)
    local by_kind, order, code = {}, {}, nil
    if not raw and a.blobs then
      local queue = {}
      for i, fd in ipairs(fds) do queue[i] = fd end
      by_kind, order, code = M.import_blobs(dev, a.blobs, queue)
    end
    if not raw then
      for _, fd in ipairs(fds) do M.close_fd(fd) end
    end
    if not by_kind then a:close(); return nil, order, code end
    if opts.import ~= false and a.blobs then
      a.objects = order
      for kind, list in pairs(by_kind) do a[kind .. "s"] = list end
    end
    a.pds, a.vars, a.mrs, a.dms = a.pds or {}, a.vars or {}, a.mrs or {}, a.dms or {}
    a.bufs = a.bufs or {}
    a.pd, a.var, a.buf = a.pds[1], a.vars[1], a.bufs[1]
    return a
  end

  function Attached:close()
    for i = #self.objects, 1, -1 do self.objects[i]:unimport() end
    self.objects, self.pds, self.vars, self.mrs, self.dms = {}, {}, {}, {}, {}
    self.pd, self.var = nil, nil
    close_fds(self)
    if self.device then
      self.device:close()
      self.device = nil
    end
    return true
  end

  function Attached:__tostring() return ("rshare.Attached(%s)"):format(self.name) end

  ------------------------------------------- attaching from an event loop
  local Attach = { __name = "rshare.Attach" }
  Attach.__index = Attach

  -- attach_start(name[, opts]): start attaching without waiting (since
  -- 1.2); opts.endpoint, opts.import as for attach (a share's buffers
  -- come as from attach: bufs, or fds with import = false). The operation waits
  -- at the broker without a time limit (the loop keeps time): poll op:fd()
  -- for readability, then op:finish(); op:cancel() gives up, leaving no fd
  -- and no request at the broker (as does collecting the operation).
  function M.attach_start(name, opts)
    util.check_type(name, "string", "attach_start", 1)
    opts = opts or {}
    util.check_type(opts, "table", "attach_start", 2)
    local st, h = R.attach_start(opt_string(opts.endpoint, "attach_start", 2), name)
    if st ~= 0 then return fail(st) end
    local _, fd = R.attach_fd(h)
    return on_collect({ h = h, name = name, opts = opts, fd_ = fd }, Attach,
                      function(op) op:cancel() end)
  end

  -- The fd to poll for readability (owned by the operation: never close it).
  function Attach:fd() return self.fd_ end

  -- The Attached once the share arrived (the operation is then over);
  -- nil, msg, "RSHARE_E_AGAIN" while it has not; nil, msg, code on failure
  -- (the operation is over, but for RSHARE_E_AGAIN).
  function Attach:finish()
    if self.h == nil then return nil, "rshare: attach operation already over", "RSHARE_E_STALE" end
    local st, h, payload, fds = R.attach_finish(self.h)
    if st == R.AGAIN then return fail(st) end
    self.h = nil
    if st ~= 0 then return fail(st) end
    return make_attached(self.name, h, payload, self.opts, fds)
  end

  -- Block until op:finish() has an answer, up to ms milliseconds (nil: no
  -- limit). A signal ends the wait (the interpreter's Ctrl-C handler then
  -- interrupts the script). True when ready; nil, msg, "RSHARE_E_AGAIN"
  -- when the time passed or a signal came (op stays pending).
  function Attach:wait(ms)
    if ms ~= nil then util.check_int(ms, "wait", 1, 0) end
    if self.h == nil then return nil, "rshare: attach operation already over", "RSHARE_E_STALE" end
    local st = R.attach_wait(self.h, ms or -1, R.WAIT_SIGNAL)
    if st ~= 0 then return fail(st) end
    return true
  end

  -- Give up: true; idempotent.
  function Attach:cancel()
    local h = self.h
    if h == nil then return true end
    self.h = nil
    local st = R.attach_cancel(h)
    if st ~= 0 and st ~= R.STALE then return fail(st) end
    return true
  end

  function Attach:__tostring() return ("rshare.Attach(%s)"):format(self.name) end

  ----------------------------------------------------------------- the rest
  -- The shares a broker holds: a list of tables (name, owner_uid,
  -- owner_pid, persistent, payload_size, blobs (false when the payload is
  -- not blobs), attaches, created).
  function M.shares(endpoint)
    opt_string(endpoint, "shares", 1)
    local st, json = R.broker_list(endpoint)
    if st ~= 0 then return fail(st) end
    return decode_list(json)
  end

  -- The attaches waiting at the broker for a name not yet published: a
  -- list of tables (name, uid, pid, waited_ms). Since 1.2.
  function M.waiting(endpoint)
    opt_string(endpoint, "waiting", 1)
    local st, json = R.broker_waiting(endpoint)
    if st ~= 0 then return fail(st) end
    return decode_list(json)
  end

  -- Withdraw a share by name (its owner's uid or root).
  function M.withdraw(name, endpoint)
    util.check_type(name, "string", "withdraw", 1)
    local st = R.broker_withdraw_name(opt_string(endpoint, "withdraw", 2), name)
    if st ~= 0 then return fail(st) end
    return true
  end

  -- The socket path an endpoint of nil means here.
  function M.default_endpoint()
    local st, path = R.broker_endpoint(nil)
    if st ~= 0 then return fail(st) end
    return path
  end

  M.SHARE_NAME_MAX, M.SHARE_IDS_MAX = R.NAME_MAX, R.IDS_MAX
  return M
end

return broker
