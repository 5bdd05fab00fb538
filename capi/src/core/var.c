/* mlx5 VARs: the PD life cycle plus attributes and the page mapping. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"

static int publish_var(struct rs_slot *dev_slot, struct rs_var_info *info,
		       bool imported, rshare_var **out)
{
	struct rs_device *dev = dev_slot->u.dev;
	struct rs_slot *slot;
	int status = rs_slot_reserve(&slot);

	if (status) {
		if (imported)
			dev->ctx.ops->var_unimport(&dev->ctx, info);
		else
			dev->ctx.ops->var_free(&dev->ctx, info);
		return status;
	}
	slot->u.var.dev = dev;
	slot->u.var.info = *info;
	slot->u.var.imported = imported;
	atomic_init(&slot->u.var.addr, NULL);
	atomic_fetch_add(&dev->children, 1);
	*out = rs_slot_publish(slot, RS_OBJ_VAR);
	return RSHARE_OK;
}

int rshare_var_alloc(rshare_device *dev, uint32_t flags, rshare_var **out)
{
	struct rs_var_info info = { 0 };
	struct rs_slot *ds;
	int status;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	if (flags & ~(uint32_t)RSHARE_VAR_FLAG_TLP)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "unknown VAR flags 0x%x",
				  flags & ~(uint32_t)RSHARE_VAR_FLAG_TLP));
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		RS_RETURN(status);
	status = ds->u.dev->ctx.ops->var_alloc(&ds->u.dev->ctx, flags, &info);
	if (!status)
		status = publish_var(ds, &info, false, out);
	rs_unpin(ds);
	RS_RETURN(status);
}

int rshare_var_export(const rshare_var *var, void *buf, size_t cap, size_t *len)
{
	uint8_t raw[RSHARE_BLOB_MAX];
	struct rs_var_info info;
	struct rs_var_obj *obj;
	struct rs_slot *slot;
	struct rs_blob b;
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	status = rs_pin(var, RS_OBJ_VAR, &slot);
	if (status)
		RS_RETURN(status);
	obj = &slot->u.var;
	info = obj->info;
	status = obj->dev->ctx.ops->var_export(&obj->dev->ctx, &info);
	if (!status)
		rs_blob_from_var(&b, &obj->dev->ctx, &info);
	rs_unpin(slot);
	if (status)
		RS_RETURN(status);
	RS_RETURN(rs_copy_out(raw, rs_blob_encode(&b, raw), buf, cap, len));
}

int rshare_var_import(rshare_device *dev, const void *blob, size_t len, rshare_var **out)
{
	struct rs_var_info info;
	struct rs_slot *ds;
	struct rs_blob b;
	int status;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	status = rs_pin(dev, RS_OBJ_DEVICE, &ds);
	if (status)
		RS_RETURN(status);
	status = rs_blob_decode(blob, len, &b);
	if (!status)
		status = rs_blob_check_target(&b, RSHARE_KIND_VAR, &ds->u.dev->ctx);
	if (!status) {
		rs_var_from_blob(&info, &b);
		status = ds->u.dev->ctx.ops->var_import(&ds->u.dev->ctx, &info);
	}
	if (!status)
		status = publish_var(ds, &info, true, out);
	rs_unpin(ds);
	RS_RETURN(status);
}

static void unmap_page(struct rs_var_obj *obj)
{
	void *addr = atomic_exchange(&obj->addr, NULL);

	if (addr)
		munmap(addr, obj->info.length);
}

int rshare_var_unimport(rshare_var *var)
{
	struct rs_var_obj *obj;
	struct rs_slot *slot;
	int status = rs_retire_begin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.var;
	unmap_page(obj);
	obj->dev->ctx.ops->var_unimport(&obj->dev->ctx, &obj->info);
	atomic_fetch_sub(&obj->dev->children, 1);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

int rshare_var_free(rshare_var *var)
{
	struct rs_var_obj *obj;
	struct rs_slot *slot;
	int status = rs_retire_begin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	obj = &slot->u.var;
	status = obj->dev->ctx.ops->var_free(&obj->dev->ctx, &obj->info);
	if (status) {
		rs_retire_cancel(slot);
		RS_RETURN(status);
	}
	unmap_page(obj);
	atomic_fetch_sub(&obj->dev->children, 1);
	rs_retire_commit(slot);
	return RSHARE_OK;
}

int rshare_var_attrs(const rshare_var *var, uint32_t *page_id, uint32_t *length,
		     uint64_t *mmap_off)
{
	struct rs_slot *slot;
	int status = rs_pin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	if (page_id)
		*page_id = slot->u.var.info.page_id;
	if (length)
		*length = slot->u.var.info.length;
	if (mmap_off)
		*mmap_off = slot->u.var.info.mmap_off;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_var_map(rshare_var *var, void **addr)
{
	struct rs_var_obj *obj;
	struct rs_slot *slot;
	void *mine, *cur;
	int status;

	if (!addr)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "addr is NULL"));
	status = rs_pin(var, RS_OBJ_VAR, &slot);
	if (status)
		RS_RETURN(status);
	obj = &slot->u.var;
	cur = atomic_load(&obj->addr);
	if (!cur) {
		mine = mmap(NULL, obj->info.length, PROT_READ | PROT_WRITE, MAP_SHARED,
			    obj->dev->ctx.fd, (off_t)obj->info.mmap_off);
		if (mine == MAP_FAILED) {
			int err = errno;
			rs_unpin(slot);
			RS_RETURN(rs_fail(RSHARE_E_IO, err,
					  "mmap of VAR page %u (%u bytes at offset 0x%llx) failed",
					  obj->info.page_id, obj->info.length,
					  (unsigned long long)obj->info.mmap_off));
		}
		/* Two threads may map at once: one mapping wins, the other goes. */
		if (atomic_compare_exchange_strong(&obj->addr, &cur, mine))
			cur = mine;
		else
			munmap(mine, obj->info.length);
	}
	*addr = cur;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_var_unmap(rshare_var *var)
{
	struct rs_slot *slot;
	int status = rs_pin(var, RS_OBJ_VAR, &slot);

	if (status)
		RS_RETURN(status);
	unmap_page(&slot->u.var);
	rs_unpin(slot);
	return RSHARE_OK;
}
