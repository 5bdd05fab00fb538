/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One object operation through the ABI beside its floor.
 *
 * Every round runs a whole life cycle on a batch of objects (alloc, export,
 * import, unimport, free) first through the ABI, then directly through the
 * provider table, and times only the operation the row names, so each row
 * is measured in its own block and the untimed steps settle around it. The
 * floor of export and import includes the blob encoding and validation any
 * checked blob needs: the difference is the ABI layer's own cost (handle
 * table, pins, copy-out).
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blob.h"
#include "bench.h"
#include "util/fdutil.h"
#include "util/memfd.h"

#define PD_BATCH 400
#define PD_ROUNDS 25
#define VAR_BATCH 48
#define VAR_ROUNDS 120
#define MR_BATCH 400
#define MR_ROUNDS 25
#define DM_BATCH 48 /* sim0's device memory holds 64 of the smallest */
#define DM_ROUNDS 120
#define DM_BYTES 64
#define BUF_BATCH 48    /* each holds a memfd and a mapping, twice when imported */
#define BUF_ROUNDS 60
#define BUF_BYTES 4096
#define MAX_BATCH PD_BATCH

union info {
	struct rs_pd_info pd;
	struct rs_var_info var;
	struct rs_mr_info mr;
	struct rs_dm_info dm;
	struct fbuf {           /* a buffer made directly: the memfd and the MR */
		struct rs_mr_info mr;
		int fd;
		void *addr;
		uint64_t dev, ino;
	} buf;
};

/* Every cycle's blobs: a buffer's import finds the memfd exported with
 * blobs[i] in buf_fds[i] (slot_of(blob) is i). */
static uint8_t blobs[MAX_BATCH][RSHARE_BLOB_MAX];
static int buf_fds[MAX_BATCH];

static int slot_of(const void *blob)
{
	return (int)(((const uint8_t *)blob - &blobs[0][0]) / RSHARE_BLOB_MAX);
}

/* One object kind, through the ABI and directly. */
struct kind {
	const char *name;
	int batch, rounds;
	int (*alloc)(rshare_device *dev, void **obj);
	int (*export_)(const void *obj, void *buf, size_t cap, size_t *len);
	int (*import)(rshare_device *dev, const void *blob, size_t len, void **obj);
	int (*unimport)(void *obj);
	int (*free_)(void *obj);
	int (*f_alloc)(struct rs_ctx *ctx, union info *o);
	int (*f_export)(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len);
	int (*f_import)(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o);
	void (*f_unimport)(struct rs_ctx *ctx, union info *o);
	int (*f_free)(struct rs_ctx *ctx, union info *o);
	/* What the objects live in, made before the rounds and released after
	 * (MRs: a PD through the ABI and one on the provider). May be NULL. */
	int (*setup)(rshare_device *dev, struct rs_ctx *ctx);
	void (*teardown)(void);
};

static int pd_alloc(rshare_device *dev, void **o) { return rshare_pd_alloc(dev, (rshare_pd **)o); }
static int pd_export(const void *o, void *b, size_t c, size_t *l) { return rshare_pd_export(o, b, c, l); }
static int pd_import(rshare_device *d, const void *b, size_t l, void **o) { return rshare_pd_import(d, b, l, (rshare_pd **)o); }
static int pd_unimport(void *o) { return rshare_pd_unimport(o); }
static int pd_free(void *o) { return rshare_pd_free(o); }

static int fpd_alloc(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->pd_alloc(ctx, &o->pd);
}

static int fpd_export(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len)
{
	struct rs_blob b;

	rs_blob_init(&b, RSHARE_KIND_PD, ctx);
	b.handle = o->pd.handle;
	b.serial = o->pd.serial;
	*len = rs_blob_encode(&b, blob);
	return RSHARE_OK;
}

static int fpd_import(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o)
{
	struct rs_blob b;
	int s = rs_blob_decode(blob, len, &b);

	if (!s)
		s = rs_blob_check_target(&b, RSHARE_KIND_PD, ctx);
	if (s)
		return s;
	o->pd = (struct rs_pd_info){ .handle = b.handle, .serial = b.serial };
	return ctx->ops->pd_import(ctx, &o->pd);
}

static void fpd_unimport(struct rs_ctx *ctx, union info *o)
{
	ctx->ops->pd_unimport(ctx, &o->pd);
}

static int fpd_free(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->pd_dealloc(ctx, &o->pd);
}

static int var_alloc(rshare_device *dev, void **o) { return rshare_var_alloc(dev, 0, (rshare_var **)o); }
static int var_export(const void *o, void *b, size_t c, size_t *l) { return rshare_var_export(o, b, c, l); }
static int var_import(rshare_device *d, const void *b, size_t l, void **o) { return rshare_var_import(d, b, l, (rshare_var **)o); }
static int var_unimport(void *o) { return rshare_var_unimport(o); }
static int var_free(void *o) { return rshare_var_free(o); }

static int fvar_alloc(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->var_alloc(ctx, 0, &o->var);
}

static int fvar_export(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len)
{
	struct rs_var_info info = o->var;
	struct rs_blob b;
	int s = ctx->ops->var_export(ctx, &info);

	if (s)
		return s;
	rs_blob_from_var(&b, ctx, &info);
	*len = rs_blob_encode(&b, blob);
	return RSHARE_OK;
}

static int fvar_import(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o)
{
	struct rs_blob b;
	int s = rs_blob_decode(blob, len, &b);

	if (!s)
		s = rs_blob_check_target(&b, RSHARE_KIND_VAR, ctx);
	if (s)
		return s;
	rs_var_from_blob(&o->var, &b);
	return ctx->ops->var_import(ctx, &o->var);
}

static void fvar_unimport(struct rs_ctx *ctx, union info *o)
{
	ctx->ops->var_unimport(ctx, &o->var);
}

static int fvar_free(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->var_free(ctx, &o->var);
}

/* MRs: every MR of a round registers the same memory on one PD. */
static rshare_pd *mr_pd;
static struct rs_pd_info mr_fpd;
static struct rs_ctx *mr_ctx;
static uint8_t mr_mem[4096];

static int mr_setup(rshare_device *dev, struct rs_ctx *ctx)
{
	int s = rshare_pd_alloc(dev, &mr_pd);

	if (s)
		return bench_fail("mr: a PD", s, false);
	mr_ctx = ctx;
	mr_fpd = (struct rs_pd_info){ 0 };
	s = ctx->ops->pd_alloc(ctx, &mr_fpd);
	if (s) {
		rshare_pd_free(mr_pd);
		return bench_fail("mr: a PD", s, true);
	}
	return 0;
}

static void mr_teardown(void)
{
	rshare_pd_free(mr_pd);
	mr_ctx->ops->pd_dealloc(mr_ctx, &mr_fpd);
}

static int mr_alloc(rshare_device *dev, void **o)
{
	(void)dev;
	return rshare_mr_reg(mr_pd, mr_mem, sizeof(mr_mem), RSHARE_ACCESS_LOCAL_WRITE,
			     (rshare_mr **)o);
}
static int mr_export(const void *o, void *b, size_t c, size_t *l) { return rshare_mr_export(o, b, c, l); }
static int mr_import(rshare_device *d, const void *b, size_t l, void **o)
{
	(void)d;
	return rshare_mr_import(mr_pd, b, l, (rshare_mr **)o);
}
static int mr_unimport(void *o) { return rshare_mr_unimport(o); }
static int mr_free(void *o) { return rshare_mr_dereg(o); }

static int fmr_alloc(struct rs_ctx *ctx, union info *o)
{
	o->mr = (struct rs_mr_info){ 0 };
	return ctx->ops->mr_reg(ctx, &mr_fpd, mr_mem, sizeof(mr_mem), RSHARE_ACCESS_LOCAL_WRITE,
				&o->mr);
}

/* An MR's blob fields (an MR's blob, or a buffer's). */
static void mr_fields(struct rs_blob *b, const struct rs_mr_info *mr)
{
	b->handle = mr->handle;
	b->serial = mr->serial;
	b->pd_handle = mr_fpd.handle;
	b->pd_serial = mr_fpd.serial;
	b->addr = mr->addr;
	b->length = mr->length;
	b->lkey = mr->lkey;
	b->rkey = mr->rkey;
	b->access = mr->access;
}

static int fmr_export(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len)
{
	struct rs_blob b;

	rs_blob_init(&b, RSHARE_KIND_MR, ctx);
	mr_fields(&b, &o->mr);
	*len = rs_blob_encode(&b, blob);
	return RSHARE_OK;
}

static int fmr_import(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o)
{
	struct rs_blob b;
	int s = rs_blob_decode(blob, len, &b);

	if (!s)
		s = rs_blob_check_target(&b, RSHARE_KIND_MR, ctx);
	if (s)
		return s;
	o->mr = (struct rs_mr_info){ .handle = b.handle, .serial = b.serial,
				     .pd_handle = b.pd_handle, .addr = b.addr,
				     .length = b.length, .lkey = b.lkey, .rkey = b.rkey,
				     .access = b.access };
	return ctx->ops->mr_import(ctx, &mr_fpd, &o->mr);
}

static void fmr_unimport(struct rs_ctx *ctx, union info *o)
{
	ctx->ops->mr_unimport(ctx, &o->mr);
}

static int fmr_free(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->mr_dereg(ctx, &o->mr);
}

static int dm_alloc(rshare_device *dev, void **o) { return rshare_dm_alloc(dev, DM_BYTES, (rshare_dm **)o); }
static int dm_export(const void *o, void *b, size_t c, size_t *l) { return rshare_dm_export(o, b, c, l); }
static int dm_import(rshare_device *d, const void *b, size_t l, void **o) { return rshare_dm_import(d, b, l, (rshare_dm **)o); }
static int dm_unimport(void *o) { return rshare_dm_unimport(o); }
static int dm_free(void *o) { return rshare_dm_free(o); }

static int fdm_alloc(struct rs_ctx *ctx, union info *o)
{
	o->dm = (struct rs_dm_info){ 0 };
	return ctx->ops->dm_alloc(ctx, DM_BYTES, &o->dm);
}

static int fdm_export(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len)
{
	struct rs_blob b;

	rs_blob_init(&b, RSHARE_KIND_DM, ctx);
	b.handle = o->dm.handle;
	b.serial = o->dm.serial;
	b.length = o->dm.length;
	*len = rs_blob_encode(&b, blob);
	return RSHARE_OK;
}

static int fdm_import(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o)
{
	struct rs_blob b;
	int s = rs_blob_decode(blob, len, &b);

	if (!s)
		s = rs_blob_check_target(&b, RSHARE_KIND_DM, ctx);
	if (s)
		return s;
	o->dm = (struct rs_dm_info){ .handle = b.handle, .serial = b.serial, .length = b.length };
	return ctx->ops->dm_import(ctx, &o->dm);
}

static void fdm_unimport(struct rs_ctx *ctx, union info *o)
{
	ctx->ops->dm_unimport(ctx, &o->dm);
}

static int fdm_free(struct rs_ctx *ctx, union info *o)
{
	return ctx->ops->dm_free(ctx, &o->dm);
}

/* Shared buffers: on the MRs' PD; the floor makes, checks and maps the
 * memfd with the library's own helpers (util/memfd.c) and calls the
 * provider's MR operations, as buf.c does, without the handle table. */
static int buf_alloc(rshare_device *dev, void **o)
{
	(void)dev;
	return rshare_buf_alloc(mr_pd, BUF_BYTES, RSHARE_ACCESS_LOCAL_WRITE, (rshare_buf **)o);
}

static int buf_export(const void *o, void *b, size_t c, size_t *l)
{
	int s = rshare_buf_export(o, b, c, l);

	return s ? s : rshare_buf_fd(o, &buf_fds[slot_of(b)]);
}

static int buf_import(rshare_device *d, const void *b, size_t l, void **o)
{
	(void)d;
	return rshare_buf_import(mr_pd, b, l, buf_fds[slot_of(b)], (rshare_buf **)o);
}

static int buf_unimport(void *o) { return rshare_buf_unimport(o); }
static int buf_free(void *o) { return rshare_buf_free(o); }

/* The memory of a direct buffer: the memfd fd (taken), its identity, mapped. */
static int fbuf_memory(struct fbuf *f, int fd)
{
	struct stat st;
	int s;

	f->fd = fd;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return RSHARE_E_IO;
	}
	f->dev = (uint64_t)st.st_dev;
	f->ino = (uint64_t)st.st_ino;
	s = rs_memfd_map(fd, BUF_BYTES, &f->addr);
	if (s)
		close(fd);
	return s;
}

static void fbuf_release(struct fbuf *f)
{
	munmap(f->addr, BUF_BYTES);
	close(f->fd);
}

static int fbuf_alloc(struct rs_ctx *ctx, union info *o)
{
	int fd, s = rs_memfd_new(BUF_BYTES, &fd);

	o->buf = (struct fbuf){ .mr = { 0 } };
	if (!s)
		s = fbuf_memory(&o->buf, fd);
	if (s)
		return s;
	s = ctx->ops->mr_reg(ctx, &mr_fpd, o->buf.addr, BUF_BYTES, RSHARE_ACCESS_LOCAL_WRITE,
			     &o->buf.mr);
	if (s)
		fbuf_release(&o->buf);
	return s;
}

static int fbuf_export(struct rs_ctx *ctx, const union info *o, uint8_t *blob, size_t *len)
{
	struct rs_blob b;

	rs_blob_init(&b, RSHARE_KIND_BUF, ctx);
	mr_fields(&b, &o->buf.mr);
	b.mem_dev = o->buf.dev;
	b.mem_ino = o->buf.ino;
	*len = rs_blob_encode(&b, blob);
	buf_fds[slot_of(blob)] = o->buf.fd;
	return RSHARE_OK;
}

static int fbuf_import(struct rs_ctx *ctx, const uint8_t *blob, size_t len, union info *o)
{
	int fd = buf_fds[slot_of(blob)], dup;
	struct rs_blob b;
	int s = rs_blob_decode(blob, len, &b);

	if (!s)
		s = rs_blob_check_target(&b, RSHARE_KIND_BUF, ctx);
	if (!s)
		s = rs_memfd_check(fd, b.length, b.mem_dev, b.mem_ino);
	if (s)
		return s;
	dup = rs_dup_cloexec(fd);
	if (dup < 0)
		return RSHARE_E_IO;
	s = fbuf_memory(&o->buf, dup);
	if (s)
		return s;
	o->buf.mr = (struct rs_mr_info){ .handle = b.handle, .serial = b.serial,
					 .pd_handle = b.pd_handle, .addr = b.addr,
					 .length = b.length, .lkey = b.lkey, .rkey = b.rkey,
					 .access = b.access };
	s = ctx->ops->mr_import(ctx, &mr_fpd, &o->buf.mr);
	if (s)
		fbuf_release(&o->buf);
	return s;
}

static void fbuf_unimport(struct rs_ctx *ctx, union info *o)
{
	ctx->ops->mr_unimport(ctx, &o->buf.mr);
	fbuf_release(&o->buf);
}

static int fbuf_free(struct rs_ctx *ctx, union info *o)
{
	int s = ctx->ops->mr_dereg(ctx, &o->buf.mr);

	if (!s)
		fbuf_release(&o->buf);
	return s;
}

static const struct kind kinds[] = {
	[OPK_PD] = { "pd", PD_BATCH, PD_ROUNDS, pd_alloc, pd_export, pd_import, pd_unimport,
		     pd_free, fpd_alloc, fpd_export, fpd_import, fpd_unimport, fpd_free, NULL, NULL },
	[OPK_VAR] = { "var", VAR_BATCH, VAR_ROUNDS, var_alloc, var_export, var_import,
		      var_unimport, var_free, fvar_alloc, fvar_export, fvar_import,
		      fvar_unimport, fvar_free, NULL, NULL },
	[OPK_MR] = { "mr", MR_BATCH, MR_ROUNDS, mr_alloc, mr_export, mr_import, mr_unimport,
		     mr_free, fmr_alloc, fmr_export, fmr_import, fmr_unimport, fmr_free,
		     mr_setup, mr_teardown },
	[OPK_DM] = { "dm", DM_BATCH, DM_ROUNDS, dm_alloc, dm_export, dm_import, dm_unimport,
		     dm_free, fdm_alloc, fdm_export, fdm_import, fdm_unimport, fdm_free, NULL, NULL },
	[OPK_BUF] = { "buf", BUF_BATCH, BUF_ROUNDS, buf_alloc, buf_export, buf_import,
		      buf_unimport, buf_free, fbuf_alloc, fbuf_export, fbuf_import, fbuf_unimport,
		      fbuf_free, mr_setup, mr_teardown },
};

/* Run stmt for i in [0, n), BENCH_GROUP calls per clock reading; the
 * samples go to series when timed. stmt sets `s` to stop on failure. */
#define PHASE(timed, series, n, stmt)                                          \
	for (int g_ = 0; g_ < (n) && !s; g_ += BENCH_GROUP) {                  \
		uint64_t t_ = bench_now_ns();                                  \
		for (int i = g_; i < g_ + BENCH_GROUP && !s; i++) {            \
			stmt;                                                  \
		}                                                              \
		if (timed)                                                     \
			series_add(&(series), t_, bench_now_ns(), BENCH_GROUP); \
	}

static size_t lens[MAX_BATCH];

/* One life cycle of a batch through the ABI, timing op into ser. */
static int abi_cycle(const struct kind *k, rshare_device *dev, enum op_which op,
		     struct series *ser)
{
	static void *objs[MAX_BATCH], *imps[MAX_BATCH];
	int s = 0, n = k->batch;
	bool pair = op == OP_IMPORT_UNIMPORT;

	PHASE(op == OP_ALLOC, *ser, n, s = k->alloc(dev, &objs[i]));
	PHASE(op == OP_EXPORT, *ser, n,
	      s = k->export_(objs[i], blobs[i], RSHARE_BLOB_MAX, &lens[i]));
	if (pair) {
		PHASE(true, *ser, n, {
			s = k->import(dev, blobs[i], lens[i], &imps[i]);
			if (!s)
				s = k->unimport(imps[i]);
		});
	} else {
		PHASE(op == OP_IMPORT, *ser, n, s = k->import(dev, blobs[i], lens[i], &imps[i]));
		PHASE(op == OP_UNIMPORT, *ser, n, s = k->unimport(imps[i]));
	}
	PHASE(op == OP_FREE, *ser, n, s = k->free_(objs[i]));
	return s ? bench_fail(k->name, s, false) : 0;
}

/* The same cycle directly through the provider table. */
static int floor_cycle(const struct kind *k, struct rs_ctx *ctx, enum op_which op,
		       struct series *ser)
{
	static union info objs[MAX_BATCH], imps[MAX_BATCH];
	int s = 0, n = k->batch;
	bool pair = op == OP_IMPORT_UNIMPORT;

	PHASE(op == OP_ALLOC, *ser, n, s = k->f_alloc(ctx, &objs[i]));
	PHASE(op == OP_EXPORT, *ser, n, s = k->f_export(ctx, &objs[i], blobs[i], &lens[i]));
	if (pair) {
		PHASE(true, *ser, n, {
			s = k->f_import(ctx, blobs[i], lens[i], &imps[i]);
			if (!s)
				k->f_unimport(ctx, &imps[i]);
		});
	} else {
		PHASE(op == OP_IMPORT, *ser, n, s = k->f_import(ctx, blobs[i], lens[i], &imps[i]));
		PHASE(op == OP_UNIMPORT, *ser, n, k->f_unimport(ctx, &imps[i]));
	}
	PHASE(op == OP_FREE, *ser, n, s = k->f_free(ctx, &objs[i]));
	return s ? bench_fail(k->name, s, true) : 0;
}

int bench_op(const struct bench_env *env, const void *arg, struct bench_result *r)
{
	const struct op_spec *spec = arg;
	const struct kind *k = &kinds[spec->kind];
	int rounds = k->rounds / env->scale + 1;
	size_t cap = (size_t)(rounds * k->batch / BENCH_GROUP + 1);
	struct series abi = series_new(cap), flo = series_new(cap);
	int s = k->setup ? k->setup(env->dev, env->ctx) : 0;
	bool set_up = !s;

	/* An untimed round of each first: caches, table pages, branch state. */
	for (int round = -1; round < rounds && !s; round++) {
		struct series *a = round < 0 ? &(struct series){ 0 } : &abi;
		struct series *f = round < 0 ? &(struct series){ 0 } : &flo;

		s = abi_cycle(k, env->dev, spec->op, a);
		if (!s)
			s = floor_cycle(k, env->ctx, spec->op, f);
	}
	if (set_up && k->teardown)
		k->teardown();
	if (!s) {
		r->med = series_pct(&abi, 0.5);
		r->p99 = series_pct(&abi, 0.99);
		r->floor_med = series_pct(&flo, 0.5);
		r->floor_p99 = series_pct(&flo, 0.99);
	}
	series_free(&abi);
	series_free(&flo);
	return s;
}
