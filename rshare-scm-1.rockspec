-- luarocks: build and install rshare's Lua modules from this tree with
--   luarocks make rshare-scm-1.rockspec
-- The "cmake" build type builds the C library, the rshare command and the
-- Lua part (RSHARE_PARTS) and installs them into the rock's directory. The
-- Lua modules go to luarocks' directories, through the cache variables of
-- bindings/lua/CMakeLists.txt, and from there into the tree. The rest stays
-- in the rock's c/ directory, which luarocks does not deploy: c/lib holds
-- librshare.so.1, where rshare/core.so (RUNPATH) and rshare.ffi
-- (rshare/libpath.lua) find it by its absolute path; c/bin the command.
-- Needs what the CMake build needs: a C compiler, cmake, swig, liblua5.4-dev
-- and luajit (Debian names). docs/lua.md says more.
--
-- rshare has no published repository address yet: source.url names this
-- tree ("."), which is all `luarocks make` uses; set it before publishing.
rockspec_format = "3.0"
package = "rshare"
version = "scm-1"

source = {
  url = ".",
}

description = {
  summary = "Share RDMA objects (device context, PDs, mlx5 VARs, MRs, device memory) between processes",
  detailed = [[
rshare shares RDMA objects between processes through checked, versioned
export blobs, over one stable C ABI (librshare.so.1). This rock installs
the Lua API: require "rshare" is the SWIG-built C module rshare.core under
Lua 5.4 and the FFI module rshare.ffi under LuaJIT, with one set of objects
and conventions. A simulated device, sim0, works without RDMA hardware.
]],
  labels = { "rdma", "ipc", "ffi" },
  license = "GPL-2.0-only OR BSD-2-Clause",
}

dependencies = {
  "lua >= 5.1, < 5.5",
}

build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    CMAKE_INSTALL_LIBDIR = "c/lib",
    CMAKE_INSTALL_BINDIR = "c/bin",
    RSHARE_PARTS = "bindings/lua",
    RSHARE_LUA54_LMOD_DIR = "$(LUADIR)",
    RSHARE_LUA54_CMOD_DIR = "$(LIBDIR)",
    RSHARE_LUAJIT_LMOD_DIR = "$(LUADIR)",
  },
  copy_directories = { "docs", "examples" },
}
