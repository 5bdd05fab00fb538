-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- require "rshare": the rshare Lua API.
--
-- Under LuaJIT this is rshare.ffi (librshare.so.1 through the FFI); under
-- PUC Lua 5.4 it is rshare.swig (the SWIG-built C module rshare.core plus a
-- thin object layer). Both offer the same functions and objects; see
-- docs/lua.md.
if jit then
  return require "rshare.ffi"
end
return require "rshare.swig"
