/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The hardware suite: what it runs against, and its cases. */
#ifndef RSHARE_HW_SUITE_H
#define RSHARE_HW_SUITE_H

#include <stdbool.h>
#include <stdint.h>

#include "rshare/rshare.h"

/* The stand-in's devices (tests/hw/standin/sk_verbs.c). */
#define STANDIN_MLX5 "mlx5_sim0"
#define STANDIN_MLX5_GUID 0x0002c90300a1b2c0ULL
#define STANDIN_OTHER "rxe_sim1"
#define STANDIN_OTHER_GUID 0x0002c90300a1b2c1ULL
#define STANDIN_MAX_OBJS 64     /* objects per context table */
#define STANDIN_VAR_PAGES 16    /* VAR pages per device */
#define STANDIN_VAR_PAGE_ID0 0x100u
#define STANDIN_VAR_RECORD 24   /* mlx5dv_var_export() record size */
#define STANDIN_UFILE_SIZE (4096 * (0x900 + 32) + 256 * 64) /* a ufile memfd's size */

struct hw_target {
	const char *mode;            /* "standin", "standin-44" or "real" */
	const char *self;            /* this program, for fork + exec */
	bool standin;                /* stand-in names, limits and hooks apply */
	char name[RSHARE_NAME_MAX];  /* the device under test */
	uint64_t guid;
	bool vars;                   /* VARs can be allocated on it */
	bool var_sharing;            /* ... and exported/imported */
	uint32_t caps;               /* RSHARE_CAP_* of the device */
	char other[RSHARE_NAME_MAX]; /* a hw device with another GUID, or "" */
};

/* hw_suite.c: a device opened by name, or imported from another's fd;
 * either fails the case when the call does. */
rshare_device *hw_open_dev(const char *name);
rshare_device *hw_import_dev(rshare_device *from);
/* Set (value) or unset (NULL) a stand-in test hook: the stand-in reads
 * its hooks once and again only when told (standin/sk_kernel.h). */
void hw_hook(const char *name, const char *value);

/* hw_cases.c: devices and PDs */
void case_listing(const struct hw_target *t);
void case_open_default(const struct hw_target *t);
void case_not_a_context(const struct hw_target *t);
void case_import_adopted_then_failed(const struct hw_target *t);
void case_import_failed_kcmp_filtered(const struct hw_target *t);
void case_pd_local(const struct hw_target *t);
void case_pd_freed_elsewhere(const struct hw_target *t);
void case_guid_mismatch(const struct hw_target *t);
void case_pd_limit(const struct hw_target *t);
void case_pd_errno_map(const struct hw_target *t);

/* hw_var_cases.c */
void case_var_local(const struct hw_target *t);
void case_var_not_mlx5(const struct hw_target *t);
void case_var_limit(const struct hw_target *t);
void case_var_without_export(const struct hw_target *t);

/* hw_fidelity_cases.c: the stand-in behaves as upstream, rshare maps it */
void case_errno_statuses(const struct hw_target *t);
void case_var_flags(const struct hw_target *t);
void case_var_no_kernel_support(const struct hw_target *t);
void case_disassociated(const struct hw_target *t);
void case_var_pages_device_wide(const struct hw_target *t);
void case_handles_lowest_free(const struct hw_target *t);

/* hw_identity_cases.c: handle reuse, table identity, stale VARs */
void case_pd_handle_reused(const struct hw_target *t);
void case_table_identity(const struct hw_target *t);
void case_var_stale(const struct hw_target *t);
void case_var_unimport_once(const struct hw_target *t);
void case_identity_fields(const struct hw_target *t);
void case_var_free_race(const struct hw_target *t);
void case_var_map_fork(const struct hw_target *t);

/* hw_mr_dm_cases.c */
void case_caps(const struct hw_target *t);
void case_native(const struct hw_target *t);
void case_mr_share(const struct hw_target *t);
void case_mr_handle_reused(const struct hw_target *t);
void case_dm_share(const struct hw_target *t);
void case_dm_map_outlives_free(const struct hw_target *t);
void case_dm_map_fork(const struct hw_target *t);
void case_dm_not_mlx5(const struct hw_target *t);

/* hw_buf_cases.c: shared buffers (since 1.2) */
void case_buf_share(const struct hw_target *t);
void case_buf_with_ledger(const struct hw_target *t);

/* hw_ledger_cases.c: table identity and the checking levels (issue 17).
 * hw_channel_dev: from's context received over a channel (with its
 * ledger), as another process would get it. */
rshare_device *hw_channel_dev(rshare_device *from);
void case_table_never_zero(const struct hw_target *t);
void case_other_context_mismatch(const struct hw_target *t);
void case_reuse_levels(const struct hw_target *t);
void case_fork_channel(const struct hw_target *t);
void case_fork_close_keeps_parent(const struct hw_target *t);
void case_var_ledger_reuse(const struct hw_target *t);
void case_ledger_untrusted(const struct hw_target *t);
void case_ledger_free_race(const struct hw_target *t);
void case_ledger_import_race(const struct hw_target *t);
void case_no_import_provider(const struct hw_target *t);
void case_var_fault_mode(const struct hw_target *t);
void case_broker_ledger(const struct hw_target *t);
void case_export_sizes_room(const struct hw_target *t);

/* hw_xproc.c: sharing with another process (fork + exec + channel) */
void case_xproc(const struct hw_target *t);
int child_share(int sock);
void case_xproc_mr_dm(const struct hw_target *t);
int child_mrdm(int sock);
int child_var63(int sock);
/* hw_mr_dm_cases.c: mapped device memory across processes */
void case_xproc_dm_map(const struct hw_target *t);
int child_dmmap(int sock);
int child_dmnomap(int sock);
/* Start `self mode <sock>` with the child's end of a socketpair; extra_env
 * ("NAME=value" or NULL) is added to its environment. Returns the pid and
 * the parent's end in *sock. */
int spawn_child(const struct hw_target *t, const char *mode,
		const char *extra_env, int *sock);
/* Wait for pid; true if it exited 0. */
bool reap_child(int pid);

#endif
