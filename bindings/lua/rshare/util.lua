-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Pure-Lua helpers shared by the two rshare Lua modules (rshare.ffi for
-- LuaJIT and rshare.swig for Lua 5.4): argument checks. Nothing here
-- touches C (the names of kinds and providers are the library's:
-- rshare_kind_name, rshare_provider_name).
local util = {}

-- A wrong Lua type is a programmer mistake, so it raises (like Lua's own
-- library functions do); runtime failures are returned as nil, msg, code.
function util.check_type(value, want, fname, argn)
  if type(value) ~= want then
    error(("rshare.%s: bad argument #%d (%s expected, got %s)")
      :format(fname, argn, want, type(value)), 3)
  end
  return value
end

-- A whole number that fits a C int, such as an fd (negative ones reach C,
-- which says INVAL), or with min and max, one in [min, max] (flags: C takes
-- them unsigned). Both backends would truncate a larger one to some other,
-- possibly valid, fd or flag.
local INT_MIN, INT_MAX = -2^31, 2^31 - 1
function util.check_int(value, fname, argn, min, max)
  util.check_type(value, "number", fname, argn)
  min, max = min or INT_MIN, max or INT_MAX
  if value % 1 ~= 0 or value < min or value > max then
    error(("rshare.%s: bad argument #%d (integer in [%d, %d] expected, got %s)")
      :format(fname, argn, min, max, tostring(value)), 3)
  end
  return value
end

-- Non-negative whole numbers that fit a C int/size_t: Lua 5.4 integers or
-- integral floats (LuaJIT has only doubles).
function util.is_count(n)
  return type(n) == "number" and n >= 0 and n % 1 == 0 and n < 2^53
end

-- Text blobs ("rshare:...") are accepted wherever a blob is, so that an
-- environment variable can be passed straight to import_pd/import_var.
function util.is_text_blob(s)
  return s:sub(1, 7) == "rshare:"
end

return util
