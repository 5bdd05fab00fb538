/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The misuse sweep: every function of the manifest, called through ffi_call
 * with each handle NULL, stale, of the wrong kind or garbage, each required
 * pointer NULL, and each (buf, cap, len) buffer NULL or one byte too small,
 * expecting the statuses the header documents for all functions:
 *   NULL handle or pointer -> RSHARE_E_INVAL, stale/garbage -> RSHARE_E_STALE,
 *   small buffer -> RSHARE_E_NOSPACE with *len = the size needed.
 * Which parameter is what comes from its manifest type; a recipe per
 * function supplies one set of valid arguments and the parameters the header
 * documents as NULL-able. A function without a recipe fails the harness, so
 * a new function cannot slip past it.
 */
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ffi_bind.h"
#include "harness.h"

#define SENTINEL ((size_t)0xdead)
#define QUEUED "queued message"

struct fixture {
	void *dev, *pd, *var, *mr, *dm, *bufh; /* mr, dm, bufh NULL when sim0 lacks them */
	void *stale_dev, *stale_pd, *stale_var, *stale_mr, *stale_dm, *stale_bufh;
	void *stale_broker, *stale_share; /* stopped, withdrawn */
	void *attach, *stale_attach;      /* answered (by "sweep"), cancelled */
	unsigned char pd_blob[256], var_blob[256], mr_blob[256], dm_blob[256];
	size_t pd_len, var_len, mr_len, dm_len;
	unsigned char buf_blob[256];
	size_t buf_len;
	int buf_fd; /* the buffer's memfd (borrowed) */
	unsigned char mem[64]; /* the memory the MR registers */
	char pd_text[256];
	int fd;    /* dev's command fd */
	int sv[2]; /* a channel with QUEUED waiting in sv[1] */
	/* An embedded broker holding one share (the PD blob) named "sweep". */
	void *broker, *share;
	char bdir[64], bpath[100], bpath2[100];
	/* Output cells of the valid arguments. */
	char buf[512];
	size_t z, z2;
	int i, fds[16]; /* more than any message carries */
	uint32_t u32, u32b, caps;
	uint64_t u64;
	void *p;
};

#define SET(a, ...) memcpy((a), (ffi_val[]){ __VA_ARGS__ }, sizeof((ffi_val[]){ __VA_ARGS__ }))
#define BUF(f) VP((f)->buf), VZ(sizeof((f)->buf))

static void a_version(struct fixture *f, ffi_val *a) { (void)f; (void)a; }
static void a_status(struct fixture *f, ffi_val *a) { SET(a, VI(INT_MIN)); }
static void a_devices_count(struct fixture *f, ffi_val *a) { SET(a, VP(&f->z)); }
static void a_devices_get(struct fixture *f, ffi_val *a)
{
	SET(a, VZ(0), BUF(f), VP(&f->u64), VP(&f->i));
}
static void a_device_open(struct fixture *f, ffi_val *a) { SET(a, VP("sim0"), VP(&f->p)); }
static void a_device_import(struct fixture *f, ffi_val *a) { SET(a, VI(f->fd), VP(&f->p)); }
static void a_dev_int(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VP(&f->i)); }
static void a_dev_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), BUF(f), VP(&f->z)); }
static void a_dev_u64(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VP(&f->u64)); }
static void a_dev(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev)); }
static void a_dev_out(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VP(&f->p)); }
static void a_pd(struct fixture *f, ffi_val *a) { SET(a, VP(f->pd)); }
static void a_pd_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->pd), BUF(f), VP(&f->z)); }
static void a_pd_u32(struct fixture *f, ffi_val *a) { SET(a, VP(f->pd), VP(&f->u32)); }
static void a_pd_import(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->dev), VP(f->pd_blob), VZ(f->pd_len), VP(&f->p));
}
static void a_var_alloc(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VU32(0), VP(&f->p)); }
static void a_var(struct fixture *f, ffi_val *a) { SET(a, VP(f->var)); }
static void a_var_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->var), BUF(f), VP(&f->z)); }
static void a_var_import(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->dev), VP(f->var_blob), VZ(f->var_len), VP(&f->p));
}
static void a_var_attrs(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->var), VP(&f->u32), VP(&f->u32b), VP(&f->u64));
}
static void a_var_map(struct fixture *f, ffi_val *a) { SET(a, VP(f->var), VP(&f->p)); }
static void a_var_u32(struct fixture *f, ffi_val *a) { SET(a, VP(f->var), VP(&f->u32)); }
static void a_dev_u32(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VP(&f->u32)); }
static void a_dev_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VP(&f->p)); }
static void a_pd_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->pd), VP(&f->p)); }
static void a_var_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->var), VP(&f->p)); }
static void a_mr_reg(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd), VP(f->mem), VZ(sizeof(f->mem)), VU32((uint32_t)ST(ACCESS_LOCAL_WRITE)),
	    VP(&f->p));
}
static void a_mr(struct fixture *f, ffi_val *a) { SET(a, VP(f->mr)); }
static void a_mr_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->mr), BUF(f), VP(&f->z)); }
static void a_mr_import(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd), VP(f->mr_blob), VZ(f->mr_len), VP(&f->p));
}
static void a_mr_attrs(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->mr), VP(&f->u64), VP(&f->u64), VP(&f->u32), VP(&f->u32b), VP(&f->u32));
}
static void a_mr_u32(struct fixture *f, ffi_val *a) { SET(a, VP(f->mr), VP(&f->u32)); }
static void a_mr_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->mr), VP(&f->p)); }
static void a_dm_alloc(struct fixture *f, ffi_val *a) { SET(a, VP(f->dev), VU64(64), VP(&f->p)); }
static void a_dm(struct fixture *f, ffi_val *a) { SET(a, VP(f->dm)); }
static void a_dm_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->dm), BUF(f), VP(&f->z)); }
static void a_dm_import(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->dev), VP(f->dm_blob), VZ(f->dm_len), VP(&f->p));
}
static void a_dm_u64(struct fixture *f, ffi_val *a) { SET(a, VP(f->dm), VP(&f->u64)); }
static void a_dm_u32(struct fixture *f, ffi_val *a) { SET(a, VP(f->dm), VP(&f->u32)); }
static void a_dm_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->dm), VP(&f->p)); }
static void a_dm_rw(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->dm), VU64(0), VP(f->buf), VZ(8));
}
static void a_blob_field(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd_blob), VZ(f->pd_len), VI(ST(FIELD_HANDLE)), VP(&f->u64));
}
static void a_blob_kind(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd_blob), VZ(f->pd_len), VP(&f->i));
}
static void a_blob_size(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd_blob), VZ(f->pd_len), VP(&f->z));
}
static void a_kind(struct fixture *f, ffi_val *a) { (void)f; SET(a, VI(st("RSHARE_KIND_PD"))); }
static void a_provider(struct fixture *f, ffi_val *a) { (void)f; SET(a, VI(st("RSHARE_PROVIDER_SIM"))); }
static void a_blob_buf(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd_blob), VZ(f->pd_len), BUF(f), VP(&f->z));
}
static void a_from_text(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd_text), BUF(f), VP(&f->z));
}
static void a_send(struct fixture *f, ffi_val *a)
{
	SET(a, VI(f->sv[0]), VP(f->dev), VP("x"), VZ(1));
}
static void a_recv(struct fixture *f, ffi_val *a)
{
	SET(a, VI(f->sv[1]), VP(&f->p), BUF(f), VP(&f->z));
}
static void a_sendv(struct fixture *f, ffi_val *a)
{
	SET(a, VI(f->sv[0]), VP(f->dev), VP(&f->fd), VZ(1), VP("x"), VZ(1));
}
static void a_recvv(struct fixture *f, ffi_val *a)
{
	SET(a, VI(f->sv[1]), VP(&f->p), VP(f->fds), VZ(16), VP(&f->z2),
	    BUF(f), VP(&f->z));
}
static void a_buf_alloc(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd), VZ(64), VU32((uint32_t)ST(ACCESS_LOCAL_WRITE)), VP(&f->p));
}
static void a_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->bufh)); }
static void a_buf_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->bufh), BUF(f), VP(&f->z)); }
static void a_buf_int(struct fixture *f, ffi_val *a) { SET(a, VP(f->bufh), VP(&f->i)); }
static void a_buf_out(struct fixture *f, ffi_val *a) { SET(a, VP(f->bufh), VP(&f->p)); }
static void a_buf_ptr(struct fixture *f, ffi_val *a) { SET(a, VP(f->bufh), VP(&f->p), VP(&f->z)); }
static void a_buf_import(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->pd), VP(f->buf_blob), VZ(f->buf_len), VI(f->buf_fd), VP(&f->p));
}
static void a_broker_start(struct fixture *f, ffi_val *a) { SET(a, VP(f->bpath), VP(&f->p)); }
static void a_broker(struct fixture *f, ffi_val *a) { SET(a, VP(f->broker)); }
static void a_broker_buf(struct fixture *f, ffi_val *a) { SET(a, VP(f->broker), BUF(f), VP(&f->z)); }
static void a_default_ep(struct fixture *f, ffi_val *a) { SET(a, BUF(f), VP(&f->z)); }
static void a_publish(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->bpath), VP("other"), VP(f->dev), VP(f->pd_blob), VZ(f->pd_len), VP(NULL),
	    VP(&f->p));
}
static void a_share(struct fixture *f, ffi_val *a) { SET(a, VP(f->share)); }
static void a_withdraw_name(struct fixture *f, ffi_val *a) { SET(a, VP(f->bpath), VP("none")); }
static void a_attach(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->bpath), VP("sweep"), VI(0), VP(&f->p), BUF(f), VP(&f->z));
}
static void a_list(struct fixture *f, ffi_val *a) { SET(a, VP(f->bpath), BUF(f), VP(&f->z)); }
static void a_publishv(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->bpath), VP("otherv"), VP(f->dev), VP(&f->buf_fd), VZ(1), VP(f->pd_blob),
	    VZ(f->pd_len), VP(NULL), VP(&f->p));
}
static void a_attachv(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->bpath), VP("sweep"), VI(0), VP(&f->p), VP(f->fds), VZ(16), VP(&f->z2),
	    BUF(f), VP(&f->z));
}
static void a_attach_start(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->bpath), VP("sweep"), VP(&f->p));
}
static void a_attach_finishv(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->attach), VP(&f->p), VP(f->fds), VZ(16), VP(&f->z2), BUF(f), VP(&f->z));
}
static void a_attach_op(struct fixture *f, ffi_val *a) { SET(a, VP(f->attach)); }
static void a_attach_fd(struct fixture *f, ffi_val *a) { SET(a, VP(f->attach), VP(&f->i)); }
static void a_attach_wait(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->attach), VI(0), VU32(0));
}
static void a_attach_finish(struct fixture *f, ffi_val *a)
{
	SET(a, VP(f->attach), VP(&f->p), BUF(f), VP(&f->z));
}

struct recipe {
	const char *name;
	const char *nullable; /* parameters the header documents as NULL-able */
	void (*args)(struct fixture *f, ffi_val *a);
};

enum { K_DEV, K_PD, K_VAR, K_MR, K_DM, K_BROKER, K_SHARE, K_ATTACH, K_BUF, NKINDS };

static const struct recipe recipes[] = {
	{ "rshare_version", "", a_version },
	{ "rshare_status_name", "", a_status },
	{ "rshare_strerror", "", a_status },
	{ "rshare_last_error", "", a_version },
	{ "rshare_last_errno", "", a_version },
	{ "rshare_devices_count", "", a_devices_count },
	{ "rshare_devices_get", "guid provider", a_devices_get },
	{ "rshare_device_open", "name", a_device_open },
	{ "rshare_device_import", "", a_device_import },
	{ "rshare_device_fd", "", a_dev_int },
	{ "rshare_device_name", "", a_dev_buf },
	{ "rshare_device_guid", "", a_dev_u64 },
	{ "rshare_device_provider", "", a_dev_int },
	{ "rshare_device_close", "", a_dev },
	{ "rshare_pd_alloc", "", a_dev_out },
	{ "rshare_pd_export", "", a_pd_buf },
	{ "rshare_pd_import", "", a_pd_import },
	{ "rshare_pd_unimport", "", a_pd },
	{ "rshare_pd_free", "", a_pd },
	{ "rshare_pd_handle", "", a_pd_u32 },
	{ "rshare_var_alloc", "", a_var_alloc },
	{ "rshare_var_export", "", a_var_buf },
	{ "rshare_var_import", "", a_var_import },
	{ "rshare_var_unimport", "", a_var },
	{ "rshare_var_free", "", a_var },
	{ "rshare_var_attrs", "page_id length mmap_off", a_var_attrs },
	{ "rshare_var_map", "", a_var_map },
	{ "rshare_var_unmap", "", a_var },
	{ "rshare_blob_kind", "", a_blob_kind },
	{ "rshare_blob_describe", "", a_blob_buf },
	{ "rshare_blob_to_text", "", a_blob_buf },
	{ "rshare_blob_from_text", "", a_from_text },
	{ "rshare_channel_send", "", a_send },
	{ "rshare_channel_recv", "", a_recv },
	/* Since 1.1. */
	{ "rshare_version_number", "", a_version },
	{ "rshare_device_caps", "", a_dev_u32 },
	{ "rshare_device_native", "", a_dev_ptr },
	{ "rshare_pd_native", "", a_pd_ptr },
	{ "rshare_var_handle", "", a_var_u32 },
	{ "rshare_var_native", "", a_var_ptr },
	{ "rshare_mr_reg", "", a_mr_reg },
	{ "rshare_mr_export", "", a_mr_buf },
	{ "rshare_mr_import", "", a_mr_import },
	{ "rshare_mr_unimport", "", a_mr },
	{ "rshare_mr_dereg", "", a_mr },
	{ "rshare_mr_attrs", "addr length lkey rkey access", a_mr_attrs },
	{ "rshare_mr_handle", "", a_mr_u32 },
	{ "rshare_mr_native", "", a_mr_ptr },
	{ "rshare_dm_alloc", "", a_dm_alloc },
	{ "rshare_dm_export", "", a_dm_buf },
	{ "rshare_dm_import", "", a_dm_import },
	{ "rshare_dm_unimport", "", a_dm },
	{ "rshare_dm_free", "", a_dm },
	{ "rshare_dm_length", "", a_dm_u64 },
	{ "rshare_dm_write", "", a_dm_rw },
	{ "rshare_dm_read", "", a_dm_rw },
	{ "rshare_dm_handle", "", a_dm_u32 },
	{ "rshare_dm_native", "", a_dm_ptr },
	{ "rshare_blob_field", "", a_blob_field },
	{ "rshare_broker_start", "endpoint", a_broker_start },
	{ "rshare_broker_stop", "", a_broker },
	{ "rshare_broker_endpoint", "", a_broker_buf },
	{ "rshare_broker_default_endpoint", "", a_default_ep },
	{ "rshare_broker_publish", "endpoint payload opts", a_publish },
	{ "rshare_broker_withdraw", "", a_share },
	{ "rshare_broker_withdraw_name", "endpoint", a_withdraw_name },
	{ "rshare_broker_attach", "endpoint", a_attach },
	{ "rshare_broker_list", "endpoint", a_list },
	/* Since 1.2. */
	{ "rshare_kind_name", "", a_kind },
	{ "rshare_provider_name", "", a_provider },
	{ "rshare_blob_size", "", a_blob_size },
	{ "rshare_buf_alloc", "", a_buf_alloc },
	{ "rshare_buf_export", "", a_buf_buf },
	{ "rshare_buf_fd", "", a_buf_int },
	{ "rshare_buf_import", "", a_buf_import },
	{ "rshare_buf_ptr", "len", a_buf_ptr },
	{ "rshare_buf_mr", "", a_buf_out },
	{ "rshare_buf_unimport", "", a_buf },
	{ "rshare_buf_free", "", a_buf },
	{ "rshare_channel_sendv", "", a_sendv },
	/* fds may be NULL: a message without extra fds is then received (the
	 * sweep's NULL would consume the queued one); the sweep checks the rest. */
	{ "rshare_channel_recvv", "fds", a_recvv },
	{ "rshare_broker_publishv", "endpoint payload opts", a_publishv },
	{ "rshare_dm_map", "", a_dm_ptr },
	{ "rshare_dm_unmap", "", a_dm },
	{ "rshare_broker_attachv", "endpoint fds", a_attachv },
	{ "rshare_broker_attach_start", "endpoint", a_attach_start },
	{ "rshare_broker_attach_startv", "endpoint", a_attach_start },
	{ "rshare_attach_fd", "", a_attach_fd },
	{ "rshare_attach_wait", "", a_attach_wait },
	{ "rshare_attach_finish", "", a_attach_finish },
	/* fds may be NULL: a share without extra fds (the sweep's) is then
	 * finished; the sweep checks the rest. */
	{ "rshare_attach_finishv", "fds", a_attach_finishv },
	{ "rshare_attach_cancel", "", a_attach_op },
	{ "rshare_broker_waiting", "endpoint", a_list },
};

static const struct recipe *recipe_for(const char *name)
{
	for (size_t i = 0; i < sizeof(recipes) / sizeof(recipes[0]); i++)
		if (strcmp(recipes[i].name, name) == 0)
			return &recipes[i];
	return NULL;
}

static int listed(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* K_DEV .. K_SHARE for a handle parameter, -1 for anything else. */
static int handle_kind(const char *type)
{
	static const char *const kinds[NKINDS] = { "rshare_device *", "rshare_pd *",
						   "rshare_var *", "rshare_mr *", "rshare_dm *",
						   "rshare_broker *", "rshare_share *",
						   "rshare_attach *", "rshare_buf *" };

	if (strncmp(type, "const ", 6) == 0)
		type += 6;
	for (int k = 0; k < NKINDS; k++)
		if (strcmp(type, kinds[k]) == 0)
			return k;
	return -1;
}

/* A (buf, cap[, len]) output: a writable void or char pointer before "cap". */
static int is_buffer(const struct abi_fn *fn, int k)
{
	return (strcmp(fn->params[k].type, "void *") == 0 ||
		strcmp(fn->params[k].type, "char *") == 0) &&
	       k + 1 < fn->nparams && strcmp(fn->params[k + 1].name, "cap") == 0;
}

static int creates_object(const struct abi_fn *fn)
{
	for (int k = 0; k < fn->nparams; k++)
		if (strstr(fn->params[k].type, "**") && strncmp(fn->params[k].type, "void", 4))
			return 1;
	return 0;
}

static int call(const struct abi_fn *fn, const ffi_val *a)
{
	return call_int(fn->name, a, fn->nparams);
}

static void sweep_handle(struct fixture *f, const struct abi_fn *fn,
			 const struct recipe *r, int k, int kind)
{
	void *stale[NKINDS] = { f->stale_dev, f->stale_pd, f->stale_var, f->stale_mr,
				f->stale_dm, f->stale_broker, f->stale_share, f->stale_attach,
				f->stale_bufh };
	/* live, of another kind */
	void *other[NKINDS] = { f->pd, f->var, f->dev, f->pd, f->var, f->dev, f->pd, f->dev,
				f->pd };
	int local = 0;
	void *garbage[] = { (void *)1, (void *)(uintptr_t)0xdeadbeef0, (void *)(uintptr_t)-1,
			    &local, other[kind] };
	ffi_val a[ABI_MAX_PARAMS];

	r->args(f, a);
	a[k] = VP(NULL);
	EXPECT(call(fn, a), ST(E_INVAL), "%s(%s NULL)", fn->name, fn->params[k].name);
	if (stale[kind]) { /* an MR or DM can be made stale only where sim0 has them */
		a[k] = VP(stale[kind]);
		EXPECT(call(fn, a), ST(E_STALE), "%s(%s stale)", fn->name, fn->params[k].name);
	}
	for (size_t g = 0; g < sizeof(garbage) / sizeof(garbage[0]); g++) {
		a[k] = VP(garbage[g]);
		EXPECT(call(fn, a), ST(E_STALE), "%s(%s = %p, %s)", fn->name, fn->params[k].name,
		       garbage[g], g == 4 ? "a live handle of another kind" : "garbage");
	}
}

static void sweep_buffer(struct fixture *f, const struct abi_fn *fn,
			 const struct recipe *r, int k)
{
	int has_len = k + 2 < fn->nparams && strcmp(fn->params[k + 2].type, "size_t *") == 0;
	int is_str = strcmp(fn->params[k].type, "char *") == 0;
	const char *bn = fn->params[k].name;
	size_t need;
	ffi_val a[ABI_MAX_PARAMS];

	if (!has_len) {
		/* devices_get: no length out; a NULL name with cap 0 means the
		 * name is not wanted, NULL with cap > 0 is a caller bug. */
		r->args(f, a);
		a[k + 1] = VZ(1);
		EXPECT(call(fn, a), ST(E_NOSPACE), "%s(%s of 1 byte)", fn->name, bn);
		r->args(f, a);
		a[k] = VP(NULL);
		EXPECT(call(fn, a), ST(E_INVAL), "%s(%s NULL, cap > 0)", fn->name, bn);
		a[k + 1] = VZ(0);
		EXPECT(call(fn, a), ST(OK), "%s(%s NULL, cap 0)", fn->name, bn);
		return;
	}
	r->args(f, a);
	a[k] = VP(NULL);
	a[k + 1] = VZ(0);
	f->z = SENTINEL;
	EXPECT(call(fn, a), ST(E_NOSPACE), "%s(%s NULL, cap 0)", fn->name, bn);
	need = f->z;
	if (!EXPECT_TRUE(need != SENTINEL && need > 0 && need < sizeof(f->buf),
			 "%s(%s NULL): *len = %zu, want the size needed", fn->name, bn, need))
		return;
	/* One byte short: strings need room for the NUL that *len excludes. */
	r->args(f, a);
	a[k + 1] = VZ(is_str ? need : need - 1);
	f->z = SENTINEL;
	EXPECT(call(fn, a), ST(E_NOSPACE), "%s(%s one byte short)", fn->name, bn);
	EXPECT_TRUE(f->z == need, "%s(%s short): *len = %zu, want %zu", fn->name, bn, f->z, need);
	r->args(f, a);
	a[k] = VP(NULL);
	f->z = SENTINEL;
	EXPECT(call(fn, a), ST(E_NOSPACE), "%s(%s NULL, cap > 0)", fn->name, bn);
	EXPECT_TRUE(f->z == need, "%s(%s NULL): *len = %zu, want %zu", fn->name, bn, f->z, need);
	if (creates_object(fn))
		return; /* the exact fit would consume the message; done at the end */
	r->args(f, a);
	a[k + 1] = VZ(is_str ? need + 1 : need);
	f->z = SENTINEL;
	EXPECT(call(fn, a), ST(OK), "%s(%s exact fit)", fn->name, bn);
	EXPECT_TRUE(f->z == need, "%s(exact fit): *len = %zu, want %zu", fn->name, f->z, need);
	EXPECT_TRUE(!is_str || f->buf[need] == '\0', "%s: not NUL-terminated", fn->name);
}

/* Do the valid arguments of fn hold a live object of the kind named by
 * prefix (every function of that prefix but the one that makes it)? */
static int needs(const char *fn, const char *prefix, const char *maker)
{
	return strncmp(fn, prefix, strlen(prefix)) == 0 && strcmp(fn, maker) != 0;
}

static void sweep_fn(struct fixture *f, const struct abi_fn *fn, const struct recipe *r)
{
	ffi_val a[ABI_MAX_PARAMS];
	int pointers = 0;
	/* Without a live MR or DM (a provider without them), only the handle
	 * parameters can be swept: NULL and garbage handles. */
	int live = !(needs(fn->name, "rshare_mr_", "rshare_mr_reg") && !f->mr) &&
		   !(needs(fn->name, "rshare_dm_", "rshare_dm_alloc") && !f->dm) &&
		   !(needs(fn->name, "rshare_buf_", "rshare_buf_alloc") && !f->bufh);

	for (int k = 0; k < fn->nparams; k++) {
		const struct abi_param *p = &fn->params[k];
		int kind = handle_kind(p->type);

		if (p->ffi != ABI_POINTER)
			continue;
		pointers++;
		if (kind >= 0) {
			sweep_handle(f, fn, r, k, kind);
		} else if (!live) {
			continue;
		} else if (is_buffer(fn, k)) {
			sweep_buffer(f, fn, r, k);
		} else if (!listed(r->nullable, p->name)) {
			r->args(f, a);
			a[k] = VP(NULL);
			EXPECT(call(fn, a), ST(E_INVAL), "%s(%s NULL)", fn->name, p->name);
		}
	}
	if (pointers)
		return;
	/* No pointer to misuse (version, status names, last error): these
	 * never fail; pointers they return are static strings. */
	r->args(f, a);
	if (fn->ret == ABI_POINTER) {
		const char *s = call_ptr(fn->name, a, fn->nparams);

		EXPECT_TRUE(s != NULL, "%s returned NULL", fn->name);
	} else {
		call(fn, a);
	}
}

static void make_stale(struct fixture *f)
{
	void *d = NULL;

	EXPECT(CALLI("rshare_device_open", VP("sim0"), VP(&d)), ST(OK), "open");
	EXPECT(CALLI("rshare_pd_alloc", VP(d), VP(&f->stale_pd)), ST(OK), "pd_alloc");
	EXPECT(CALLI("rshare_pd_free", VP(f->stale_pd)), ST(OK), "pd_free");
	EXPECT(CALLI("rshare_var_alloc", VP(d), VU32(0), VP(&f->stale_var)), ST(OK), "var_alloc");
	EXPECT(CALLI("rshare_var_free", VP(f->stale_var)), ST(OK), "var_free");
	if (f->caps & (uint32_t)ST(CAP_MR)) {
		void *pd = NULL;

		EXPECT(CALLI("rshare_pd_alloc", VP(d), VP(&pd)), ST(OK), "pd_alloc");
		EXPECT(CALLI("rshare_mr_reg", VP(pd), VP(f->mem), VZ(sizeof(f->mem)), VU32(0),
			     VP(&f->stale_mr)), ST(OK), "mr_reg");
		EXPECT(CALLI("rshare_mr_dereg", VP(f->stale_mr)), ST(OK), "mr_dereg");
		EXPECT(CALLI("rshare_buf_alloc", VP(pd), VZ(64), VU32(0), VP(&f->stale_bufh)),
		       ST(OK), "buf_alloc");
		EXPECT(CALLI("rshare_buf_free", VP(f->stale_bufh)), ST(OK), "buf_free");
		EXPECT(CALLI("rshare_pd_free", VP(pd)), ST(OK), "pd_free");
	}
	if (f->caps & (uint32_t)ST(CAP_DM)) {
		EXPECT(CALLI("rshare_dm_alloc", VP(d), VU64(64), VP(&f->stale_dm)), ST(OK),
		       "dm_alloc");
		EXPECT(CALLI("rshare_dm_free", VP(f->stale_dm)), ST(OK), "dm_free");
	}
	EXPECT(CALLI("rshare_device_close", VP(d)), ST(OK), "close");
	f->stale_dev = d;
}

/* The live MR and DM of the sweep, and their blobs, where sim0 has them. */
static void setup_mr_dm(struct fixture *f)
{
	if (f->caps & (uint32_t)ST(CAP_MR)) {
		EXPECT(CALLI("rshare_mr_reg", VP(f->pd), VP(f->mem), VZ(sizeof(f->mem)),
			     VU32((uint32_t)ST(ACCESS_LOCAL_WRITE)), VP(&f->mr)), ST(OK), "mr_reg");
		EXPECT(CALLI("rshare_mr_export", VP(f->mr), VP(f->mr_blob), VZ(sizeof(f->mr_blob)),
			     VP(&f->mr_len)), ST(OK), "mr_export");
		EXPECT(CALLI("rshare_buf_alloc", VP(f->pd), VZ(64),
			     VU32((uint32_t)ST(ACCESS_LOCAL_WRITE)), VP(&f->bufh)), ST(OK),
		       "buf_alloc");
		EXPECT(CALLI("rshare_buf_export", VP(f->bufh), VP(f->buf_blob),
			     VZ(sizeof(f->buf_blob)), VP(&f->buf_len)), ST(OK), "buf_export");
		EXPECT(CALLI("rshare_buf_fd", VP(f->bufh), VP(&f->buf_fd)), ST(OK), "buf_fd");
	} else {
		printf("ffi sweep: sim0 lacks RSHARE_CAP_MR: MR functions get NULL and garbage "
		       "handle checks only\n");
	}
	if (f->caps & (uint32_t)ST(CAP_DM)) {
		EXPECT(CALLI("rshare_dm_alloc", VP(f->dev), VU64(64), VP(&f->dm)), ST(OK),
		       "dm_alloc");
		EXPECT(CALLI("rshare_dm_export", VP(f->dm), VP(f->dm_blob), VZ(sizeof(f->dm_blob)),
			     VP(&f->dm_len)), ST(OK), "dm_export");
	} else {
		printf("ffi sweep: sim0 lacks RSHARE_CAP_DM: DM functions get NULL and garbage "
		       "handle checks only\n");
	}
}

static int setup(struct fixture *f)
{
	struct timeval tv = { .tv_sec = 5 };

	EXPECT(CALLI("rshare_device_open", VP("sim0"), VP(&f->dev)), ST(OK), "open sim0");
	EXPECT(CALLI("rshare_device_caps", VP(f->dev), VP(&f->caps)), ST(OK), "device_caps");
	make_stale(f);
	EXPECT(CALLI("rshare_device_fd", VP(f->dev), VP(&f->fd)), ST(OK), "device_fd");
	EXPECT(CALLI("rshare_pd_alloc", VP(f->dev), VP(&f->pd)), ST(OK), "pd_alloc");
	EXPECT(CALLI("rshare_var_alloc", VP(f->dev), VU32(0), VP(&f->var)), ST(OK), "var_alloc");
	EXPECT(CALLI("rshare_pd_export", VP(f->pd), VP(f->pd_blob), VZ(sizeof(f->pd_blob)),
		     VP(&f->pd_len)), ST(OK), "pd_export");
	EXPECT(CALLI("rshare_var_export", VP(f->var), VP(f->var_blob), VZ(sizeof(f->var_blob)),
		     VP(&f->var_len)), ST(OK), "var_export");
	EXPECT(CALLI("rshare_blob_to_text", VP(f->pd_blob), VZ(f->pd_len), VP(f->pd_text),
		     VZ(sizeof(f->pd_text)), VP(&f->z)), ST(OK), "blob_to_text");
	setup_mr_dm(f);
	/* A receive that wrongly blocks times out (E_IO) instead of hanging. */
	if (!EXPECT_TRUE(socketpair(AF_UNIX, SOCK_STREAM, 0, f->sv) == 0 &&
			 setsockopt(f->sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0,
			 "socketpair"))
		return -1;
	EXPECT(CALLI("rshare_channel_send", VI(f->sv[0]), VP(f->dev), VP(QUEUED),
		     VZ(sizeof(QUEUED))), ST(OK), "channel_send");
	snprintf(f->bdir, sizeof(f->bdir), "/tmp/rshare-ffi-XXXXXX");
	if (!EXPECT_TRUE(mkdtemp(f->bdir) != NULL, "mkdtemp"))
		return -1;
	snprintf(f->bpath, sizeof(f->bpath), "%s/b.sock", f->bdir);
	EXPECT(CALLI("rshare_broker_start", VP(f->bpath), VP(&f->broker)), ST(OK), "broker_start");
	EXPECT(CALLI("rshare_broker_publish", VP(f->bpath), VP("sweep"), VP(f->dev), VP(f->pd_blob),
		     VZ(f->pd_len), VP(NULL), VP(&f->share)), ST(OK), "broker_publish");
	/* A withdrawn share and a stopped broker, for the stale handle checks. */
	EXPECT(CALLI("rshare_broker_publish", VP(f->bpath), VP("gone"), VP(f->dev), VP(NULL),
		     VZ(0), VP(NULL), VP(&f->stale_share)), ST(OK), "broker_publish");
	EXPECT(CALLI("rshare_broker_withdraw", VP(f->stale_share)), ST(OK), "broker_withdraw");
	snprintf(f->bpath2, sizeof(f->bpath2), "%s/s.sock", f->bdir);
	EXPECT(CALLI("rshare_broker_start", VP(f->bpath2), VP(&f->stale_broker)), ST(OK),
	       "broker_start");
	EXPECT(CALLI("rshare_broker_stop", VP(f->stale_broker)), ST(OK), "broker_stop");
	/* An attach the broker answered (its share kept until finished) and
	 * a cancelled one. */
	EXPECT(CALLI("rshare_broker_attach_start", VP(f->bpath), VP("sweep"), VP(&f->attach)),
	       ST(OK), "broker_attach_start");
	EXPECT(CALLI("rshare_attach_wait", VP(f->attach), VI(5000), VU32(0)), ST(OK),
	       "attach_wait");
	EXPECT(CALLI("rshare_broker_attach_start", VP(f->bpath), VP("sweep"),
		     VP(&f->stale_attach)), ST(OK), "broker_attach_start");
	EXPECT(CALLI("rshare_attach_cancel", VP(f->stale_attach)), ST(OK), "attach_cancel");
	return ffi_failures ? -1 : 0;
}

/* The sweep must have changed nothing: the queued message is intact and
 * alone, and the live objects are still there to be freed. */
static void teardown(struct fixture *f)
{
	void *dev2 = NULL;
	char c;

	f->z = 0;
	EXPECT(CALLI("rshare_channel_recv", VI(f->sv[1]), VP(&dev2), VP(f->buf), VZ(sizeof(f->buf)),
		     VP(&f->z)), ST(OK), "channel_recv of the queued message");
	EXPECT_TRUE(f->z == sizeof(QUEUED) && memcmp(f->buf, QUEUED, sizeof(QUEUED)) == 0,
		    "queued message altered by the sweep");
	EXPECT(CALLI("rshare_device_close", VP(dev2)), ST(OK), "close the received device");
	EXPECT_TRUE(recv(f->sv[1], &c, 1, MSG_DONTWAIT) < 0,
		    "a failed channel_send sent something");
	close(f->sv[0]);
	close(f->sv[1]);
	if (f->mr)
		EXPECT(CALLI("rshare_mr_dereg", VP(f->mr)), ST(OK), "mr_dereg after the sweep");
	if (f->dm)
		EXPECT(CALLI("rshare_dm_free", VP(f->dm)), ST(OK), "dm_free after the sweep");
	/* The answered attach kept its share through the sweep. */
	f->z = 0;
	EXPECT(CALLI("rshare_attach_finish", VP(f->attach), VP(&dev2), VP(f->buf),
		     VZ(sizeof(f->buf)), VP(&f->z)), ST(OK), "attach_finish after the sweep");
	EXPECT_TRUE(f->z == f->pd_len && memcmp(f->buf, f->pd_blob, f->z) == 0,
		    "attach payload altered by the sweep");
	EXPECT(CALLI("rshare_device_close", VP(dev2)), ST(OK), "close the attached device");
	EXPECT(CALLI("rshare_attach_cancel", VP(f->attach)), ST(E_STALE), "attach over");
	if (f->bufh)
		EXPECT(CALLI("rshare_buf_free", VP(f->bufh)), ST(OK), "buf_free after the sweep");
	EXPECT(CALLI("rshare_broker_withdraw", VP(f->share)), ST(OK), "broker_withdraw");
	EXPECT(CALLI("rshare_broker_stop", VP(f->broker)), ST(OK), "broker_stop");
	{
		char lock[128];
		snprintf(lock, sizeof(lock), "%s.lock", f->bpath);
		unlink(lock);
		snprintf(lock, sizeof(lock), "%s.lock", f->bpath2);
		unlink(lock);
		rmdir(f->bdir);
	}
	EXPECT(CALLI("rshare_pd_free", VP(f->pd)), ST(OK), "pd_free after the sweep");
	EXPECT(CALLI("rshare_var_free", VP(f->var)), ST(OK), "var_free after the sweep");
	EXPECT(CALLI("rshare_device_close", VP(f->dev)), ST(OK), "close after the sweep");
}

void run_sweep(void)
{
	struct fixture f = { .fd = -1 };

	for (size_t i = 0; i < sizeof(recipes) / sizeof(recipes[0]); i++) {
		int found = 0;

		for (size_t j = 0; j < abi_fn_count(); j++)
			found |= strcmp(abi_fn_at(j)->name, recipes[i].name) == 0;
		EXPECT_TRUE(found, "recipe for %s, which the manifest does not have",
			    recipes[i].name);
	}
	if (setup(&f))
		return;
	for (size_t j = 0; j < abi_fn_count(); j++) {
		const struct abi_fn *fn = abi_fn_at(j);
		const struct recipe *r = recipe_for(fn->name);

		if (EXPECT_TRUE(r != NULL, "%s has no recipe in tests/ffi/sweep.c", fn->name))
			sweep_fn(&f, fn, r);
	}
	teardown(&f);
}
