-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- With RSHARE_SIM=0 in the environment (set by ctest) the simulated device
-- is hidden: opening it fails with RSHARE_E_NODEV, the list lacks it.
--   usage: RSHARE_SIM=0 nosim_test.lua <module name>
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local rshare = require(arg[1] or "rshare")

T.run({
  sim0_hidden = function()
    T.eq(os.getenv("RSHARE_SIM"), "0", "RSHARE_SIM")
    T.fails("RSHARE_E_NODEV", "open(sim0)", rshare.open("sim0"))
    for _, d in ipairs(assert(rshare.devices())) do
      T.ok(d.name ~= "sim0", "sim0 listed although hidden")
    end
    -- No RDMA hardware on the machines this runs on: no default device.
    if #rshare.devices() == 0 then
      T.fails("RSHARE_E_NODEV", "open()", rshare.open())
    end
  end,
})
