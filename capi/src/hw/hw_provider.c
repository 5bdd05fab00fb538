/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The hardware provider: RDMA devices through rdma-core (libibverbs), loaded
 * at run time by hw_dl.c. Device contexts live here; each object kind has
 * its own file (hw_pd.c, hw_mr.c, hw_dm.c, hw_var.c).
 *
 * Identity: a device is its node GUID (rdma-core itself found the device
 * behind an imported fd by its st_rdev). The object table gets an id from
 * a sentinel PD, and a PD's serial is its mlx5 PD number + 1, compared
 * after every import (hw_identity.c); on devices other than mlx5 both are 0
 * and the kernel alone decides whether a handle names an object.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hw/hw_internal.h"
#include "util/error.h"
#include "util/fdutil.h"

static void copy_name(char *dst, const char *src)
{
	snprintf(dst, RSHARE_NAME_MAX, "%s", src ? src : "");
}

static int hw_list(struct rs_devinfo *out, size_t cap, size_t *count)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_device **list;
	size_t n = 0;

	*count = 0;
	if (!v->verbs_ok)
		return RSHARE_OK; /* no rdma-core: no hardware, not an error */
	/* NULL (e.g. ENOSYS without /sys/class/infiniband) means no devices. */
	list = v->get_device_list(NULL);
	if (!list)
		return RSHARE_OK;
	for (size_t i = 0; list[i]; i++) {
		const char *name = v->get_device_name(list[i]);
		if (!name)
			continue;
		if (n < cap) {
			copy_name(out[n].name, name);
			out[n].guid = be64toh(v->get_device_guid(list[i]));
			out[n].provider = RSHARE_PROVIDER_HW;
		}
		n++;
	}
	v->free_device_list(list);
	*count = n;
	return RSHARE_OK;
}

/* Describe an opened or imported context; ctx->prov becomes its rs_hw_ctx.
 * Only fails for lack of memory, and then touches nothing. */
static int fill_ctx(struct rs_ctx *ctx, struct ibv_context *ibctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct rs_hw_ctx *hw = calloc(1, sizeof(*hw));

	if (!hw)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "no memory for a context of %s",
			       v->get_device_name(ibctx->device));
	hw->ib = ibctx;
	hw->mlx5 = v->mlx5_ok && v->is_supported(ibctx->device);
	hw->max_dm_size = rs_hw_max_dm_size(ibctx);
	pthread_mutex_init(&hw->lock, NULL);
	ctx->fd = ibctx->cmd_fd;
	ctx->guid = be64toh(v->get_device_guid(ibctx->device));
	ctx->table_id = 0; /* set by rs_hw_table_open/import */
	copy_name(ctx->name, v->get_device_name(ibctx->device));
	ctx->prov = hw;
	ctx->native = ibctx;
	return RSHARE_OK;
}

static void free_ctx(struct rs_ctx *ctx)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);

	pthread_mutex_destroy(&hw->lock);
	free(hw);
	ctx->prov = NULL;
	ctx->native = NULL;
}

/* Does the provider implement import? Only mlx5 does; every other one has
 * libibverbs' dummy import ops (libibverbs/dummy_ops.c), which answer
 * EOPNOTSUPP. A PD import of a handle no table uses tells them apart with
 * no side effect: the kernel answers ENOENT or EINVAL, a kernel without the
 * PD query method EPROTONOSUPPORT (no import then either). */
static bool provider_imports(struct ibv_context *ibctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_pd *pd;
	int saved = errno, err;

	if (!v->import_pd || !v->import_device)
		return false;
	errno = 0;
	pd = v->import_pd(ibctx, UINT32_MAX);
	err = errno;
	if (pd)
		v->unimport_pd(pd); /* cannot happen; local release only */
	errno = saved;
	return pd || err == ENOENT || err == EINVAL;
}

static int hw_open(const char *name, struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_device **list;
	struct ibv_context *ibctx = NULL;
	bool found = false;
	int err = 0;

	if (!v->verbs_ok)
		return rs_fail(RSHARE_E_NODEV, 0, "no RDMA device named \"%s\" (%s)",
			       name, v->why);
	list = v->get_device_list(NULL);
	if (!list)
		return rs_fail(RSHARE_E_NODEV, errno,
			       "no RDMA device named \"%s\": rdma-core lists no devices",
			       name);
	for (size_t i = 0; list[i] && !found; i++) {
		const char *dn = v->get_device_name(list[i]);
		if (!dn || strcmp(dn, name) != 0)
			continue;
		found = true;
		ibctx = v->open_device(list[i]);
		err = errno;
	}
	/* An opened context keeps its device alive past the list. */
	v->free_device_list(list);
	if (!found)
		return rs_fail(RSHARE_E_NODEV, 0, "no RDMA device named \"%s\"", name);
	if (!ibctx)
		return rs_hw_fail(err, false, NULL, "ibv_open_device(%s) failed", name);
	if (fill_ctx(ctx, ibctx)) {
		v->close_device(ibctx);
		return RSHARE_E_NOMEM;
	}
	rs_hw_ctx(ctx)->can_import = provider_imports(ibctx);
	rs_hw_table_open(ctx);
	return RSHARE_OK;
}

static bool hw_owns_fd(int fd)
{
	/* Only rdma-core can tell, and asking it means importing: the core
	 * offers every fd that no other provider claims to hw_import(). */
	(void)fd;
	return false;
}

/* Are a and b the same open file description? */
static bool same_file(int a, int b)
{
	pid_t pid = getpid();
	long r = syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b);
	int fa, now;

	if (r >= 0)
		return r == 0;
	/* kcmp unavailable (kernel config, seccomp filters in containers).
	 * The inode would not do: every open of a uverbs device is the same
	 * char device inode. Status flags live in the open file description,
	 * so flip O_APPEND through a and look through b (O_APPEND means
	 * nothing to ioctl, mmap or a char device), then put it back. */
	fa = fcntl(a, F_GETFL);
	if (fa < 0 || fcntl(b, F_GETFL) != fa || fcntl(a, F_SETFL, fa ^ O_APPEND) < 0)
		return false;
	now = fcntl(b, F_GETFL);
	fcntl(a, F_SETFL, fa);
	return now >= 0 && (now & O_APPEND) != (fa & O_APPEND);
}

/*
 * ibv_import_device() takes the fd it is given, but on failure it may or may
 * not have closed it: rdma-core closes it when the provider's import step
 * fails (the context had adopted it) and leaves it open when the fd is
 * refused earlier (not a uverbs char device, no matching device). So it gets
 * a private dup, `mine`, and the caller's fd is never exposed to that
 * ambiguity. After a failure `mine` is closed here unless rdma-core already
 * did; the check can only be fooled if another thread re-creates a
 * descriptor to this same file at this same number in between.
 */
static void drop_after_failed_import(int mine, int theirs)
{
	if (fcntl(mine, F_GETFD) < 0)
		return; /* rdma-core closed it */
	if (same_file(mine, theirs))
		rs_close_quietly(mine);
}

static int hw_import(int fd, struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct ibv_context *ibctx;
	int mine, err;

	if (!v->verbs_ok)
		return rs_fail(RSHARE_E_NODEV, 0,
			       "is not a simulated device context, and it cannot "
			       "be an RDMA one: rdma-core is not loaded (%s)", v->why);
	if (!v->import_device)
		return rs_fail(RSHARE_E_NODEV, 0,
			       "is not a simulated device context, and the loaded "
			       "libibverbs lacks ibv_import_device@IBVERBS_1.10 "
			       "(rdma-core 31 or newer is needed to share RDMA contexts)");
	mine = rs_dup_cloexec(fd);
	if (mine < 0)
		return rs_fail(RSHARE_E_IO, errno, "could not be duplicated");
	errno = 0;
	ibctx = v->import_device(mine);
	if (!ibctx) {
		err = errno;
		drop_after_failed_import(mine, fd);
		if (err == EOPNOTSUPP)
			return rs_fail(RSHARE_E_UNSUPPORTED, err,
				       "is a context of a device whose provider cannot import "
				       "contexts: only mlx5 implements import in rdma-core, every "
				       "other provider answers EOPNOTSUPP");
		if (err == EINVAL || err == ENODEV || err == EBADF)
			return rs_fail(RSHARE_E_NODEV, err,
				       "is neither a simulated nor an RDMA device "
				       "context: ibv_import_device refused it");
		return rs_hw_fail(err, false, NULL, "was refused by ibv_import_device");
	}
	if (fill_ctx(ctx, ibctx)) {
		v->close_device(ibctx); /* closes `mine`; fd stays the caller's */
		return RSHARE_E_NOMEM;
	}
	/* The context owns `mine`; the provider contract gives it fd too. */
	rs_close_quietly(fd);
	rs_hw_ctx(ctx)->can_import = true; /* it just did */
	rs_hw_table_import(ctx);
	return RSHARE_OK;
}

static void hw_close(struct rs_ctx *ctx)
{
	/* Closes the command fd as well; objects live on in other processes
	 * that share the context, as the kernel keeps the ufile. */
	struct ibv_context *ib = rs_hw_ibctx(ctx);

	rs_hw_table_close(ctx);
	free_ctx(ctx);
	/* Inherited through fork: rdma-core has no close of this process's
	 * copy only. ibv_close_device would destroy the context's own kernel
	 * objects, which the parent's copy still uses (mlx5_free_context frees
	 * its UAR: a uobject of the one ufile), and the parent's close would
	 * later destroy whatever took that handle. Only this process's fd goes;
	 * the ibv_context's memory and mappings stay with the child. */
	if (ctx->forked)
		rs_close_quietly(ctx->fd);
	else
		rs_hw_verbs()->close_device(ib);
	ctx->fd = -1;
}

/* What this context can do with the rdma-core that is loaded. Sharing is
 * what rshare is for, so a kind counts only when it can be shared too: on
 * a provider without import (all but mlx5) no kind does. LEDGER: the
 * context has a ledger, so reuse of a handle freed through rshare is
 * caught (docs/hardware.md, "Checking levels"). */
static uint32_t hw_caps(struct rs_ctx *ctx)
{
	const struct rs_hw_verbs *v = rs_hw_verbs();
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	uint32_t caps = RSHARE_CAP_NATIVE;

	if (!hw->can_import)
		return caps;
	caps |= RSHARE_CAP_PD;
	if (hw->mlx5 && v->export_ok)
		caps |= RSHARE_CAP_VAR;
	if (v->reg_mr && v->dereg_mr && v->import_mr && v->unimport_mr)
		caps |= RSHARE_CAP_MR;
	if (v->import_dm && v->unimport_dm && rs_hw_dm_supported(ctx))
		caps |= RSHARE_CAP_DM;
	if ((caps & RSHARE_CAP_DM) && rs_hw_dm_mappable(ctx))
		caps |= RSHARE_CAP_DM_MAP;
	if (ctx->ledger)
		caps |= RSHARE_CAP_LEDGER;
	return caps;
}

const struct rs_provider rs_hw_provider = {
	.name = "hw",
	.id = RSHARE_PROVIDER_HW,
	.list = hw_list,
	.open = hw_open,
	.owns_fd = hw_owns_fd,
	.import = hw_import,
	.close = hw_close,
	.pd_alloc = rs_hw_pd_alloc,
	.pd_import = rs_hw_pd_import,
	.pd_unimport = rs_hw_pd_unimport,
	.pd_dealloc = rs_hw_pd_dealloc,
	.var_alloc = rs_hw_var_alloc,
	.var_export = rs_hw_var_export,
	.var_import = rs_hw_var_import,
	.var_unimport = rs_hw_var_unimport,
	.var_free = rs_hw_var_free,
	.caps = hw_caps,
	.mr_reg = rs_hw_mr_reg,
	.mr_import = rs_hw_mr_import,
	.mr_unimport = rs_hw_mr_unimport,
	.mr_dereg = rs_hw_mr_dereg,
	.dm_alloc = rs_hw_dm_alloc,
	.dm_import = rs_hw_dm_import,
	.dm_unimport = rs_hw_dm_unimport,
	.dm_free = rs_hw_dm_free,
	.dm_write = rs_hw_dm_write,
	.dm_read = rs_hw_dm_read,
	.dm_map = rs_hw_dm_map,
	.dm_unmap = rs_hw_dm_unmap,
};
