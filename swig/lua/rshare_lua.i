/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Lua typemaps for the abstract patterns named in ../rshare.i.
 *
 * The low-level module (rshare.core: SWIG module rshare_core, whose
 * luaopen_rshare_core is what require "rshare.core" calls) keeps
 * to Lua's conventions and never raises for a runtime failure: every
 * function that returns a status returns it first, as an integer, followed
 * by its out values (nil where a failed call wrote nothing). The thin layer
 * bindings/lua/rshare/swig.lua turns that into value, or nil, message, code.
 * Only programmer mistakes (a wrong Lua type) raise.
 *
 * Numbers go to Lua as integers (lua_pushinteger), not SWIG's default
 * floats; a 64-bit GUID keeps its bit pattern in a Lua 5.4 integer and the
 * thin layer prints it as a "0x%016x" string.
 *
 * Handles are SWIG pointer userdata that SWIG never frees (own = 0): the
 * thin layer decides when to release them. They are generation-checked
 * tokens, so a stale one is always safe to pass back.
 */

%{
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
%}

/* ---- statuses and plain ints: integers, never raised ---------------------- */
%typemap(out, noblock=1) int {
	lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;
}
%typemap(out, noblock=1) int RSHARE_STATUS {
	lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++;
}

/* ---- scalar outputs: integers, 0 when the call failed --------------------- */
%define RSHARE_LUA_OUTPUT(TYPE)
%typemap(in, numinputs=0, noblock=1) TYPE *OUTPUT (TYPE temp = 0) {
	$1 = &temp;
}
%typemap(argout, noblock=1) TYPE *OUTPUT {
	lua_pushinteger(L, (lua_Integer)*$1); SWIG_arg++;
}
%enddef
RSHARE_LUA_OUTPUT(int)
RSHARE_LUA_OUTPUT(size_t)
RSHARE_LUA_OUTPUT(uint32_t)
RSHARE_LUA_OUTPUT(uint64_t)

/* ---- handles ---------------------------------------------------------------
 * In: a handle userdata of the right type, or nil (NULL: the C side says
 * RSHARE_E_INVAL). A handle of another type is a programmer mistake. */
%typemap(in, noblock=1) SWIGTYPE *RSHARE_HANDLE {
	if (!lua_isnil(L, $input) &&
	    !SWIG_IsOK(SWIG_ConvertPtr(L, $input, (void **)&$1, $1_descriptor, 0))) {
		SWIG_fail_ptr("$symname", $argnum, $1_descriptor);
	}
}

/* Out: a new handle, or nil when the call failed. */
%typemap(in, numinputs=0, noblock=1) SWIGTYPE **RSHARE_NEW_HANDLE ($*1_ltype handle = NULL) {
	$1 = &handle;
}
%typemap(argout, noblock=1) SWIGTYPE **RSHARE_NEW_HANDLE {
	if (*$1)
		SWIG_NewPointerObj(L, (void *)*$1, $*1_descriptor, 0);
	else
		lua_pushnil(L);
	SWIG_arg++;
}

/* ---- bytes in: Lua strings only (they may hold any byte) ------------------ */
%typemap(in, noblock=1) (const void *RSHARE_BYTES, size_t RSHARE_LEN) {
	if (lua_type(L, $input) != LUA_TSTRING)
		SWIG_fail_arg("$symname", $argnum, "string");
	$1 = ($1_ltype)lua_tolstring(L, $input, &$2);
}

/* ---- sized outputs ---------------------------------------------------------
 * Buffers sized from the header's bounds; a blob's JSON description is a
 * few hundred bytes. Should the C side ever need more it returns
 * RSHARE_E_NOSPACE, never a truncated result. */
%typemap(in, numinputs=0, noblock=1) (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(unsigned char buf[RSHARE_BLOB_MAX], size_t len = 0) {
	$1 = buf;
	$2 = sizeof(buf);
	$3 = &len;
}
%typemap(in, numinputs=0, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(char buf[4096], size_t len = 0) {
	$1 = buf;
	$2 = sizeof(buf);
	$3 = &len;
}
/* The payload buffer is 64 KiB: on the heap, freed on every path. */
%typemap(in, numinputs=0, noblock=1) (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN)
	(size_t len = 0) {
	$1 = malloc(RSHARE_PAYLOAD_MAX);
	if (!$1) {
		lua_pushstring(L, "rshare: out of memory for the payload buffer");
		SWIG_fail;
	}
	$2 = RSHARE_PAYLOAD_MAX;
	$3 = &len;
}
%typemap(freearg, noblock=1) (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	free($1);
}
%typemap(argout, noblock=1) (void *RSHARE_BLOB_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN),
			    (void *RSHARE_PAYLOAD_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN),
			    (char *RSHARE_STR_OUT, size_t RSHARE_CAP, size_t *RSHARE_LEN) {
	if (result == RSHARE_OK && *$3 <= $2)
		lua_pushlstring(L, (const char *)$1, *$3);
	else
		lua_pushnil(L);
	SWIG_arg++;
}

%typemap(in, numinputs=0, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP)
	(char buf[RSHARE_NAME_MAX] = "") {
	$1 = buf;
	$2 = sizeof(buf);
}
%typemap(argout, noblock=1) (char *RSHARE_STR_OUT, size_t RSHARE_CAP) {
	if (result == RSHARE_OK)
		lua_pushlstring(L, $1, strnlen($1, $2));
	else
		lua_pushnil(L);
	SWIG_arg++;
}

/* ---- an address out: a light userdata Lua cannot dereference; the page is
 * read and written through var_read/var_write below ------------------------ */
%typemap(in, numinputs=0, noblock=1) void **RSHARE_ADDR_OUT (void *addr = NULL) {
	$1 = &addr;
}
%typemap(argout, noblock=1) void **RSHARE_ADDR_OUT {
	if (result == RSHARE_OK)
		lua_pushlightuserdata(L, *$1);
	else
		lua_pushnil(L);
	SWIG_arg++;
}

/* ---- VAR page access -------------------------------------------------------
 * var_read(var, off, n) -> status, bytes and var_write(var, off, bytes) ->
 * status. Each call asks the C library for the mapping again (the same
 * address while mapped; a stale handle fails), so Lua never holds a raw
 * address. The thin layer checks bounds and refuses maps that were unmapped;
 * the checks here are the last line, and a failure here raises. */
%native(var_read) int rshare_lua_var_read(lua_State *L);
%native(var_write) int rshare_lua_var_write(lua_State *L);
%{
/* The mapped page of the VAR in argument 1, and its length. */
static int rshare_lua_page(lua_State *L, unsigned char **page, uint32_t *length)
{
	rshare_var *var = NULL;
	void *addr = NULL;
	int st;

	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&var, SWIGTYPE_p_rshare_var, 0)))
		return luaL_argerror(L, 1, "VAR handle expected");
	st = rshare_var_attrs(var, NULL, length, NULL);
	if (st == RSHARE_OK)
		st = rshare_var_map(var, &addr);
	*page = addr;
	return st;
}

/* A byte range [off, off + n) inside a page of length bytes, or raise. */
static size_t rshare_lua_range(lua_State *L, uint32_t length, size_t n)
{
	lua_Integer off = luaL_checkinteger(L, 2);

	if (off < 0 || (lua_Unsigned)off > length || n > length - (size_t)off)
		return (size_t)luaL_error(L, "rshare: VAR page access out of range");
	return (size_t)off;
}

static int rshare_lua_var_read(lua_State *L)
{
	unsigned char *page;
	uint32_t length = 0;
	lua_Integer n = luaL_checkinteger(L, 3);
	size_t off;
	int st = rshare_lua_page(L, &page, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	if (n < 0)
		return luaL_argerror(L, 3, "negative length");
	off = rshare_lua_range(L, length, (size_t)n);
	lua_pushlstring(L, (const char *)page + off, (size_t)n);
	return 2;
}

static int rshare_lua_var_write(lua_State *L)
{
	unsigned char *page;
	uint32_t length = 0;
	size_t n, off;
	const char *bytes = luaL_checklstring(L, 3, &n);
	int st = rshare_lua_page(L, &page, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	off = rshare_lua_range(L, length, n);
	memcpy(page + off, bytes, n);
	return 1;
}
%}

/* ---- native rdma-core objects: their address as an integer (since 1.1) --- */
%typemap(in, numinputs=0, noblock=1) void **RSHARE_NATIVE_OUT (void *addr = NULL) {
	$1 = &addr;
}
%typemap(argout, noblock=1) void **RSHARE_NATIVE_OUT {
	if (result == RSHARE_OK)
		lua_pushinteger(L, (lua_Integer)(uintptr_t)*$1);
	else
		lua_pushnil(L);
	SWIG_arg++;
}

/* ---- writable memory in (an MR's): its address as a light userdata (e.g.
 * a mapped VAR page) or an integer; the length is the next, plain argument.
 * The caller keeps the memory alive while the MR is registered (since 1.1). */
%typemap(in, noblock=1) void *RSHARE_MEM_ADDR {
	if (lua_islightuserdata(L, $input))
		$1 = lua_touserdata(L, $input);
	else if (lua_isinteger(L, $input))
		$1 = (void *)(uintptr_t)lua_tointeger(L, $input);
	else
		SWIG_fail_arg("$symname", $argnum, "lightuserdata or integer address");
}

/* ---- n bytes read (device memory): an integer in, a string out ----------- */
%typemap(in, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) {
	if (!lua_isinteger(L, $input) || lua_tointeger(L, $input) < 0)
		SWIG_fail_arg("$symname", $argnum, "non-negative integer count");
	$2 = (size_t)lua_tointeger(L, $input);
	$1 = malloc($2 ? $2 : 1);
	if (!$1) {
		lua_pushstring(L, "rshare: out of memory for the read buffer");
		SWIG_fail;
	}
}
%typemap(argout, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) {
	if (result == RSHARE_OK)
		lua_pushlstring(L, (const char *)$1, $2);
	else
		lua_pushnil(L);
	SWIG_arg++;
}
%typemap(freearg, noblock=1) (void *RSHARE_READ_OUT, size_t RSHARE_READ_LEN) {
	free($1);
}

/* ---- fds for child processes -------------------------------------------------
 * fd_dup_inheritable(fd) -> new fd, or nil, strerror text, errno: a duplicate
 * without close-on-exec (F_DUPFD, numbered 3 or more so it never lands on a
 * closed stdin/stdout/stderr), which os.execute and io.popen children inherit.
 * fd_close(fd) -> true, or nil, strerror text, errno. Lua 5.4 has neither call
 * and Debian 12 has no lua-posix for 5.4; Device:inheritable_fd() and
 * rshare.close_fd() are built on them. */
%native(fd_dup_inheritable) int rshare_lua_fd_dup_inheritable(lua_State *L);
%native(fd_close) int rshare_lua_fd_close(lua_State *L);
%{
static int rshare_lua_errno_fail(lua_State *L, int err)
{
	lua_pushnil(L);
	lua_pushstring(L, strerror(err));
	lua_pushinteger(L, err);
	return 3;
}

/* An fd argument; one outside int's range is EBADF, as for any other bad fd. */
static int rshare_lua_fd_arg(lua_State *L)
{
	lua_Integer fd = luaL_checkinteger(L, 1);

	return fd < 0 || fd > INT_MAX ? -1 : (int)fd;
}

static int rshare_lua_fd_dup_inheritable(lua_State *L)
{
	int fd = rshare_lua_fd_arg(L);
	int dup = fd < 0 ? -1 : fcntl(fd, F_DUPFD, 3);

	if (dup < 0)
		return rshare_lua_errno_fail(L, fd < 0 ? EBADF : errno);
	lua_pushinteger(L, dup);
	return 1;
}

static int rshare_lua_fd_close(lua_State *L)
{
	int fd = rshare_lua_fd_arg(L);

	if (fd < 0 || close(fd) != 0)
		return rshare_lua_errno_fail(L, fd < 0 ? EBADF : errno);
	lua_pushboolean(L, 1);
	return 1;
}
%}

/* ---- memory for MRs (since 1.1) ------------------------------------------------
 * Lua 5.4 has no writable byte buffers: mem_new(n) makes one, a full userdata
 * of n zeroed bytes that Lua's collector owns (the MR object keeps it while
 * registered); mem_addr(mem) -> light userdata, for mr_reg; mem_read(mem, off,
 * n) -> bytes and mem_write(mem, off, bytes) copy in and out, bounds-checked
 * (out of range raises: the thin layer checks first). */
%native(mem_new) int rshare_lua_mem_new(lua_State *L);
%native(mem_addr) int rshare_lua_mem_addr(lua_State *L);
%native(mem_read) int rshare_lua_mem_read(lua_State *L);
%native(mem_write) int rshare_lua_mem_write(lua_State *L);
%{
#define RSHARE_LUA_MEM "rshare.mem"

static int rshare_lua_mem_new(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	void *p;

	luaL_argcheck(L, n > 0, 1, "positive length expected");
	p = lua_newuserdatauv(L, (size_t)n, 0);
	memset(p, 0, (size_t)n);
	if (luaL_newmetatable(L, RSHARE_LUA_MEM)) {
		lua_pushliteral(L, "rshare memory");
		lua_setfield(L, -2, "__name");
	}
	lua_setmetatable(L, -2);
	return 1;
}

static unsigned char *rshare_lua_mem_arg(lua_State *L, size_t *len)
{
	unsigned char *p = luaL_checkudata(L, 1, RSHARE_LUA_MEM);

	*len = lua_rawlen(L, 1);
	return p;
}

static int rshare_lua_mem_addr(lua_State *L)
{
	size_t len;

	lua_pushlightuserdata(L, rshare_lua_mem_arg(L, &len));
	return 1;
}

static size_t rshare_lua_mem_range(lua_State *L, size_t len, size_t n)
{
	lua_Integer off = luaL_checkinteger(L, 2);

	if (off < 0 || (lua_Unsigned)off > len || n > len - (size_t)off)
		return (size_t)luaL_error(L, "rshare: memory access out of range");
	return (size_t)off;
}

static int rshare_lua_mem_read(lua_State *L)
{
	size_t len, off;
	unsigned char *p = rshare_lua_mem_arg(L, &len);
	lua_Integer n = luaL_checkinteger(L, 3);

	luaL_argcheck(L, n >= 0, 3, "negative length");
	off = rshare_lua_mem_range(L, len, (size_t)n);
	lua_pushlstring(L, (const char *)p + off, (size_t)n);
	return 1;
}

static int rshare_lua_mem_write(lua_State *L)
{
	size_t len, n, off;
	unsigned char *p = rshare_lua_mem_arg(L, &len);
	const char *bytes = luaL_checklstring(L, 3, &n);

	off = rshare_lua_mem_range(L, len, n);
	memcpy(p + off, bytes, n);
	return 0;
}
%}

/* ---- the broker (since 1.1) ---------------------------------------------- */
%include "lua/broker_lua.i"

/* ---- extra fds of a channel message (since 1.2): a table of integers in,
 * a table of integers (the caller's to close) out -------------------------- */
%typemap(in, noblock=1) (const int *RSHARE_FDS, size_t RSHARE_NFDS)
	(int fds[RSHARE_CHANNEL_FDS_MAX + 1]) {
	if (!lua_istable(L, $input))
		SWIG_fail_arg("$symname", $argnum, "table of fds");
	$2 = (size_t)lua_rawlen(L, $input);
	if ($2 > RSHARE_CHANNEL_FDS_MAX + 1)
		$2 = RSHARE_CHANNEL_FDS_MAX + 1; /* the C side refuses: too many */
	for (size_t i = 0; i < $2; i++) {
		lua_rawgeti(L, $input, (lua_Integer)i + 1);
		fds[i] = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
		lua_pop(L, 1);
	}
	$1 = fds;
}
%typemap(in, numinputs=0, noblock=1) (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS)
	(int fds[RSHARE_CHANNEL_FDS_MAX], size_t nfds = 0) {
	$1 = fds;
	$2 = RSHARE_CHANNEL_FDS_MAX;
	$3 = &nfds;
}
%typemap(argout, noblock=1) (int *RSHARE_FDS_OUT, size_t RSHARE_FDS_CAP, size_t *RSHARE_NFDS) {
	if (result == RSHARE_OK) {
		lua_createtable(L, (int)*$3, 0);
		for (size_t i = 0; i < *$3 && i < $2; i++) {
			lua_pushinteger(L, $1[i]);
			lua_rawseti(L, -2, (lua_Integer)i + 1);
		}
	} else {
		lua_pushnil(L);
	}
	SWIG_arg++;
}

/* ---- shared buffer access (since 1.2) -------------------------------------
 * buf_read(buf, off, n) -> status, bytes and buf_write(buf, off, bytes) ->
 * status, bounds-checked as var_read/var_write; the address is asked for on
 * every call, so Lua never holds one. */
%native(buf_read) int rshare_lua_buf_read(lua_State *L);
%native(buf_write) int rshare_lua_buf_write(lua_State *L);
%native(dm_map_read) int rshare_lua_dm_map_read(lua_State *L);
%native(dm_map_write) int rshare_lua_dm_map_write(lua_State *L);
%{
/* The buffer in argument 1: status, and its mapping and length. */
static int rshare_lua_buf(lua_State *L, unsigned char **mem, size_t *length)
{
	rshare_buf *buf = NULL;
	void *addr = NULL;
	int st;

	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&buf, SWIGTYPE_p_rshare_buf, 0)))
		return luaL_argerror(L, 1, "buffer handle expected");
	st = rshare_buf_ptr(buf, &addr, length);
	*mem = addr;
	return st;
}

static int rshare_lua_buf_read(lua_State *L)
{
	unsigned char *mem;
	size_t length = 0;
	lua_Integer n = luaL_checkinteger(L, 3);
	size_t off;
	int st = rshare_lua_buf(L, &mem, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	if (n < 0)
		return luaL_argerror(L, 3, "negative length");
	off = rshare_lua_mem_range(L, length, (size_t)n);
	lua_pushlstring(L, (const char *)mem + off, (size_t)n);
	return 2;
}

/* ---- mapped device memory (since 1.2) -------------------------------------
 * dm_map_read(dm, off, n) -> status, bytes and dm_map_write(dm, off, bytes)
 * -> status, bounds-checked as buf_read/buf_write, through rshare_dm_map's
 * mapping (made on first use; the same address every call). */
static int rshare_lua_dm(lua_State *L, unsigned char **mem, size_t *length)
{
	rshare_dm *dm = NULL;
	void *addr = NULL;
	uint64_t len64 = 0;
	int st;

	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 1, (void **)&dm, SWIGTYPE_p_rshare_dm, 0)))
		return luaL_argerror(L, 1, "device memory handle expected");
	st = rshare_dm_length(dm, &len64);
	if (st == RSHARE_OK)
		st = rshare_dm_map(dm, &addr);
	*mem = addr;
	*length = len64 > SIZE_MAX ? SIZE_MAX : (size_t)len64;
	return st;
}

static int rshare_lua_dm_map_read(lua_State *L)
{
	unsigned char *mem;
	size_t length = 0;
	lua_Integer n = luaL_checkinteger(L, 3);
	size_t off;
	int st = rshare_lua_dm(L, &mem, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	if (n < 0)
		return luaL_argerror(L, 3, "negative length");
	off = rshare_lua_mem_range(L, length, (size_t)n);
	lua_pushlstring(L, (const char *)mem + off, (size_t)n);
	return 2;
}

static int rshare_lua_dm_map_write(lua_State *L)
{
	unsigned char *mem;
	size_t length = 0;
	size_t n, off;
	const char *bytes = luaL_checklstring(L, 3, &n);
	int st = rshare_lua_dm(L, &mem, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	off = rshare_lua_mem_range(L, length, n);
	memcpy(mem + off, bytes, n);
	return 1;
}

static int rshare_lua_buf_write(lua_State *L)
{
	unsigned char *mem;
	size_t length = 0;
	size_t n, off;
	const char *bytes = luaL_checklstring(L, 3, &n);
	int st = rshare_lua_buf(L, &mem, &length);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	off = rshare_lua_mem_range(L, length, n);
	memcpy(mem + off, bytes, n);
	return 1;
}
%}
