/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Memory regions: registered on a PD, shared as rdma-core's
 * ibv_import_mr does (an MR is imported into the PD it was registered on,
 * imported first). An MR lives in its PD: the PD cannot be released in
 * this process while one of its MRs is live here (object.c). */
#include <inttypes.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"

#define ACCESS_KNOWN                                                             \
	((uint32_t)(RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_WRITE |      \
		    RSHARE_ACCESS_REMOTE_READ | RSHARE_ACCESS_REMOTE_ATOMIC))

struct mr_args {
	void *addr;
	uint64_t length;
	uint32_t access;
};

static int mr_alloc(struct rs_obj *obj, const void *args)
{
	const struct mr_args *a = args;
	struct rs_ctx *ctx = &obj->dev->ctx;

	obj->u.mr = (struct rs_mr_info){ 0 };
	if (!ctx->ops->mr_reg)
		return rs_unsupported(ctx, "register memory regions");
	return ctx->ops->mr_reg(ctx, &obj->parent->u.pd, a->addr, a->length, a->access,
				&obj->u.mr);
}

static int mr_import(struct rs_obj *obj, const struct rs_blob *b)
{
	struct rs_ctx *ctx = &obj->dev->ctx;
	const struct rs_pd_info *pd = &obj->parent->u.pd;

	obj->u.mr = (struct rs_mr_info){
		.handle = b->handle, .serial = b->serial, .pd_handle = b->pd_handle,
		.addr = b->addr, .length = b->length, .lkey = b->lkey, .rkey = b->rkey,
		.access = b->access,
	};
	/* The blob names its PD; import only into that PD's object. */
	if (b->pd_handle != pd->handle || (b->pd_serial && pd->serial && b->pd_serial != pd->serial))
		return rs_fail(RSHARE_E_DEVICE_MISMATCH, 0,
			       "the MR is registered on PD handle %" PRIu32 " (serial %" PRIu64
			       "), this PD is handle %" PRIu32 " (serial %" PRIu64 "): import "
			       "the MR into its own PD, imported from that PD's blob",
			       b->pd_handle, b->pd_serial, pd->handle, pd->serial);
	if (b->access & ~ACCESS_KNOWN)
		return rs_fail(RSHARE_E_BLOB_CORRUPT, 0, "MR blob has unknown access flags 0x%x",
			       b->access & ~ACCESS_KNOWN);
	if (!ctx->ops->mr_import)
		return rs_unsupported(ctx, "import memory regions");
	return ctx->ops->mr_import(ctx, &obj->parent->u.pd, &obj->u.mr);
}

static void mr_unimport(struct rs_obj *obj)
{
	obj->dev->ctx.ops->mr_unimport(&obj->dev->ctx, &obj->u.mr);
}

static int mr_destroy(struct rs_obj *obj)
{
	return obj->dev->ctx.ops->mr_dereg(&obj->dev->ctx, &obj->u.mr);
}

static int mr_to_blob(const struct rs_obj *obj, struct rs_blob *b)
{
	const struct rs_mr_info *mr = &obj->u.mr;

	b->handle = mr->handle;
	b->serial = mr->serial;
	b->pd_handle = obj->parent->u.pd.handle;
	b->pd_serial = obj->parent->u.pd.serial;
	b->addr = mr->addr;
	b->length = mr->length;
	b->lkey = mr->lkey;
	b->rkey = mr->rkey;
	b->access = mr->access;
	return RSHARE_OK;
}

static uint32_t mr_handle(const struct rs_obj *obj)
{
	return obj->u.mr.handle;
}

static void *mr_native(const struct rs_obj *obj)
{
	return obj->u.mr.prov;
}

static const struct rs_obj_ops mr_ops = {
	RS_OPS_KIND(MR),
	.alloc = mr_alloc, .import = mr_import, .unimport = mr_unimport,
	.destroy = mr_destroy, .to_blob = mr_to_blob, .handle = mr_handle,
	.native = mr_native,
};

static int reg(void *pd, void *addr, size_t length, uint32_t access, void **out)
{
	struct mr_args a = { addr, length, access };

	if (!addr)
		return rs_fail(RSHARE_E_INVAL, 0, "addr is NULL");
	if (length == 0)
		return rs_fail(RSHARE_E_INVAL, 0, "length is 0");
	if ((uintptr_t)addr + length < (uintptr_t)addr)
		return rs_fail(RSHARE_E_INVAL, 0, "range of %zu bytes at %p wraps around",
			       length, addr);
	if (access & ~ACCESS_KNOWN)
		return rs_fail(RSHARE_E_INVAL, 0, "unknown access flags 0x%x",
			       access & ~ACCESS_KNOWN);
	return rs_obj_alloc(pd, &mr_ops, &a, out);
}

int rshare_mr_reg(rshare_pd *pd, void *addr, size_t length, uint32_t access, rshare_mr **out)
{
	RS_RETURN(reg(pd, addr, length, access, (void **)out));
}

/* Mark a new MR as its buffer's, or release it again if that fails. */
static int hold(int status, void **mr, struct rs_obj **obj)
{
	if (!status && (status = rs_obj_hold(*mr, &mr_ops, obj)))
		rs_obj_release(*mr, &mr_ops, false);
	return status;
}

int rs_mr_reg_held(void *pd, void *addr, uint64_t length, uint32_t access, void **mr,
		   struct rs_obj **obj)
{
	if (length > SIZE_MAX)
		return rs_fail(RSHARE_E_INVAL, 0, "length does not fit size_t");
	return hold(reg(pd, addr, (size_t)length, access, mr), mr, obj);
}

int rs_mr_import_held(void *pd, const struct rs_blob *b, void **mr, struct rs_obj **obj)
{
	struct rs_blob m = *b;

	m.kind = RSHARE_KIND_MR; /* a buffer's blob carries its MR's fields */
	return hold(rs_obj_import_decoded(pd, &mr_ops, &m, mr), mr, obj);
}

int rs_mr_release_held(void *mr, bool destroy)
{
	return rs_obj_release_held(mr, &mr_ops, destroy);
}

int rshare_mr_export(const rshare_mr *mr, void *buf, size_t cap, size_t *len)
{
	RS_RETURN(rs_obj_export(mr, &mr_ops, buf, cap, len));
}

int rshare_mr_import(rshare_pd *pd, const void *blob, size_t len, rshare_mr **out)
{
	RS_RETURN(rs_obj_import(pd, &mr_ops, blob, len, (void **)out));
}

int rshare_mr_unimport(rshare_mr *mr)
{
	RS_RETURN(rs_obj_release(mr, &mr_ops, false));
}

int rshare_mr_dereg(rshare_mr *mr)
{
	RS_RETURN(rs_obj_release(mr, &mr_ops, true));
}

int rshare_mr_attrs(const rshare_mr *mr, uint64_t *addr, uint64_t *length, uint32_t *lkey,
		    uint32_t *rkey, uint32_t *access)
{
	const struct rs_mr_info *info;
	struct rs_slot *slot;
	int status = rs_pin(mr, RS_OBJ_MR, &slot);

	if (status)
		RS_RETURN(status);
	info = &slot->u.obj.u.mr;
	if (addr)
		*addr = info->addr;
	if (length)
		*length = info->length;
	if (lkey)
		*lkey = info->lkey;
	if (rkey)
		*rkey = info->rkey;
	if (access)
		*access = info->access;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_mr_handle(const rshare_mr *mr, uint32_t *handle)
{
	RS_RETURN(rs_obj_handle(mr, &mr_ops, handle));
}

int rshare_mr_native(const rshare_mr *mr, void **ibv_mr)
{
	RS_RETURN(rs_obj_native(mr, &mr_ops, ibv_mr));
}
