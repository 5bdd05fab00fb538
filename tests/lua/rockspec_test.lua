-- SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
-- The rockspec at the top of the tree: `luarocks lint` accepts it, it loads
-- as Lua (a rockspec is a chunk of global assignments), is named after its
-- package and version, and names only things that exist: the CMake build,
-- the cache variables it sets (declared in CMakeLists.txt or
-- bindings/lua/CMakeLists.txt), the directories it copies.
-- (`luarocks make` itself builds the project, too long for every test run:
-- docs/lua.md gives the command.)
--   usage: lua5.4 rockspec_test.lua <source dir> <project version> <luarocks>
package.path = arg[0]:gsub("[^/]+$", "?.lua") .. ";" .. package.path
local T = require "testlib"
local root, project_version = assert(arg[1], "source dir"), assert(arg[2], "version")
local luarocks = assert(arg[3], "luarocks")

local function read(path)
  local f = assert(io.open(path, "rb"))
  local text = f:read("a")
  f:close()
  return text
end

-- "file", "directory" or nil (io.open works on a directory; reading fails).
local function kind(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local ok, _, code = f:read(0)
  f:close()
  if ok == nil and code == 21 then return "directory" end -- EISDIR
  return "file"
end

-- The rockspecs in the tree: `ls` is the one listing plain Lua has.
local function rockspecs()
  local names = {}
  local ls = assert(io.popen("ls -1 '" .. root .. "'"))
  for name in ls:lines() do
    if name:match("%.rockspec$") then names[#names + 1] = name end
  end
  ls:close()
  return names
end

local function load_rockspec(path)
  local env = {}
  local chunk = assert(load(read(path), "@" .. path, "t", env))
  chunk()
  return env
end

local cases = {}

function cases.one_rockspec_that_loads()
  local names = rockspecs()
  T.eq(#names, 1, "rockspecs at the top of the tree: " .. table.concat(names, " "))
  local spec = load_rockspec(root .. "/" .. names[1])
  T.eq(spec.package, "rshare", "package")
  T.eq(names[1], ("%s-%s.rockspec"):format(spec.package, spec.version), "file name")
  local upstream, revision = spec.version:match("^(.+)%-(%d+)$")
  T.ok(upstream and revision, "version <upstream>-<revision>: " .. spec.version)
  T.ok(upstream == "scm" or upstream == project_version,
       ("version %s is scm or the project's %s"):format(upstream, project_version))
  T.eq(spec.rockspec_format, "3.0", "rockspec_format")
  T.eq(type(spec.source), "table", "source")
  T.eq(type(spec.source.url), "string", "source.url")
  T.eq(type(spec.description.summary), "string", "description.summary")
  T.eq(type(spec.dependencies), "table", "dependencies")
  for i, dep in ipairs(spec.dependencies) do
    T.ok(type(dep) == "string" and dep:match("^lua[%s>=<~]"), "dependency " .. i)
  end
end

function cases.build_names_what_exists()
  local spec = load_rockspec(root .. "/" .. rockspecs()[1])
  local build = spec.build
  T.eq(build.type, "cmake", "build.type")
  T.eq(kind(root .. "/CMakeLists.txt"), "file", "the CMake build")
  local cmake = read(root .. "/CMakeLists.txt") .. read(root .. "/bindings/lua/CMakeLists.txt")
  local n = 0
  for name, value in pairs(build.variables) do
    T.eq(type(value), "string", "variable " .. name)
    if name:match("^RSHARE_") then
      n = n + 1
      T.ok(cmake:find("set%(" .. name .. " [^\n]*CACHE"), name .. " is a cache variable")
    end
  end
  T.eq(n, 4, "the parts to build and the three Lua install directories are set")
  T.eq(build.variables.CMAKE_INSTALL_PREFIX, "$(PREFIX)", "installs into the rock")
  for _, dir in ipairs(build.copy_directories or {}) do
    T.eq(kind(root .. "/" .. dir), "directory", "copy_directories " .. dir)
  end
end

function cases.luarocks_lint()
  local name = rockspecs()[1]
  -- luarocks is a Lua program: our test LUA_PATH must not reach it.
  local command = ("cd '%s' && env -u LUA_PATH -u LUA_CPATH '%s' --lua-version=5.4 lint '%s'")
    :format(root, luarocks, name)
  local ok = os.execute(command)
  T.ok(ok == true or ok == 0, "luarocks lint " .. name)
end

T.run(cases)
