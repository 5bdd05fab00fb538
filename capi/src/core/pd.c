/* Protection domains: the life cycle of rdma-core's PD sharing
 * (alloc, export, import, unimport, dealloc) over the provider table. */
#include "blob.h"
#include "internal.h"
#include "util/error.h"

static int pd_alloc(struct rs_obj *obj, uint32_t flags)
{
	(void)flags;
	obj->u.pd = (struct rs_pd_info){ 0 };
	return obj->dev->ctx.ops->pd_alloc(&obj->dev->ctx, &obj->u.pd);
}

static int pd_import(struct rs_obj *obj, const struct rs_blob *b)
{
	obj->u.pd = (struct rs_pd_info){ .handle = b->handle, .serial = b->serial };
	return obj->dev->ctx.ops->pd_import(&obj->dev->ctx, &obj->u.pd);
}

static void pd_unimport(struct rs_obj *obj)
{
	obj->dev->ctx.ops->pd_unimport(&obj->dev->ctx, &obj->u.pd);
}

static int pd_destroy(struct rs_obj *obj)
{
	return obj->dev->ctx.ops->pd_dealloc(&obj->dev->ctx, &obj->u.pd);
}

static const struct rs_obj_ops pd_ops = {
	.slot_kind = RS_OBJ_PD, .blob_kind = RSHARE_KIND_PD, .alloc = pd_alloc,
	.import = pd_import, .unimport = pd_unimport, .destroy = pd_destroy,
};

int rshare_pd_alloc(rshare_device *dev, rshare_pd **out)
{
	RS_RETURN(rs_obj_alloc(dev, &pd_ops, 0, (void **)out));
}

int rshare_pd_export(const rshare_pd *pd, void *buf, size_t cap, size_t *len)
{
	uint8_t raw[RSHARE_BLOB_MAX];
	struct rs_blob b;
	struct rs_slot *slot;
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	status = rs_pin(pd, RS_OBJ_PD, &slot);
	if (status)
		RS_RETURN(status);
	rs_blob_init(&b, RSHARE_KIND_PD, &slot->u.obj.dev->ctx);
	b.handle = slot->u.obj.u.pd.handle;
	b.serial = slot->u.obj.u.pd.serial;
	rs_unpin(slot);
	RS_RETURN(rs_copy_out(raw, rs_blob_encode(&b, raw), buf, cap, len));
}

int rshare_pd_import(rshare_device *dev, const void *blob, size_t len, rshare_pd **out)
{
	RS_RETURN(rs_obj_import(dev, &pd_ops, blob, len, (void **)out));
}

int rshare_pd_unimport(rshare_pd *pd)
{
	RS_RETURN(rs_obj_release(pd, &pd_ops, false));
}

int rshare_pd_free(rshare_pd *pd)
{
	RS_RETURN(rs_obj_release(pd, &pd_ops, true));
}

int rshare_pd_handle(const rshare_pd *pd, uint32_t *handle)
{
	struct rs_slot *slot;
	int status;

	if (!handle)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "handle is NULL"));
	status = rs_pin(pd, RS_OBJ_PD, &slot);
	if (status)
		RS_RETURN(status);
	*handle = slot->u.obj.u.pd.handle;
	rs_unpin(slot);
	return RSHARE_OK;
}
