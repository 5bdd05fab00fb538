-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- rshare.luv: wait for a share in a luv (libuv) loop, next to the loop's
-- other work (timers, sockets), with either Lua module (docs/lua.md):
--
--   local uv = require "luv"
--   local rshare = require "rshare"            -- or "rshare.ffi" (LuaJIT)
--   local rluv = require "rshare.luv"
--   local waiting = rluv.attach(uv, rshare, "team/exp1", { timeout = 10 },
--     function(share, msg, code)               -- share, or nil, msg, code
--       if share then print(share.pd:handle()); share:close() end
--     end)
--   uv.run()                                   -- waiting:cancel() gives up
--
-- It is rshare.attach_start's operation under a uv poll handle: no thread,
-- nothing blocks the loop. The callback runs once: with the Attached, or
-- with nil, msg, code (code "RSHARE_E_NOT_FOUND" when opts.timeout passed);
-- a cancelled wait calls nothing. Cancelling, a timeout and the callback
-- all leave no fd, no uv handle and no request at the broker.
local rluv = {}

local Waiting = {}
Waiting.__index = Waiting

-- Close the uv handles and end the operation (idempotent).
local function finish(w)
  if w.done then return end
  w.done = true
  if w.poll then w.poll:stop(); w.poll:close() end
  if w.timer then w.timer:stop(); w.timer:close() end
  w.op:cancel()
end

-- Give up the wait: the callback is not called.
function Waiting:cancel()
  finish(self)
  return true
end

-- attach(uv, rshare, name[, opts], callback): opts as rshare.attach's
-- (timeout in seconds, nil: no limit; endpoint; import). Returns the
-- waiting (with :cancel()), or nil, msg, code when the broker cannot be
-- reached (the callback is then not called).
function rluv.attach(uv, rshare, name, opts, callback)
  if type(opts) == "function" then opts, callback = nil, opts end
  opts = opts or {}
  if type(callback) ~= "function" then
    error("rshare.luv.attach: bad argument #5 (function expected)", 2)
  end
  if opts.timeout ~= nil and (type(opts.timeout) ~= "number" or opts.timeout < 0) then
    error("rshare.luv.attach: timeout must be nil or a number >= 0", 2)
  end
  local op, msg, code = rshare.attach_start(name, opts)
  if not op then return nil, msg, code end
  local w = setmetatable({ op = op }, Waiting)
  w.poll = uv.new_poll(op:fd())
  w.poll:start("r", function()
    local share, fmsg, fcode = op:finish()
    if not share and fcode == "RSHARE_E_AGAIN" then return end -- not yet
    finish(w)
    callback(share, fmsg, fcode)
  end)
  if opts.timeout then
    uv.update_time() -- timers count from the loop's cached time
    w.timer = uv.new_timer()
    w.timer:start(math.floor(opts.timeout * 1000 + 0.5), 0, function()
      finish(w)
      callback(nil, ("rshare.luv.attach: no share named %q appeared within %g s")
                    :format(name, opts.timeout), "RSHARE_E_NOT_FOUND")
    end)
  end
  return w
end

return rluv
