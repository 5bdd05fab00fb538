-- luarocks: rshare's Lua 5.4 module and the rshare command, built with
-- CMake from this tree. In the tree:
--   luarocks --lua-version=5.4 make
-- Anywhere else, offline: make a source rock in the tree, then install it
--   packaging/make_src_rock.sh /tmp            # writes /tmp/rshare-scm-1.src.rock
--   luarocks --lua-version=5.4 install /tmp/rshare-scm-1.src.rock
-- Lua 5.4 only: the C module rshare.core is built against Lua 5.4's API, so
-- a Lua 5.1 tree (luarocks --lua-version=5.1) is refused up front by the
-- dependency below. LuaJIT's FFI module comes with Debian's lua-rshare or
-- `cmake --install` (docs/lua.md); the rock keeps it in its c/ directory.
-- The Lua modules go to luarocks' directories (the cache variables of
-- bindings/lua/CMakeLists.txt) and from there into the tree; the command
-- goes to the rock's bin/, which luarocks puts on the tree's bin/ and
-- removes with the rock. The rest stays in the rock's c/ directory, which
-- luarocks does not deploy: c/lib holds librshare.so.1, where
-- rshare/core.so and the command find it by its absolute path (RUNPATH).
-- Needs what the CMake build needs: a C compiler, cmake, swig,
-- liblua5.4-dev and luajit (Debian names). docs/lua.md says more.
--
-- rshare has no published repository address yet: source.url names this
-- tree ("."), which is all `luarocks make` uses (make_src_rock.sh writes
-- its own).
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
the Lua 5.4 API (require "rshare", the SWIG-built C module rshare.core
under a thin object layer) and the rshare command. A simulated device,
sim0, works without RDMA hardware.
]],
  homepage = "https://github.com/rshare-project/rshare",
  labels = { "rdma", "ipc" },
  license = "GPL-2.0-only OR BSD-2-Clause",
}

dependencies = {
  "lua >= 5.4, < 5.5",
}

build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    BUILD_TESTING = "OFF",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    CMAKE_INSTALL_LIBDIR = "c/lib",
    CMAKE_INSTALL_BINDIR = "bin",
    CMAKE_INSTALL_RPATH = "$(PREFIX)/c/lib",
    LUA54_INCLUDE_DIR = "$(LUA_INCDIR)",
    RSHARE_PARTS = "bindings/lua",
    RSHARE_LUA54_LMOD_DIR = "$(LUADIR)",
    RSHARE_LUA54_CMOD_DIR = "$(LIBDIR)",
    RSHARE_LUAJIT_LMOD_DIR = "c/share/lua/5.1",
  },
  copy_directories = { "docs", "examples" },
}
