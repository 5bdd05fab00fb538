-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- A tiny assertion library for the rshare Lua tests, so they run on a bare
-- lua5.4 or luajit: every check raises on failure, run() reports each case
-- and exits non-zero if any failed.
local T = {}

local function fmt(v)
  if type(v) == "string" then return ("%q"):format(v) end
  return tostring(v)
end

function T.eq(got, want, what)
  if got ~= want then
    error(("%s: expected %s, got %s"):format(what or "value", fmt(want), fmt(got)), 2)
  end
  return got
end

function T.ok(cond, what)
  if not cond then error((what or "condition") .. " failed", 2) end
  return cond
end

-- Asserts the Lua failure convention: nil, a non-empty message, the code.
function T.fails(code, what, value, msg, got_code)
  if value ~= nil then
    error(("%s: expected failure %s, got value %s"):format(what, code, fmt(value)), 2)
  end
  if type(msg) ~= "string" or msg == "" then
    error(("%s: failure without a message (%s)"):format(what, fmt(msg)), 2)
  end
  if got_code ~= code then
    error(("%s: expected %s, got %s (%s)"):format(what, code, fmt(got_code), msg), 2)
  end
  return msg
end

-- Asserts that fn(...) raises an error whose text contains pattern.
function T.raises(pattern, what, fn, ...)
  local ok, err = pcall(fn, ...)
  if ok then error(what .. ": expected an error", 2) end
  if not tostring(err):find(pattern, 1, true) then
    error(("%s: error %s does not mention %q"):format(what, fmt(err), pattern), 2)
  end
end

function T.full_gc()
  -- Twice: objects resurrected for their finalizer go in the second cycle.
  collectgarbage("collect")
  collectgarbage("collect")
end

function T.run(cases)
  local failed, names = 0, {}
  for name in pairs(cases) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local ok, err = xpcall(cases[name], debug.traceback)
    if ok then
      io.write("ok   ", name, "\n")
    else
      failed = failed + 1
      io.write("FAIL ", name, "\n", tostring(err), "\n")
    end
    T.full_gc()
  end
  io.write(("%d of %d cases passed (%s)\n"):format(#names - failed, #names,
    jit and jit.version or _VERSION))
  os.exit(failed == 0 and 0 or 1)
end

return T
