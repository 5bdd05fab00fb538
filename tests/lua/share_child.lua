-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- Child of share_parent.c, run by lua5.4 or luajit: receives a device, a PD
-- and a VAR from the parent, checks them, writes into the shared VAR page and
-- replies with a PD of its own. Any failed check exits non-zero.
--   usage: share_child.lua socket|env   (the rest comes from the environment)
local rshare = require "rshare"
local mode = arg[1]

local function env_int(name)
  return assert(tonumber(os.getenv(name)), name .. " not set")
end

local function check(cond, what, ...)
  if not cond then
    io.stderr:write("share_child (", mode, ", ", jit and "LuaJIT" or _VERSION, "): ",
                    what, " ", table.concat({ tostring((...)), select(2, ...) }, " "), "\n")
    os.exit(1)
  end
  return cond, ...
end

local sock = env_int("RSHARE_TEST_SOCK")
local dev, pd_blob, var_blob
if mode == "socket" then
  -- The payload is the two binary blobs, each after a length byte.
  local payload, code
  dev, payload, code = rshare.recv(sock)
  check(dev, "recv failed:", payload, code)
  local pd_len = payload:byte(1)
  pd_blob = payload:sub(2, 1 + pd_len)
  var_blob = payload:sub(3 + pd_len, 2 + pd_len + payload:byte(2 + pd_len))
elseif mode == "env" then
  local msg, code
  dev, msg, code = rshare.from_fd(env_int("RSHARE_TEST_DEV_FD"))
  check(dev, "from_fd failed:", msg, code)
  pd_blob, var_blob = os.getenv("RSHARE_TEST_PD"), os.getenv("RSHARE_TEST_VAR")
  check(pd_blob:sub(1, 7) == "rshare:", "PD text blob expected, got", pd_blob)
else
  check(false, "unknown mode", mode)
end
check(dev:name() == "sim0", "device name", dev:name())

local pd, msg, code = dev:import_pd(pd_blob)
check(pd, "import_pd:", msg, code)
check(pd:handle() == env_int("RSHARE_TEST_PD_HANDLE"), "PD handle", pd:handle())
local var
var, msg, code = dev:import_var(var_blob)
check(var, "import_var:", msg, code)
check(var:attrs().page_id == env_int("RSHARE_TEST_VAR_PAGE"), "VAR page id", var:attrs().page_id)

local page = check(var:map(), "map")
check(page:read(0, 12) == "parent-hello", "parent's write not seen:", page:read(0, 12))
local slot = env_int("RSHARE_TEST_SLOT")
local text = ("%d:%s:%s\0"):format(slot, mode, jit and "LuaJIT" or _VERSION)
check(page:write(slot * env_int("RSHARE_TEST_SLOT_SIZE"), text), "write into the page")

-- Since 1.1: the MR into the imported PD (its keys are the parent's), and
-- the device memory: the parent's line in, ours out at our slot.
local mr
mr, msg, code = pd:import_mr(os.getenv("RSHARE_TEST_MR"))
check(mr, "import_mr:", msg, code)
local attrs = mr:attrs()
check(attrs.lkey == env_int("RSHARE_TEST_MR_LKEY") and attrs.rkey == env_int("RSHARE_TEST_MR_RKEY"),
      "MR keys", attrs.lkey, attrs.rkey)
check(pd:unimport() == nil, "a PD with a live MR was released")
check(mr:unimport() == true, "unimport MR")
local dm
dm, msg, code = dev:import_dm(os.getenv("RSHARE_TEST_DM"))
check(dm, "import_dm:", msg, code)
check(dm:read(0, 9) == "parent-dm", "parent's device memory line", dm:read(0, 9))
check(dm:write(slot * env_int("RSHARE_TEST_SLOT_SIZE"), "dm " .. text), "write into device memory")
check(dm:unimport() == true, "unimport DM")

-- A PD of our own, dropped before the reply: the garbage collector only
-- unimports it, so the parent can still import it from the blob.
local mine = check(dev:alloc_pd(), "alloc_pd")
local mine_blob = mine:export()
mine = nil
collectgarbage("collect")
collectgarbage("collect")
check(rshare.send(sock, dev, mine_blob), "send the reply:", rshare.last_error())

check(pd:unimport() == true, "unimport PD")
check(var:unimport() == true, "unimport VAR")
check(page:read(0, 1) == nil, "the map still reads after unimport")
check(dev:close() == true, "close")
os.exit(0)
