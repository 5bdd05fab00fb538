/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stand-in rdma-core's "kernel": what uverbs and mlx5_ib keep per open
 * device file (a ufile) and per device, modelled in user space so that
 * tests can run the hardware path of rshare on machines without RDMA.
 *
 * A ufile is a memfd. Its fd is the context's cmd_fd: it can be dup'd, sent
 * with SCM_RIGHTS or inherited, and every context holding it sees the same
 * object table, like contexts sharing a real ufile. Its first pages hold the
 * table (process-shared robust mutex; object handles lowest-free, as the
 * kernel's xarray gives them); the VAR mmap entries follow (mmap()ed through
 * the cmd_fd at their mmap_off, lowest-free per ufile as
 * rdma_user_mmap_entry_insert does), then the device-memory area. The
 * memory goes away with the last fd, taking every object with it.
 *
 * Device-wide state (mlx5_ib's VAR page bitmap, the PD numbers and mkey
 * indexes the firmware hands out, the mkey variant counter) lives in a
 * small file shared by every process that names it in STANDIN_DEVICE_STATE
 * (else in memory private to the process). Everything is lowest-free.
 *
 * mmap() of a VAR entry is the kernel's business, not rdma-core's: a test
 * program links sk_mmap.c, which routes its mmap/munmap of a ufile through
 * sk_entry_map/sk_entry_unmap (see there).
 *
 * Test hooks (environment; read once, and again after sk_env_changed()):
 *   STANDIN_DISASSOCIATED   the devices were removed: every command answers
 *                           EIO (destroys too, unless
 *                           RDMAV_ALLOW_DISASSOC_DESTROY is set), mmap fails
 *                           with EIO
 *   STANDIN_NO_VAR_SUPPORT  the mlx5 device's kernel lacks the VAR object:
 *                           VAR allocation answers EPROTONOSUPPORT
 *   STANDIN_MAX_DM_SIZE     mlx5_sim0's max_dm_size (default SK_MAX_DM_SIZE;
 *                           0: a function without on-chip memory)
 *   STANDIN_VAR_FAULT       sk_mmap.c maps VAR pages PROT_NONE: any read or
 *                           write of one faults, as a test of "never touch
 *                           the doorbell page"
 *   RDMAV_ALLOW_DISASSOC_DESTROY  rdma-core's own variable (libibverbs
 *                           init.c): only with it is EIO on destroy success
 *   STANDIN_IMPORT_PAUSE=<wfd>,<rfd>  every import of an object (PD, MR,
 *                           DM, VAR) stops before it asks the kernel: it
 *                           writes a byte to wfd and waits for one on rfd,
 *                           so a test can change the table meanwhile (a race
 *                           made deterministic; sk_import_pause)
 * and STANDIN_FAIL_IMPORT, STANDIN_FAIL_ALLOC_PD and
 * STANDIN_EXPORT_SIZES_GROWN (see their users in sk_verbs.c, sk_mlx5.c).
 */
#ifndef STANDIN_SK_KERNEL_H
#define STANDIN_SK_KERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#define SK_PAGE 4096u
#define SK_MAX_OBJS 64u        /* objects per ufile; the next alloc gets ENOMEM */
#define SK_MMAP_ENTRIES 32u    /* mmap entries (UARs, VARs) per ufile, < 256 */
#define SK_VAR_PAGES 16u       /* VAR pages per device; the next gets ENOSPC */
#define SK_VAR_PAGE_ID0 0x100u /* page_id of the device's first VAR page */
#define SK_PDNS 256u           /* PD numbers per device (pdn 1..SK_PDNS) */
#define SK_MKEYS 256u          /* mkey indexes per device */
#define SK_MKEY_CACHE 16u      /* cached mkeys per device (mlx5_ib's mkey cache) */
#define SK_MAX_DM_SIZE (SK_DM_CHUNK * SK_DM_CHUNKS) /* mlx5_sim0's max_dm_size */
#define SK_DM_CHUNK 256u       /* device memory is handed out in chunks */
#define SK_DM_CHUNKS 64u       /* per ufile: 16 KiB of device memory */
#define SK_NDEVICES 2u
#define SK_TABLE_SIZE (2u * SK_PAGE) /* the object table, at offset 0 */
/* The mmap offset of entry e, as mlx5_ib tells it: entries are inserted
 * lowest-free from page offset MLX5_IB_MMAP_OFFSET_START << 16 (9 << 16)
 * and mlx5_entry_to_mmap_offset() turns page offset (9 << 16) + e into
 * offset page 0x900 + e for e < 256 (drivers/infiniband/hw/mlx5/main.c
 * mlx5_rdma_user_mmap_entry_insert, mlx5_entry_to_mmap_offset). The
 * memfd keeps the entry's backing page at that same offset (sparse). */
#define SK_MMAP_PAGE0 0x900u
#define SK_ENTRY_OFF(e) ((uint64_t)SK_PAGE * (SK_MMAP_PAGE0 + (e)))
#define SK_DM_OFF SK_ENTRY_OFF(SK_MMAP_ENTRIES)
#define SK_UFILE_SIZE (SK_DM_OFF + (uint64_t)SK_DM_CHUNK * SK_DM_CHUNKS)

/* SK_UAR: the provider-internal non-cached UAR that mlx5_set_context()
 * allocates on every open and import (upstream providers/mlx5/verbs.c,
 * mlx5_set_singleton_nc_uar); it takes a handle like any user object, and
 * an mmap entry in the range VARs take theirs from (kernel
 * drivers/infiniband/hw/mlx5/main.c alloc_uar_entry). */
enum sk_type { SK_NONE = 0, SK_PD = 1, SK_VAR = 2, SK_MR = 3, SK_DM = 4, SK_UAR = 5 };

/* One stand-in device. */
struct sk_device {
	struct ibv_device ibdev;  /* first: rdma-core hands out &ibdev */
	uint64_t guid;            /* node GUID, host order */
	bool mlx5;                /* served by the (stand-in) mlx5 provider */
};

/* A context: what ibv_open_device/ibv_import_device return. Like a real
 * provider's, it is a verbs_context, so verbs.h's static inlines
 * (ibv_alloc_dm...) reach the provider's ops through it. */
struct sk_context {
	struct sk_device *dev;
	struct sk_ufile *uf;      /* the ufile's table page, mapped */
	uint32_t uar;             /* mlx5: handle of this context's internal UAR */
	bool has_uar;
	struct verbs_context vctx; /* last: vctx.context is what callers get */
};

/* A PD as the provider keeps it: mlx5dv_init_obj() reads its number. */
struct sk_pd {
	struct ibv_pd pd; /* first */
	uint32_t pdn;
};

/* Device memory as the provider keeps it (upstream providers/mlx5/mlx5.h,
 * struct mlx5_dm): the DM's pages mapped through the cmd_fd at alloc and at
 * import, start_va its first byte; mlx5dv_init_obj() hands out start_va. */
struct sk_dm {
	struct ibv_dm dm; /* first */
	uint64_t offset;  /* of its memory in the ufile */
	uint64_t length;
	void *mmap_va;    /* the page-aligned mapping, mmap_len bytes */
	size_t mmap_len;
	void *start_va;   /* mmap_va + offset's place in its page */
	struct sk_dm *prev, *next; /* this process's DMs (sk_verbs.c, for fork) */
	bool inherited;   /* a fork child's copy: its mapping was never counted */
};

/* What the kernel knows of an object (filled by sk_obj_lookup). */
struct sk_obj_info {
	uint32_t pdn;             /* SK_PD: PD number, device-wide */
	uint32_t page_id;         /* SK_VAR */
	uint32_t entry;           /* SK_VAR, SK_UAR: mmap entry index */
	uint32_t pd;              /* SK_MR: handle of its PD */
	uint32_t lkey, rkey;      /* SK_MR */
	uint32_t access;          /* SK_MR */
	uint64_t addr, length;    /* SK_MR: registered range; SK_DM: length */
	uint64_t offset;          /* SK_DM: offset of its memory in the ufile */
};

/* Is this one of the stand-in's devices? */
bool sk_device_known(struct ibv_device *dev);
/* Index of a known device. */
uint32_t sk_device_index(struct ibv_device *dev);

/* Every "ioctl" below: 0 or an errno value, EIO on a disassociated device. */
int sk_check_alive(void);

/* The test hooks, as getenv() would answer them. */
enum sk_env {
	SK_ENV_DISASSOCIATED,
	SK_ENV_ALLOW_DISASSOC_DESTROY,
	SK_ENV_NO_VAR_SUPPORT,
	SK_ENV_MAX_DM_SIZE,
	SK_ENV_VAR_FAULT,
	SK_ENV_EXPORT_SIZES_GROWN,
	SK_ENV_FAIL_IMPORT,
	SK_ENV_FAIL_ALLOC_PD,
	SK_ENV_IMPORT_PAUSE,
	SK_ENV_COUNT
};
const char *sk_env(enum sk_env which);
/* A test changed a hook (setenv/unsetenv): every process on the device
 * state re-reads its hooks at its next sk_env(). The test calls its own
 * copy of this file (linked with sk_mmap.c); the generation it moves is in
 * the device-state file, shared with the stand-in libraries' copy when
 * STANDIN_DEVICE_STATE names one (hw_suite sets it). */
void sk_env_changed(void);
/* STANDIN_IMPORT_PAUSE: called by every object import before its kernel
 * query (none without the hook). */
void sk_import_pause(void);

/* Create an object in the context's table; in: the fields of info the type
 * needs (SK_MR: pd, access, addr, length; SK_DM: length), out: the rest.
 * Handles, PD numbers, mkey indexes, VAR pages and entries lowest-free. */
int sk_obj_create(struct ibv_context *ctx, enum sk_type type, struct sk_obj_info *info,
		  uint32_t *handle);
/* Does the table hold an object of type under handle? 0, ENOENT (no
 * object) or EINVAL (an object of another type); *info when 0. */
int sk_obj_lookup(struct ibv_context *ctx, enum sk_type type, uint32_t handle,
		  struct sk_obj_info *info);
/* Destroy it: as lookup, and EBUSY for a PD that still has MRs. */
int sk_obj_destroy(struct ibv_context *ctx, enum sk_type type, uint32_t handle);

/* The kernel's side of mmap() on a cmd_fd. uf is the mapped table of the
 * ufile; entry the index behind the offset. map: 0 (the entry is live; its
 * mapping count grows) or EINVAL (no such entry: never made or its VAR
 * destroyed). unmap: the count drops, and the entry of a destroyed VAR is
 * released, with its device page, when its last mapping goes. */
int sk_entry_map(struct sk_ufile *uf, uint32_t entry);
/* The kernel's side of mapping a DM (MLX5_IB_MMAP_DEVICE_MEM) at its offset
 * in the ufile: map: 0 (the DM is live; its mapping count grows) or EINVAL
 * (destroyed). unmap: the count drops, and a destroyed DM's memory is
 * handed out again only when its last mapping goes
 * (drivers/infiniband/hw/mlx5/dm.c mlx5_ib_dm_mmap_free). */
int sk_dm_map(struct ibv_context *ctx, uint64_t offset);
void sk_dm_unmap(struct ibv_context *ctx, uint64_t offset);
void sk_entry_unmap(struct sk_ufile *uf, uint32_t entry);

/* ---- Internal to the stand-in (not exported) --------------------------- */

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
