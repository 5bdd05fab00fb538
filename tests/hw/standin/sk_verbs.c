/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Stand-in libibverbs.so.1: the libibverbs calls rshare uses, with
 * rdma-core's signatures, symbol versions, return conventions and errno
 * values, over the ufile model of sk_kernel.c. Two devices:
 *   mlx5_sim0  an mlx5 device (VARs through the stand-in libmlx5)
 *   rxe_sim1   a device of another provider (no VARs)
 *
 * What upstream does and the stand-in models is listed, with the upstream
 * function, in FIDELITY.md next to this file.
 *
 * Test hook: STANDIN_FAIL_IMPORT in the environment makes
 * ibv_import_device() fail after its provider adopted the fd, which then
 * closes it, as rdma-core does when a provider's import step fails (see
 * fail_adopted() for the value "squat").
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sk_kernel.h"

#define SK_DEVICE(n, uverbs, g, is_mlx5)                                   \
	{                                                                  \
		.ibdev = {                                                 \
			.node_type = IBV_NODE_CA,                          \
			.transport_type = IBV_TRANSPORT_IB,                \
			.name = n,                                         \
			.dev_name = uverbs,                                \
			.dev_path = "/sys/class/infiniband_verbs/" uverbs, \
			.ibdev_path = "/sys/class/infiniband/" n,          \
		},                                                         \
		.guid = g, .mlx5 = is_mlx5,                                \
	}

static struct sk_device devices[] = {
	SK_DEVICE("mlx5_sim0", "uverbs0", 0x0002c90300a1b2c0ULL, true),
	SK_DEVICE("rxe_sim1", "uverbs1", 0x0002c90300a1b2c1ULL, false),
};
#define NDEVICES (sizeof(devices) / sizeof(devices[0]))

bool sk_device_known(struct ibv_device *dev)
{
	for (size_t i = 0; i < NDEVICES; i++)
		if (dev == &devices[i].ibdev)
			return true;
	return false;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(NDEVICES + 1, sizeof(*list));

	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < NDEVICES; i++)
		list[i] = &devices[i].ibdev;
	if (num_devices)
		*num_devices = (int)NDEVICES;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	/* rdma-core returns the node GUID in network byte order. */
	return htobe64(((struct sk_device *)device)->guid);
}

static struct sk_context *sk_of(struct ibv_context *context)
{
	return (struct sk_context *)((char *)context -
				     offsetof(struct sk_context, vctx.context));
}

/* The provider's verbs_context ops (reached through verbs.h's inlines). */
static struct ibv_dm *sk_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *attr);
static int sk_free_dm(struct ibv_dm *dm);
static int sk_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size);

/* mlx5_sim0's max_dm_size (STANDIN_MAX_DM_SIZE, else all of a ufile's
 * device memory); rxe has none. */
static uint64_t max_dm_size(const struct sk_device *dev)
{
	const char *env = sk_env(SK_ENV_MAX_DM_SIZE);

	if (!dev->mlx5)
		return 0;
	return env ? strtoull(env, NULL, 0) : SK_MAX_DM_SIZE;
}

/* mlx5_set_context() allocates the context's singleton non-cached UAR on
 * every open and import (upstream providers/mlx5/verbs.c,
 * mlx5_set_singleton_nc_uar): a uobject of the ufile, taking the lowest
 * free handle like any other. A failure leaves the context without it, as
 * upstream. mlx5_free_context() destroys it again (clean_dyn_uars). */
static void uar_alloc(struct sk_context *ctx)
{
	struct sk_obj_info info = { 0 };

	if (ctx->dev->mlx5 &&
	    sk_obj_create(&ctx->vctx.context, SK_UAR, &info, &ctx->uar) == 0)
		ctx->has_uar = true;
}

/* The query_device_ex op: the attributes rshare reads (max_dm_size, as
 * mlx5_query_device_ex fills it from the device's MEMIC capability). */
static int sk_query_device_ex(struct ibv_context *context,
			      const struct ibv_query_device_ex_input *input,
			      struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex all = { 0 };

	if (input && input->comp_mask)
		return EINVAL;
	all.orig_attr.max_pd = SK_MAX_OBJS;
	all.orig_attr.max_mr = SK_MAX_OBJS;
	all.orig_attr.node_guid = htobe64(sk_of(context)->dev->guid);
	all.max_dm_size = max_dm_size(sk_of(context)->dev);
	memcpy(attr, &all, attr_size < sizeof(all) ? attr_size : sizeof(all));
	return 0;
}

/* Wrap a ufile fd in a context; on failure the fd is closed (the context
 * had adopted it, as rdma-core's provider alloc/import steps do). */
static struct ibv_context *new_context(struct sk_device *dev, int fd,
				       struct sk_ufile *uf)
{
	struct sk_context *ctx = calloc(1, sizeof(*ctx));

	if (!uf && !(uf = sk_ufile_map(fd))) {
		int err = errno;
		free(ctx);
		close(fd);
		errno = err;
		return NULL;
	}
	if (!ctx) {
		sk_ufile_unmap(uf);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_device_ex = sk_query_device_ex;
	/* Device memory: mlx5 only (rxe has no alloc_dm op). */
	if (dev->mlx5) {
		ctx->vctx.alloc_dm = sk_alloc_dm;
		ctx->vctx.free_dm = sk_free_dm;
	}
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.device = &dev->ibdev;
	ctx->vctx.context.cmd_fd = fd;
	ctx->vctx.context.async_fd = -1;
	ctx->vctx.context.num_comp_vectors = 1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->dev = dev;
	ctx->uf = uf;
	uar_alloc(ctx);
	return &ctx->vctx.context;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct sk_ufile *uf;
	int fd, err;

	if (!sk_device_known(device)) {
		errno = ENODEV;
		return NULL;
	}
	err = sk_ufile_create((uint32_t)((struct sk_device *)device - devices), &fd, &uf);
	if (err) {
		errno = err;
		return NULL;
	}
	return new_context((struct sk_device *)device, fd, uf);
}

/* The STANDIN_FAIL_IMPORT hook: the provider step failed after adopting
 * cmd_fd, so it is closed. With the value "squat" another descriptor (of
 * /dev/null) then takes the same number, as another thread's open() could,
 * with "reopen" another open of the same file (same inode, another open
 * file description); its number is left in STANDIN_SQUATTER_FD for the
 * test, which must find it still open: closing "the fd" again after the
 * failure would close it. */
static void fail_adopted(int cmd_fd)
{
	const char *how = sk_env(SK_ENV_FAIL_IMPORT);
	char num[16], self[64];
	int s;

	/* "reopen": the squatter is another open of the same file (a new open
	 * file description of the same inode), as another open() of the same
	 * uverbs device would be. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", cmd_fd);
	s = strcmp(how, "reopen") == 0 ? open(self, O_RDWR | O_CLOEXEC) : -1;
	close(cmd_fd);
	if (strcmp(how, "squat") == 0)
		s = open("/dev/null", O_RDONLY | O_CLOEXEC);
	else if (strcmp(how, "reopen") != 0)
		return;
	if (s >= 0 && s != cmd_fd) {
		dup3(s, cmd_fd, O_CLOEXEC);
		close(s);
	}
	snprintf(num, sizeof(num), "%d", cmd_fd);
	setenv("STANDIN_SQUATTER_FD", num, 1);
}

struct ibv_context *ibv_import_device(int cmd_fd)
{
	uint32_t index;
	int err = sk_ufile_probe(cmd_fd, &index);

	/* Refusals before any provider saw the fd leave it with the caller. */
	if (err) {
		errno = err;
		return NULL;
	}
	if (index >= NDEVICES) {
		errno = ENODEV;
		return NULL;
	}
	/* Only mlx5 implements import_context; for every other provider
	 * libibverbs answers EOPNOTSUPP before any provider saw the fd
	 * (upstream libibverbs/device.c, ibv_import_device). */
	if (!devices[index].mlx5) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* The char device of a removed device is gone: rdma-core finds no
	 * device for its st_rdev. */
	if (sk_check_alive()) {
		errno = ENODEV;
		return NULL;
	}
	/* From here on the context owns cmd_fd, failure or not. */
	if (sk_env(SK_ENV_FAIL_IMPORT)) {
		fail_adopted(cmd_fd);
		errno = EIO;
		return NULL;
	}
	return new_context(&devices[index], cmd_fd, NULL);
}

int ibv_close_device(struct ibv_context *context)
{
	struct sk_context *ctx = sk_of(context);

	if (ctx->has_uar)
		sk_obj_destroy(context, SK_UAR, ctx->uar);
	sk_ufile_unmap(ctx->uf);
	close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

uint32_t sk_device_index(struct ibv_device *dev)
{
	return (uint32_t)((struct sk_device *)dev - devices);
}

/* ---- PDs ------------------------------------------------------------------ */

static struct ibv_pd *new_pd(struct ibv_context *context, uint32_t handle, uint32_t pdn)
{
	struct sk_pd *pd = malloc(sizeof(*pd));

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->pd.context = context;
	pd->pd.handle = handle;
	pd->pdn = pdn;
	return &pd->pd;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct sk_obj_info info = { 0 };
	uint32_t handle;
	struct ibv_pd *pd;
	/* Test hook: STANDIN_FAIL_ALLOC_PD=<errno> makes the kernel refuse, as
	 * it does with EPERM, EACCES, EOPNOTSUPP, EIO... */
	const char *inject = sk_env(SK_ENV_FAIL_ALLOC_PD);
	int err = inject ? atoi(inject) : sk_obj_create(context, SK_PD, &info, &handle);

	if (err) {
		errno = err;
		return NULL;
	}
	pd = new_pd(context, handle, info.pdn);
	if (!pd)
		sk_obj_destroy(context, SK_PD, handle);
	return pd;
}

/* rdma-core's destroy rule (libibverbs/cmd_write.h, verbs_is_destroy_err):
 * EIO means the device was disassociated, and it is turned into success
 * only when RDMAV_ALLOW_DISASSOC_DESTROY is set (libibverbs/init.c,
 * ibverbs_init; util.c check_env: set and not "0"). Otherwise the caller
 * sees EIO and keeps the object. */
static int destroy_status(int err)
{
	const char *allow = sk_env(SK_ENV_ALLOW_DISASSOC_DESTROY);

	return err == EIO && allow && strcmp(allow, "0") != 0 ? 0 : err;
}

/* Every import op of a provider other than mlx5 is libibverbs' dummy op
 * (upstream libibverbs/dummy_ops.c: import_pd, import_mr, import_dm),
 * answering EOPNOTSUPP. */
static bool dummy_import(struct ibv_context *context)
{
	if (sk_of(context)->dev->mlx5)
		return false;
	errno = EOPNOTSUPP;
	return true;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	/* Returns an errno value; on failure the local object stays, so the
	 * caller can still unimport it (rdma-core's contract). EBUSY while it
	 * has MRs. */
	int err = destroy_status(sk_obj_destroy(pd->context, SK_PD, pd->handle));

	if (err)
		return err;
	free(pd);
	return 0;
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	/* The provider asks the kernel (mlx5: MLX5_IB_METHOD_PD_QUERY), which
	 * answers with the PD number. */
	struct sk_obj_info info;
	int err;

	if (dummy_import(context))
		return NULL;
	sk_import_pause();
	err = sk_obj_lookup(context, SK_PD, pd_handle, &info);
	if (err) {
		errno = err;
		return NULL;
	}
	return new_pd(context, pd_handle, info.pdn);
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
	free(pd); /* local only */
}

/* ---- MRs ------------------------------------------------------------------ */

static struct ibv_mr *new_mr(struct ibv_pd *pd, uint32_t handle, const struct sk_obj_info *info,
			     void *addr)
{
	struct ibv_mr *mr = calloc(1, sizeof(*mr));

	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->context = pd->context;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = info->length;
	mr->handle = handle;
	mr->lkey = info->lkey;
	mr->rkey = info->rkey;
	return mr;
}

/* Access bits the stand-in's kernel knows (IBV_ACCESS_* up to RELAXED). */
#define SK_ACCESS_KNOWN 0x1fffu

/* Is [addr, addr + length) mapped in this process? The kernel pins the
 * pages of a registration (drivers/infiniband/core/umem.c, ib_umem_get ->
 * pin_user_pages_fast) and fails with EFAULT where nothing is mapped;
 * mincore() says ENOMEM for the same ranges. */
static bool range_mapped(void *addr, size_t length)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~(uintptr_t)(page - 1);
	size_t span = (size_t)((uintptr_t)addr + length - start);
	unsigned char *vec = malloc((span + (size_t)page - 1) / (size_t)page);
	bool mapped;

	if (!vec)
		return true; /* cannot tell: let the registration through */
	mapped = mincore((void *)start, span, vec) == 0 || errno != ENOMEM;
	free(vec);
	return mapped;
}

#undef ibv_reg_mr /* verbs.h makes it a macro over the versioned functions */
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	struct sk_obj_info info = {
		.pd = pd->handle, .access = (uint32_t)access,
		.addr = (uintptr_t)addr, .length = length,
	};
	struct ibv_mr *mr;
	uint32_t handle;
	int err;

	if ((uint32_t)access & ~SK_ACCESS_KNOWN) {
		errno = EINVAL;
		return NULL;
	}
	/* Remote write or atomic needs local write (the kernel's rule). */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if (length == 0 || (uintptr_t)addr + length < (uintptr_t)addr ||
	    !range_mapped(addr, length)) {
		errno = EFAULT;
		return NULL;
	}
	err = sk_obj_create(pd->context, SK_MR, &info, &handle);
	if (err) {
		errno = err;
		return NULL;
	}
	mr = new_mr(pd, handle, &info, addr);
	if (!mr)
		sk_obj_destroy(pd->context, SK_MR, handle);
	return mr;
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	(void)iova; /* the stand-in keeps no I/O virtual addresses */
	return ibv_reg_mr(pd, addr, length, (int)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	int err = destroy_status(sk_obj_destroy(mr->context, SK_MR, mr->handle));

	if (err)
		return err;
	free(mr);
	return 0;
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	/* The kernel answers the query with lkey, rkey and length; the address
	 * is the registering process's and is not given (NULL). Like upstream,
	 * nothing checks that the MR is registered on this pd. */
	struct sk_obj_info info;
	int err;

	if (dummy_import(pd->context))
		return NULL;
	sk_import_pause();
	err = sk_obj_lookup(pd->context, SK_MR, mr_handle, &info);
	if (err) {
		errno = err;
		return NULL;
	}
	return new_mr(pd, mr_handle, &info, NULL);
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	free(mr); /* local only */
}

/* ---- Device memory -------------------------------------------------------- */

/* mlx5's rules: a copy must lie inside the DM, else EFAULT; the hardware
 * accesses it in 4-byte words, so offset and length must be multiples of
 * 4, else EINVAL. */
static int dm_span(struct sk_dm *d, uint64_t off, size_t len)
{
	if (off > d->length || len > d->length - off)
		return EFAULT;
	return (off & 3) || (len & 3) ? EINVAL : 0;
}

static int sk_memcpy_to_dm(struct ibv_dm *dm, uint64_t off, const void *src, size_t len)
{
	struct sk_dm *d = (struct sk_dm *)dm;
	int err = dm_span(d, off, len) ?: sk_check_alive();

	if (err)
		return err;
	return pwrite(dm->context->cmd_fd, src, len, (off_t)(d->offset + off)) == (ssize_t)len
		       ? 0 : EIO;
}

static int sk_memcpy_from_dm(void *dst, struct ibv_dm *dm, uint64_t off, size_t len)
{
	struct sk_dm *d = (struct sk_dm *)dm;
	int err = dm_span(d, off, len) ?: sk_check_alive();

	if (err)
		return err;
	return pread(dm->context->cmd_fd, dst, len, (off_t)(d->offset + off)) == (ssize_t)len
		       ? 0 : EIO;
}

/* This process's DMs, each holding a mapping. A fork() copies them all;
 * the kernel counts every copy (rdma_umap_open in
 * drivers/infiniband/core/ib_core_uverbs.c) and drops it at the child's
 * munmap, exec or exit. The stand-in cannot see an exec or an exit, so it
 * counts no copy, and the child's unimport or free of one drops nothing:
 * the parent's mappings keep the memory as they do on a real kernel. */
static pthread_mutex_t dms_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sk_dm *dms;
static pthread_once_t dms_once = PTHREAD_ONCE_INIT;

static void dms_prepare(void)
{
	pthread_mutex_lock(&dms_lock);
}

static void dms_parent(void)
{
	pthread_mutex_unlock(&dms_lock);
}

static void dms_child(void)
{
	for (struct sk_dm *d = dms; d; d = d->next)
		d->inherited = true;
	pthread_mutex_unlock(&dms_lock);
}

static void dms_atfork(void)
{
	pthread_atfork(dms_prepare, dms_parent, dms_child);
}

static void dms_add(struct sk_dm *d)
{
	pthread_once(&dms_once, dms_atfork);
	pthread_mutex_lock(&dms_lock);
	d->prev = NULL;
	d->next = dms;
	if (dms)
		dms->prev = d;
	dms = d;
	pthread_mutex_unlock(&dms_lock);
}

static void dms_remove(struct sk_dm *d)
{
	pthread_mutex_lock(&dms_lock);
	if (d->prev)
		d->prev->next = d->next;
	else
		dms = d->next;
	if (d->next)
		d->next->prev = d->prev;
	pthread_mutex_unlock(&dms_lock);
}

/* Upstream maps a MEMIC DM's pages through the cmd_fd both when it
 * allocates it (providers/mlx5/verbs.c alloc_dm_memic -> dm_mmap) and when
 * it imports it (mlx5_import_dm, after MLX5_IB_METHOD_DM_QUERY ->
 * dm_mmap), MAP_SHARED, and points start_va at the DM's first byte inside
 * the first page. The stand-in's device memory is the ufile's DM area, so
 * every context of the ufile, in any process, maps the same bytes; the
 * kernel counts the mappings (sk_dm_map), so a destroyed DM's memory is
 * not handed out again while one lives. A failed mmap is ENOMEM
 * (alloc_dm_memic) and fails the import. */
static struct ibv_dm *new_dm(struct ibv_context *context, uint32_t handle,
			     const struct sk_obj_info *info)
{
	struct sk_dm *d = calloc(1, sizeof(*d));
	uint64_t in_page = info->offset % SK_PAGE;
	void *va;
	int err;

	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->mmap_len = (size_t)((in_page + info->length + SK_PAGE - 1) / SK_PAGE * SK_PAGE);
	err = sk_dm_map(context, info->offset);
	va = err ? MAP_FAILED
		 : mmap(NULL, d->mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, context->cmd_fd,
			(off_t)(info->offset - in_page));
	if (va == MAP_FAILED) {
		if (!err)
			sk_dm_unmap(context, info->offset);
		free(d);
		errno = err ? err : ENOMEM;
		return NULL;
	}
	d->dm.context = context;
	d->dm.memcpy_to_dm = sk_memcpy_to_dm;
	d->dm.memcpy_from_dm = sk_memcpy_from_dm;
	d->dm.comp_mask = IBV_DM_MASK_HANDLE;
	d->dm.handle = handle;
	d->offset = info->offset;
	d->length = info->length;
	d->mmap_va = va;
	d->start_va = (char *)va + in_page;
	dms_add(d);
	return &d->dm;
}

/* mlx5_free_dm / mlx5_unimport_dm: the mapping goes with the object. */
static void drop_dm(struct ibv_dm *dm)
{
	struct sk_dm *d = (struct sk_dm *)dm;

	dms_remove(d);
	munmap(d->mmap_va, d->mmap_len);
	if (!d->inherited)
		sk_dm_unmap(dm->context, d->offset);
	free(d);
}

static struct ibv_dm *sk_alloc_dm(struct ibv_context *context, struct ibv_alloc_dm_attr *attr)
{
	struct sk_obj_info info = { .length = attr->length };
	struct ibv_dm *dm;
	uint32_t handle;
	char zero[SK_DM_CHUNK] = { 0 };
	int err;

	/* mlx5_alloc_dm (upstream providers/mlx5/verbs.c, alloc_dm_memic):
	 * a length above max_dm_size, 0 on a function without on-chip
	 * memory, is EINVAL before any kernel call. */
	if (attr->comp_mask || attr->length > max_dm_size(sk_of(context)->dev)) {
		errno = EINVAL;
		return NULL;
	}
	err = sk_obj_create(context, SK_DM, &info, &handle);
	if (err) {
		errno = err;
		return NULL;
	}
	/* Handed out zeroed, as the device clears it. */
	for (uint64_t done = 0; done < info.length; done += sizeof(zero))
		if (pwrite(context->cmd_fd, zero, sizeof(zero), (off_t)(info.offset + done)) < 0)
			break;
	dm = new_dm(context, handle, &info);
	if (!dm)
		sk_obj_destroy(context, SK_DM, handle);
	return dm;
}

static int sk_free_dm(struct ibv_dm *dm)
{
	int err = destroy_status(sk_obj_destroy(dm->context, SK_DM, dm->handle));

	if (err)
		return err;
	drop_dm(dm);
	return 0;
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	struct sk_obj_info info;
	int err;

	if (dummy_import(context))
		return NULL;
	sk_import_pause();
	err = sk_obj_lookup(context, SK_DM, dm_handle, &info);
	if (err) {
		errno = err;
		return NULL;
	}
	return new_dm(context, dm_handle, &info);
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	drop_dm(dm); /* local only */
}
