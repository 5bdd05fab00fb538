/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Protection domains: the life cycle of rdma-core's PD sharing
 * (alloc, export, import, unimport, dealloc) over the provider table. */
#include "blob.h"
#include "internal.h"
#include "util/error.h"

static int pd_alloc(struct rs_obj *obj, const void *args)
{
	(void)args;
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

static int pd_to_blob(const struct rs_obj *obj, struct rs_blob *b)
{
	b->handle = obj->u.pd.handle;
	b->serial = obj->u.pd.serial;
	return RSHARE_OK;
}

static uint32_t pd_handle(const struct rs_obj *obj)
{
	return obj->u.pd.handle;
}

static void *pd_native(const struct rs_obj *obj)
{
	return obj->u.pd.prov;
}

static const struct rs_obj_ops pd_ops = {
	RS_OPS_KIND(PD),
	.alloc = pd_alloc, .import = pd_import, .unimport = pd_unimport,
	.destroy = pd_destroy, .to_blob = pd_to_blob, .handle = pd_handle,
	.native = pd_native,
};

int rshare_pd_alloc(rshare_device *dev, rshare_pd **out)
{
	RS_RETURN(rs_obj_alloc(dev, &pd_ops, NULL, (void **)out));
}

int rshare_pd_export(const rshare_pd *pd, void *buf, size_t cap, size_t *len)
{
	RS_RETURN(rs_obj_export(pd, &pd_ops, buf, cap, len));
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
	RS_RETURN(rs_obj_handle(pd, &pd_ops, handle));
}

int rshare_pd_native(const rshare_pd *pd, void **ibv_pd)
{
	RS_RETURN(rs_obj_native(pd, &pd_ops, ibv_pd));
}
