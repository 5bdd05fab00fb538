/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared buffers: memory in a sealed memfd plus one MR over the allocating
 * process's mapping of it, on a PD. The memory is shared by passing the
 * memfd (every process maps the same pages); the MR is registered once, by
 * the allocator, and imported by the others as any MR (hardware:
 * ibv_reg_mr, then ibv_import_mr), so every process posts work with the
 * same keys and the allocator's address (rshare_mr_attrs).
 *
 * The MR belongs to its buffer: it is marked held (object.c), so only the
 * buffer's unimport or free releases it. Free deregisters it for everyone;
 * the memory lives until the last process unmaps it and closes its fd
 * (the kernel's rule for a memfd).
 *
 * An importer trusts neither the fd nor the blob: the fd must be a memfd
 * sealed against resizing (so no mapping can lose its end: no SIGBUS),
 * writable, of the blob's size, and the very file the blob names (st_dev,
 * st_ino). A peer that sends a blob and an fd that agree with each other
 * but not with the registered memory only misleads itself: its own MR
 * import then describes memory it does not see.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "blob.h"
#include "internal.h"
#include "util/error.h"
#include "util/fdutil.h"
#include "util/memfd.h"

/* What rs_obj_alloc hands to buf_make: an allocation (blob NULL) or an
 * import of blob with fd. */
struct buf_args {
	void *pd; /* the public PD handle, for the MR */
	uint64_t length;
	uint32_t access;
	const void *blob;
	size_t blob_len;
	int fd;
};

/* The memory side of a buffer: the memfd (made, or a duplicate of the one
 * given, checked against b) and its mapping. */
static int make_memory(struct rs_buf_info *buf, const struct buf_args *a,
		       const struct rs_blob *b)
{
	struct stat st;
	int status;

	if (b) {
		status = rs_memfd_check(a->fd, b->length, b->mem_dev, b->mem_ino);
		if (status)
			return status;
		buf->fd = rs_dup_cloexec(a->fd);
		if (buf->fd < 0)
			return rs_fail(RSHARE_E_IO, errno, "cannot duplicate fd %d", a->fd);
	} else if ((status = rs_memfd_new(a->length, &buf->fd))) {
		return status;
	}
	if (fstat(buf->fd, &st) != 0) {
		status = rs_fail(RSHARE_E_IO, errno, "fstat of the buffer's memfd failed");
	} else {
		buf->mem_dev = (uint64_t)st.st_dev;
		buf->mem_ino = (uint64_t)st.st_ino;
		status = rs_memfd_map(buf->fd, buf->length, &buf->addr);
	}
	if (status)
		rs_close_quietly(buf->fd);
	return status;
}

static void unmap(struct rs_obj *obj)
{
	munmap(obj->u.buf.addr, (size_t)obj->u.buf.length);
	rs_close_quietly(obj->u.buf.fd);
	obj->u.buf.addr = NULL;
	obj->u.buf.fd = -1;
}

/* Allocate (a->blob NULL) or import. obj->imported is set here: both go
 * through rs_obj_alloc, as an import needs the fd besides the blob. */
static int buf_make(struct rs_obj *obj, const void *args)
{
	const struct buf_args *a = args;
	struct rs_buf_info *buf = &obj->u.buf;
	struct rs_blob b;
	int status;

	*buf = (struct rs_buf_info){ .fd = -1, .length = a->length };
	obj->imported = a->blob != NULL;
	if (a->blob) {
		status = rs_blob_decode(a->blob, a->blob_len, &b);
		if (!status)
			status = rs_blob_check_target(&b, RSHARE_KIND_BUF, &obj->dev->ctx);
		if (status)
			return status;
		buf->length = b.length;
	}
	status = make_memory(buf, a, a->blob ? &b : NULL);
	if (status)
		return status;
	if (a->blob)
		status = rs_mr_import_held(a->pd, &b, &buf->mr, &buf->mr_obj);
	else
		status = rs_mr_reg_held(a->pd, buf->addr, buf->length, a->access, &buf->mr,
					&buf->mr_obj);
	if (status)
		unmap(obj);
	return status;
}

static int buf_import_op(struct rs_obj *obj, const struct rs_blob *b)
{
	(void)obj;
	(void)b;
	return rs_fail(RSHARE_E_INVAL, 0, "a buffer is imported with its fd");
}

static void buf_unimport(struct rs_obj *obj)
{
	rs_mr_release_held(obj->u.buf.mr, false);
}

static int buf_destroy(struct rs_obj *obj)
{
	return rs_mr_release_held(obj->u.buf.mr, true);
}

static int buf_to_blob(const struct rs_obj *obj, struct rs_blob *b)
{
	const struct rs_obj *mr = obj->u.buf.mr_obj;
	int status = mr->ops->to_blob(mr, b); /* the MR's fields, then the memory's */

	b->mem_dev = obj->u.buf.mem_dev;
	b->mem_ino = obj->u.buf.mem_ino;
	return status;
}

static uint32_t buf_handle(const struct rs_obj *obj)
{
	return obj->u.buf.mr_obj->ops->handle(obj->u.buf.mr_obj);
}

static const struct rs_obj_ops buf_ops = {
	.slot_kind = RS_OBJ_BUF, .blob_kind = RSHARE_KIND_BUF, .parent_kind = RS_OBJ_PD,
	.alloc = buf_make, .import = buf_import_op, .unimport = buf_unimport,
	.destroy = buf_destroy, .unmap = unmap, .to_blob = buf_to_blob, .handle = buf_handle,
	/* no .native: the native object is the MR's (rshare_buf_mr) */
};

int rshare_buf_alloc(rshare_pd *pd, size_t len, uint32_t access, rshare_buf **out)
{
	struct buf_args a = { .pd = pd, .length = len, .access = access, .fd = -1 };

	if (len == 0)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is 0"));
	RS_RETURN(rs_obj_alloc(pd, &buf_ops, &a, (void **)out));
}

int rshare_buf_export(const rshare_buf *buf, void *blob, size_t cap, size_t *len)
{
	RS_RETURN(rs_obj_export(buf, &buf_ops, blob, cap, len));
}

int rshare_buf_import(rshare_pd *pd, const void *blob, size_t len, int fd, rshare_buf **out)
{
	struct buf_args a = { .pd = pd, .blob = blob, .blob_len = len, .fd = fd };

	if (!blob)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "blob is NULL"));
	RS_RETURN(rs_obj_alloc(pd, &buf_ops, &a, (void **)out));
}

int rshare_buf_unimport(rshare_buf *buf)
{
	RS_RETURN(rs_obj_release(buf, &buf_ops, false));
}

int rshare_buf_free(rshare_buf *buf)
{
	RS_RETURN(rs_obj_release(buf, &buf_ops, true));
}

/* Pin buf and hand out its state; the caller unpins. */
static int pin(const rshare_buf *buf, const void *out, struct rs_slot **slot)
{
	if (!out)
		return rs_fail(RSHARE_E_INVAL, 0, "out pointer is NULL");
	return rs_pin(buf, RS_OBJ_BUF, slot);
}

int rshare_buf_fd(const rshare_buf *buf, int *fd)
{
	struct rs_slot *slot;
	int status = pin(buf, fd, &slot);

	if (status)
		RS_RETURN(status);
	*fd = slot->u.obj.u.buf.fd;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_buf_ptr(const rshare_buf *buf, void **ptr, size_t *len)
{
	struct rs_slot *slot;
	int status = pin(buf, ptr, &slot);

	if (status)
		RS_RETURN(status);
	*ptr = slot->u.obj.u.buf.addr;
	if (len)
		*len = (size_t)slot->u.obj.u.buf.length;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_buf_mr(const rshare_buf *buf, rshare_mr **mr)
{
	struct rs_slot *slot;
	int status = pin(buf, mr, &slot);

	if (status)
		RS_RETURN(status);
	*mr = slot->u.obj.u.buf.mr;
	rs_unpin(slot);
	return RSHARE_OK;
}
