/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The broker for Lua 5.4 (since 1.1), hand-written like var_read: the
 * options struct is built here from Lua tables. Same convention as the rest
 * of rshare.core: the status first, then the out values. Broker and share
 * handles are integers (generation-checked tokens, safe to pass back); a
 * device comes back as the same SWIG userdata device_open gives. The thin
 * layer (rshare/broker.lua) waits for a name in short attach calls, so that
 * the interpreter's Ctrl-C handler gets to run between them.
 *   broker_start(endpoint|nil) -> st, broker
 *   broker_stop(broker) -> st
 *   broker_endpoint(broker|nil) -> st, path      (nil: the default endpoint)
 *   broker_publish(endpoint, name, dev, payload, persistent, uids, gids[, fds]) -> st, share
 *   broker_withdraw(share) -> st
 *   broker_withdraw_name(endpoint, name) -> st
 *   broker_attach(endpoint, name, timeout_ms) -> st, dev, payload, fds (a table)
 *   broker_list(endpoint) -> st, json
 * and, since 1.2, attach from an event loop (rshare/broker.lua, rshare/luv.lua):
 *   broker_waiting(endpoint) -> st, json
 *   attach_start(endpoint, name) -> st, op     (extra fds welcome: startv)
 *   attach_fd(op) -> st, fd
 *   attach_wait(op, timeout_ms, flags) -> st   (blocks; RSHARE_E_AGAIN: not yet)
 *   attach_finish(op) -> st, dev, payload, fds (st RSHARE_E_AGAIN: not yet)
 *   attach_cancel(op) -> st
 */
%native(broker_start) int rshare_lua_broker_start(lua_State *L);
%native(broker_stop) int rshare_lua_broker_stop(lua_State *L);
%native(broker_endpoint) int rshare_lua_broker_endpoint(lua_State *L);
%native(broker_publish) int rshare_lua_broker_publish(lua_State *L);
%native(broker_withdraw) int rshare_lua_broker_withdraw(lua_State *L);
%native(broker_withdraw_name) int rshare_lua_broker_withdraw_name(lua_State *L);
%native(broker_attach) int rshare_lua_broker_attach(lua_State *L);
%native(broker_list) int rshare_lua_broker_list(lua_State *L);
%native(broker_waiting) int rshare_lua_broker_waiting(lua_State *L);
%native(attach_start) int rshare_lua_attach_start(lua_State *L);
%native(attach_fd) int rshare_lua_attach_fd(lua_State *L);
%native(attach_wait) int rshare_lua_attach_wait(lua_State *L);
%native(attach_finish) int rshare_lua_attach_finish(lua_State *L);
%native(attach_cancel) int rshare_lua_attach_cancel(lua_State *L);
%{
static void *rshare_lua_token(lua_State *L, int i)
{
	return (void *)(uintptr_t)(lua_Unsigned)luaL_checkinteger(L, i);
}

static int rshare_lua_broker_start(lua_State *L)
{
	rshare_broker *b = NULL;
	int st = rshare_broker_start(luaL_optstring(L, 1, NULL), &b);

	lua_pushinteger(L, st);
	lua_pushinteger(L, (lua_Integer)(uintptr_t)b);
	return 2;
}

static int rshare_lua_broker_stop(lua_State *L)
{
	lua_pushinteger(L, rshare_broker_stop(rshare_lua_token(L, 1)));
	return 1;
}

static int rshare_lua_broker_endpoint(lua_State *L)
{
	char path[256];
	size_t n = 0;
	int st = lua_isnoneornil(L, 1)
		 ? rshare_broker_default_endpoint(path, sizeof(path), &n)
		 : rshare_broker_endpoint(rshare_lua_token(L, 1), path, sizeof(path), &n);

	lua_pushinteger(L, st);
	if (st != RSHARE_OK)
		return 1;
	lua_pushlstring(L, path, n);
	return 2;
}

/* A Lua array of at most RSHARE_SHARE_IDS_MAX ids (nil: none), or raise. */
static uint32_t rshare_lua_ids(lua_State *L, int i, uint32_t *ids)
{
	lua_Integer n;

	if (lua_isnoneornil(L, i))
		return 0;
	luaL_checktype(L, i, LUA_TTABLE);
	n = luaL_len(L, i);
	if (n > RSHARE_SHARE_IDS_MAX)
		luaL_argerror(L, i, "too many ids (at most 64)");
	for (lua_Integer k = 1; k <= n; k++) {
		int isint;
		lua_Integer v;
		lua_geti(L, i, k);
		v = lua_tointegerx(L, -1, &isint);
		if (!isint || v < 0 || v > UINT32_MAX)
			luaL_argerror(L, i, "ids must be integers in 0..2^32-1");
		ids[k - 1] = (uint32_t)v;
		lua_pop(L, 1);
	}
	return (uint32_t)n;
}

static int rshare_lua_broker_publish(lua_State *L)
{
	uint32_t uids[RSHARE_SHARE_IDS_MAX], gids[RSHARE_SHARE_IDS_MAX];
	rshare_publish_opts o = { .size = sizeof(o), .uids = uids, .gids = gids };
	const char *endpoint = luaL_optstring(L, 1, NULL), *name = luaL_checkstring(L, 2);
	rshare_device *dev = NULL;
	rshare_share *share = NULL;
	size_t len = 0;
	const char *payload;
	int st;

	if (!SWIG_IsOK(SWIG_ConvertPtr(L, 3, (void **)&dev, SWIGTYPE_p_rshare_device, 0)))
		return luaL_argerror(L, 3, "device handle expected");
	payload = luaL_optlstring(L, 4, "", &len);
	o.flags = lua_toboolean(L, 5) ? RSHARE_PUBLISH_PERSISTENT : 0;
	o.n_uids = rshare_lua_ids(L, 6, uids);
	o.n_gids = rshare_lua_ids(L, 7, gids);
	{ /* the buffers' memfds (since 1.2) */
		int fds[RSHARE_CHANNEL_FDS_MAX + 1];
		size_t nfds = 0;

		if (lua_istable(L, 8)) {
			nfds = (size_t)lua_rawlen(L, 8);
			if (nfds > RSHARE_CHANNEL_FDS_MAX + 1)
				nfds = RSHARE_CHANNEL_FDS_MAX + 1; /* the library refuses */
			for (size_t i = 0; i < nfds; i++) {
				lua_rawgeti(L, 8, (lua_Integer)i + 1);
				fds[i] = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
				lua_pop(L, 1);
			}
		}
		st = rshare_broker_publishv(endpoint, name, dev, fds, nfds, payload, len, &o,
					    &share);
	}
	lua_pushinteger(L, st);
	lua_pushinteger(L, (lua_Integer)(uintptr_t)share);
	return 2;
}

static int rshare_lua_broker_withdraw(lua_State *L)
{
	lua_pushinteger(L, rshare_broker_withdraw(rshare_lua_token(L, 1)));
	return 1;
}

static int rshare_lua_broker_withdraw_name(lua_State *L)
{
	lua_pushinteger(L, rshare_broker_withdraw_name(luaL_optstring(L, 1, NULL),
						       luaL_checkstring(L, 2)));
	return 1;
}

/* st, and on success the device and the payload; frees buf. */
static int rshare_lua_push_attached(lua_State *L, int st, rshare_device *dev, char *buf,
				    size_t len)
{
	lua_pushinteger(L, st);
	if (st != RSHARE_OK) {
		free(buf);
		return 1;
	}
	SWIG_NewPointerObj(L, (void *)dev, SWIGTYPE_p_rshare_device, 0);
	lua_pushlstring(L, buf, len);
	free(buf);
	return 3;
}

/* The share's extra fds (its buffers' memory, since 1.2) as a table,
 * the caller's. */
static void rshare_lua_push_fds(lua_State *L, const int *fds, size_t nfds)
{
	lua_createtable(L, (int)nfds, 0);
	for (size_t k = 0; k < nfds; k++) {
		lua_pushinteger(L, fds[k]);
		lua_rawseti(L, -2, (lua_Integer)k + 1);
	}
}

static int rshare_lua_broker_attach(lua_State *L)
{
	const char *endpoint = luaL_optstring(L, 1, NULL), *name = luaL_checkstring(L, 2);
	lua_Integer timeout = luaL_optinteger(L, 3, 0);
	rshare_device *dev = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX];
	size_t len = 0, nfds = 0;
	char *buf = malloc(RSHARE_PAYLOAD_MAX);
	int st, n;

	if (!buf)
		return luaL_error(L, "rshare: out of memory");
	st = rshare_broker_attachv(endpoint, name,
				   timeout < 0 ? -1 : timeout > INT_MAX ? INT_MAX : (int)timeout,
				   &dev, fds, RSHARE_CHANNEL_FDS_MAX, &nfds, buf, RSHARE_PAYLOAD_MAX,
				   &len);
	n = rshare_lua_push_attached(L, st, dev, buf, len);
	if (st != RSHARE_OK)
		return n;
	rshare_lua_push_fds(L, fds, nfds);
	return n + 1;
}

/* st, json of a broker JSON call (rshare_broker_list/_waiting). */
static int rshare_lua_broker_json(lua_State *L,
				  int (*call)(const char *, char *, size_t, size_t *))
{
	const char *endpoint = luaL_optstring(L, 1, NULL);
	size_t cap = 4096, len = 0;
	char *buf = NULL;
	int st;

	/* The list may grow between two calls: a few more tries, not an
	 * endless loop against a broker that always says NOSPACE. */
	for (int tries = 0;; tries++) {
		char *bigger = realloc(buf, cap);
		if (!bigger) {
			free(buf);
			return luaL_error(L, "rshare: out of memory");
		}
		buf = bigger;
		st = call(endpoint, buf, cap, &len);
		if (st != RSHARE_E_NOSPACE || tries == 7)
			break;
		cap = len + 4096;
	}
	lua_pushinteger(L, st);
	if (st == RSHARE_OK)
		lua_pushlstring(L, buf, len);
	free(buf);
	return st == RSHARE_OK ? 2 : 1;
}

static int rshare_lua_broker_list(lua_State *L)
{
	return rshare_lua_broker_json(L, rshare_broker_list);
}

static int rshare_lua_broker_waiting(lua_State *L)
{
	return rshare_lua_broker_json(L, rshare_broker_waiting);
}

static int rshare_lua_attach_start(lua_State *L)
{
	rshare_attach *op = NULL;
	/* startv: a share's buffer fds are welcome (attach_finish takes them) */
	int st = rshare_broker_attach_startv(luaL_optstring(L, 1, NULL), luaL_checkstring(L, 2),
					     &op);

	lua_pushinteger(L, st);
	lua_pushinteger(L, (lua_Integer)(uintptr_t)op);
	return 2;
}

static int rshare_lua_attach_fd(lua_State *L)
{
	int fd = -1, st = rshare_attach_fd(rshare_lua_token(L, 1), &fd);

	lua_pushinteger(L, st);
	lua_pushinteger(L, fd);
	return 2;
}

static int rshare_lua_attach_wait(lua_State *L)
{
	lua_Integer ms = luaL_checkinteger(L, 2);

	lua_pushinteger(L, rshare_attach_wait(rshare_lua_token(L, 1),
					      ms < 0 ? -1 : ms > INT_MAX ? INT_MAX : (int)ms,
					      (uint32_t)luaL_checkinteger(L, 3)));
	return 1;
}

static int rshare_lua_attach_finish(lua_State *L)
{
	/* The argument first: a bad one raises before anything is allocated. */
	rshare_attach *op = rshare_lua_token(L, 1);
	rshare_device *dev = NULL;
	int fds[RSHARE_CHANNEL_FDS_MAX];
	size_t len = 0, nfds = 0;
	char *buf = malloc(RSHARE_PAYLOAD_MAX);
	int st, n;

	if (!buf)
		return luaL_error(L, "rshare: out of memory");
	st = rshare_attach_finishv(op, &dev, fds, RSHARE_CHANNEL_FDS_MAX, &nfds, buf,
				   RSHARE_PAYLOAD_MAX, &len);
	n = rshare_lua_push_attached(L, st, dev, buf, len);
	if (st != RSHARE_OK)
		return n;
	rshare_lua_push_fds(L, fds, nfds);
	return n + 1;
}

static int rshare_lua_attach_cancel(lua_State *L)
{
	lua_pushinteger(L, rshare_attach_cancel(rshare_lua_token(L, 1)));
	return 1;
}
%}
