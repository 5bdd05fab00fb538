/*
 * The stand-in rdma-core's "kernel": what uverbs keeps per open device file
 * (a ufile), modelled in user space so that tests can run the hardware path
 * of rshare on machines without RDMA.
 *
 * A ufile is a memfd. Its fd is the context's cmd_fd: it can be dup'd, sent
 * with SCM_RIGHTS or inherited, and every context holding it sees the same
 * object table, like contexts sharing a real ufile. Its first page holds the
 * table (process-shared robust mutex, objects with small integer handles
 * allocated lowest-free as the kernel's xarray does); the VAR pages follow
 * and are mmap()ed through the cmd_fd at their mmap_off. The memory goes
 * away with the last fd, taking every object with it, as in the kernel.
 *
 * The stand-in libmlx5 reaches this model through the symbols below, which
 * the stand-in libibverbs exports under its private version node (as the
 * real libmlx5 uses libibverbs' IBVERBS_PRIVATE_* symbols).
 */
#ifndef STANDIN_SK_KERNEL_H
#define STANDIN_SK_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define SK_PAGE 4096u
#define SK_MAX_OBJS 64u      /* objects per ufile; the next alloc gets ENOMEM */
#define SK_VAR_PAGES 16u     /* VAR pages per ufile */
#define SK_VAR_PAGE_ID0 0x100u /* page_id of the first VAR page */
#define SK_UFILE_SIZE (SK_PAGE * (1 + SK_VAR_PAGES))

enum sk_type { SK_NONE = 0, SK_PD = 1, SK_VAR = 2 };

/* One stand-in device. */
struct sk_device {
	struct ibv_device ibdev;  /* first: rdma-core hands out &ibdev */
	uint64_t guid;            /* node GUID, host order */
	bool mlx5;                /* served by the (stand-in) mlx5 provider */
};

/* A context: what ibv_open_device/ibv_import_device return. */
struct sk_context {
	struct ibv_context ibctx; /* first */
	struct sk_device *dev;
	struct sk_ufile *uf;      /* the ufile's table page, mapped */
};

/* Is this one of the stand-in's devices? */
bool sk_device_known(struct ibv_device *dev);

/* Create an object of type in the context's table. For SK_VAR a free VAR
 * page is taken too (*page receives its index). 0 or an errno value. */
int sk_obj_create(struct ibv_context *ctx, enum sk_type type, uint32_t *handle,
		  uint32_t *page);
/* Does the table hold an object of type under handle? 0, ENOENT (no
 * object) or EINVAL (an object of another type). *page for SK_VAR. */
int sk_obj_lookup(struct ibv_context *ctx, enum sk_type type, uint32_t handle,
		  uint32_t *page);
/* Destroy it: 0, ENOENT or EINVAL as sk_obj_lookup. */
int sk_obj_destroy(struct ibv_context *ctx, enum sk_type type, uint32_t handle);

/* ---- Internal to the stand-in libibverbs (not exported) ---------------- */

/* Create a ufile for device dev_index: *fd is its cmd_fd, *uf its mapped
 * table. 0 or an errno value. */
int sk_ufile_create(uint32_t dev_index, int *fd, struct sk_ufile **uf);
/* Is fd a ufile? 0 with *dev_index set, EINVAL (not a memfd-like regular
 * file, as rdma-core refuses a non-char-device fd) or ENODEV (no device of
 * ours behind it). Reads only; never touches fd's ownership. */
int sk_ufile_probe(int fd, uint32_t *dev_index);
/* Map the table of a probed ufile; NULL + errno on failure. */
struct sk_ufile *sk_ufile_map(int fd);
void sk_ufile_unmap(struct sk_ufile *uf);

#endif
