-- Pure-Lua helpers shared by the two rshare Lua modules (rshare.ffi for
-- LuaJIT and rshare.swig for Lua 5.4): argument checks, names of enum values
-- and the small JSON reader behind rshare.inspect(). Nothing here touches C.
local util = {}

util.PROVIDERS = { [1] = "hw", [2] = "sim" }
util.KINDS = { [1] = "pd", [2] = "var" }

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

-- A minimal JSON reader for rshare_blob_describe()'s one-line objects.
-- Numbers become integers where they are integral (Lua 5.4), strings are
-- kept as they are (GUIDs stay "0x..." strings).
local json_value

local function skip_ws(s, i)
  return s:find("[^ \t\r\n]", i) or #s + 1
end

local escapes = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b",
                  f = "\f", n = "\n", r = "\r", t = "\t" }

local function json_string(s, i)
  local out, j = {}, i + 1
  while true do
    local c = s:sub(j, j)
    if c == "" then error("unterminated string") end
    if c == '"' then return table.concat(out), j + 1 end
    if c == "\\" then
      local e = s:sub(j + 1, j + 1)
      if e == "u" then
        local hex = s:sub(j + 2, j + 5)
        local code = tonumber(hex, 16)
        if not code or #hex ~= 4 then error("bad \\u escape") end
        -- describe() emits ASCII only; keep other code points as '?'.
        out[#out + 1] = code < 128 and string.char(code) or "?"
        j = j + 6
      elseif escapes[e] then
        out[#out + 1] = escapes[e]
        j = j + 2
      else
        error("bad escape")
      end
    else
      out[#out + 1] = c
      j = j + 1
    end
  end
end

local function json_number(s, i)
  local text = s:match("^-?%d+%.?%d*[eE]?[-+]?%d*", i)
  if not text or text == "" then error("bad number at " .. i) end
  local n = tonumber(text)
  if math.tointeger then n = math.tointeger(n) or n end
  return n, i + #text
end

local function json_container(s, i, close, read_item)
  local t = {}
  i = skip_ws(s, i + 1)
  if s:sub(i, i) == close then return t, i + 1 end
  while true do
    i = read_item(t, i)
    i = skip_ws(s, i)
    local c = s:sub(i, i)
    if c == close then return t, i + 1 end
    if c ~= "," then error("expected ',' or '" .. close .. "' at " .. i) end
    i = skip_ws(s, i + 1)
  end
end

json_value = function(s, i)
  i = skip_ws(s, i)
  local c = s:sub(i, i)
  if c == "{" then
    return json_container(s, i, "}", function(t, j)
      if s:sub(j, j) ~= '"' then error("expected a key at " .. j) end
      local key
      key, j = json_string(s, j)
      j = skip_ws(s, j)
      if s:sub(j, j) ~= ":" then error("expected ':' at " .. j) end
      t[key], j = json_value(s, j + 1)
      return j
    end)
  elseif c == "[" then
    return json_container(s, i, "]", function(t, j)
      t[#t + 1], j = json_value(s, j)
      return j
    end)
  elseif c == '"' then
    return json_string(s, i)
  elseif s:sub(i, i + 3) == "true" then
    return true, i + 4
  elseif s:sub(i, i + 4) == "false" then
    return false, i + 5
  elseif s:sub(i, i + 3) == "null" then
    return nil, i + 4
  end
  return json_number(s, i)
end

-- Returns the decoded value, or nil and a message.
function util.json_decode(s)
  local ok, value, pos = pcall(json_value, s, 1)
  if not ok then return nil, "rshare.inspect: bad JSON from describe: " .. tostring(value) end
  if skip_ws(s, pos) <= #s then return nil, "rshare.inspect: trailing JSON text" end
  return value
end

return util
