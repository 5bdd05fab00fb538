/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The provider table: the only way the core reaches a device provider.
 *
 * Its operations mirror the rdma-core calls rshare needs (device list,
 * open/import/close context, alloc/import/unimport/dealloc PD, alloc/free/
 * export/import/unimport VAR), so that everything above this table is the
 * same code for the simulated device and for real hardware.
 *
 * Error contract: an operation returns RSHARE_OK or a negative status and,
 * on failure, has already described the cause with rs_fail(); on failure
 * it has changed nothing (no fd taken, no object left behind).
 */
#ifndef RSHARE_PROVIDER_H
#define RSHARE_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rshare/rshare.h"

/* Provider-private bytes carried inside a VAR blob (hardware: upstream's
 * mlx5dv_var_export() record). Bounded so every blob fits RSHARE_BLOB_MAX. */
#define RS_PRIV_MAX 64

struct rs_devinfo {
	char name[RSHARE_NAME_MAX];
	uint64_t guid;
	int provider; /* enum rshare_provider */
};

/* A device context as the core sees it. Filled by open/import. */
struct rs_ctx {
	const struct rs_provider *ops;
	int fd;             /* command fd, owned by the context */
	uint64_t guid;      /* node GUID, identity of the device */
	uint64_t table_id;  /* identity of the object table, 0 if unknowable */
	char name[RSHARE_NAME_MAX];
	void *prov;         /* provider's own state for the context */
	void *native;       /* what rshare_device_native() hands out (struct
			     * ibv_context on hardware), NULL if none */
	/* The per-context ledger (ledger.h), NULL if the context has none
	 * (sim0, whose table keeps serials itself; a hardware context that
	 * cannot share, or one imported from a bare fd). Owned by the
	 * provider, which closes it with the context. */
	struct rs_ledger *ledger;
	/* Import only, in: the ledger fd that came with the context's fd, or
	 * -1. A provider that takes it sets -1; the core closes it otherwise. */
	int ledger_in;
	/* Set by the core before close: the context came to this process
	 * through fork(), so closing it must destroy nothing of the context
	 * the parent (and every other holder) keeps using (fork.c). */
	bool forked;
};

/* A PD as the provider sees it. */
struct rs_pd_info {
	uint32_t handle;    /* kernel handle */
	uint64_t serial;    /* creation serial within the table, 0 if unknowable */
	void *prov;         /* provider's own object (e.g. struct ibv_pd) */
};

/* A VAR as the provider sees it. */
struct rs_var_info {
	uint32_t handle;
	uint64_t serial;
	uint32_t flags;
	uint32_t page_id;
	uint32_t length;
	uint64_t mmap_off;
	uint16_t priv_len;            /* bytes used in priv */
	uint8_t priv[RS_PRIV_MAX];    /* provider record carried in the blob */
	void *prov;                   /* e.g. struct mlx5dv_var */
};

/* An MR as the provider sees it. */
struct rs_mr_info {
	uint32_t handle;    /* kernel handle */
	uint64_t serial;    /* identity check: sim creation serial; hw what it can verify, else 0 */
	uint32_t pd_handle; /* kernel handle of the PD it is registered on */
	uint64_t addr;      /* the registering process's address (meaningless elsewhere) */
	uint64_t length;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t access;    /* RSHARE_ACCESS_* (the IBV_ACCESS_* values) */
	void *prov;         /* provider's own object (e.g. struct ibv_mr) */
};

/* Device memory as the provider sees it. */
struct rs_dm_info {
	uint32_t handle;
	uint64_t serial;
	uint64_t length;
	void *prov;         /* provider's own object (e.g. struct ibv_dm) */
	/* This process's mapping (rshare_dm_map, since 1.2), NULL if none;
	 * map_first/map_count: what the provider holds for it (sim0: granules). */
	void *map;
	uint32_t map_first, map_count;
};

struct rs_provider {
	const char *name;   /* "hw", "sim" */
	int id;             /* enum rshare_provider */

	/* Fill up to cap entries of out and set *count to the total number of
	 * devices. Never fails for "no devices": that is *count == 0. */
	int (*list)(struct rs_devinfo *out, size_t cap, size_t *count);
	/* Open device name (one of this provider's, as listed). */
	int (*open)(const char *name, struct rs_ctx *ctx);
	/* Does fd belong to this provider? Cheap, no side effects. */
	bool (*owns_fd)(int fd);
	/* Import the context behind fd. On success the context owns fd; on
	 * failure the caller still does. */
	int (*import)(int fd, struct rs_ctx *ctx);
	/* Release the context, its fd included. */
	void (*close)(struct rs_ctx *ctx);

	int (*pd_alloc)(struct rs_ctx *ctx, struct rs_pd_info *pd);
	/* In: pd->handle, pd->serial. Out: pd->prov. NOT_FOUND if the table
	 * has no such PD. */
	int (*pd_import)(struct rs_ctx *ctx, struct rs_pd_info *pd);
	void (*pd_unimport)(struct rs_ctx *ctx, struct rs_pd_info *pd);
	int (*pd_dealloc)(struct rs_ctx *ctx, struct rs_pd_info *pd);

	int (*var_alloc)(struct rs_ctx *ctx, uint32_t flags, struct rs_var_info *var);
	/* Fill var->priv/priv_len with what the importer's provider needs. */
	int (*var_export)(struct rs_ctx *ctx, struct rs_var_info *var);
	/* In: every field of a blob (handle .. priv). Out: prov. */
	int (*var_import)(struct rs_ctx *ctx, struct rs_var_info *var);
	void (*var_unimport)(struct rs_ctx *ctx, struct rs_var_info *var);
	int (*var_free)(struct rs_ctx *ctx, struct rs_var_info *var);

	/* Optional (NULL: the core mmaps ctx->fd at var->mmap_off and
	 * munmaps itself, as on hardware, where the kernel keeps a freed VAR's
	 * page until its last mapping goes). Map the VAR's page into this
	 * process, and unmap it: the simulated device uses them to know which
	 * pages are still mapped somewhere, so that it never gives such a page
	 * to a new VAR. var_map: RSHARE_E_IO if the VAR no longer exists or
	 * the mapping fails. */
	int (*var_map)(struct rs_ctx *ctx, const struct rs_var_info *var, void **addr);
	void (*var_unmap)(struct rs_ctx *ctx, const struct rs_var_info *var, void *addr);

	/* Since 1.1. Any of these may be NULL: the core answers
	 * RSHARE_E_UNSUPPORTED. */

	/* RSHARE_CAP_* bits this context (and the loaded rdma-core) supports. */
	uint32_t (*caps)(struct rs_ctx *ctx);

	/* Register [addr, addr + length) on pd. Fills every field of mr. */
	int (*mr_reg)(struct rs_ctx *ctx, struct rs_pd_info *pd, void *addr, uint64_t length,
		      uint32_t access, struct rs_mr_info *mr);
	/* In: every field of a blob (handle .. access). Out: prov. NOT_FOUND if
	 * the table has no such MR, BLOB_CORRUPT if its attributes disagree
	 * with the blob's, DEVICE_MISMATCH if it is not registered on pd. */
	int (*mr_import)(struct rs_ctx *ctx, struct rs_pd_info *pd, struct rs_mr_info *mr);
	void (*mr_unimport)(struct rs_ctx *ctx, struct rs_mr_info *mr);
	int (*mr_dereg)(struct rs_ctx *ctx, struct rs_mr_info *mr);

	int (*dm_alloc)(struct rs_ctx *ctx, uint64_t length, struct rs_dm_info *dm);
	/* In: handle, serial, length from a blob. Out: prov. */
	int (*dm_import)(struct rs_ctx *ctx, struct rs_dm_info *dm);
	void (*dm_unimport)(struct rs_ctx *ctx, struct rs_dm_info *dm);
	int (*dm_free)(struct rs_ctx *ctx, struct rs_dm_info *dm);
	/* Since 1.2, optional (NULL: RSHARE_E_UNSUPPORTED): map the device
	 * memory into this process (dm->map and what unmapping needs), and
	 * unmap it. dm_map: NOT_FOUND if the DM no longer exists. */
	int (*dm_map)(struct rs_ctx *ctx, struct rs_dm_info *dm);
	void (*dm_unmap)(struct rs_ctx *ctx, struct rs_dm_info *dm);
	/* Copy to or from the device memory; the core has checked that
	 * [offset, offset + len) lies inside dm->length. */
	int (*dm_write)(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset,
			const void *src, size_t len);
	int (*dm_read)(struct rs_ctx *ctx, struct rs_dm_info *dm, uint64_t offset, void *dst,
		       size_t len);
};

/* The providers, in listing order (hardware first). */
extern const struct rs_provider rs_hw_provider;
extern const struct rs_provider rs_sim_provider;

#endif
