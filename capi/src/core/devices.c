/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Device listing, open/import/close and the device accessors. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "internal.h"
#include "ledger.h"
#include "providers.h"
#include "util/copyout.h"
#include "util/error.h"
#include "util/fdutil.h"

#define MAX_LISTED 64

/* The last scan, for rshare_devices_get(). */
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct rs_devinfo scanned[MAX_LISTED];
static size_t nscanned;
static bool have_scan;

static size_t scan_all(struct rs_devinfo *out, size_t cap)
{
	size_t total = 0;

	for (size_t i = 0; i < RS_NPROVIDERS; i++) {
		size_t n = 0;
		if (rs_providers[i]->list(out + total, cap - total, &n) != RSHARE_OK)
			continue; /* a broken provider hides its devices only */
		total += n < cap - total ? n : cap - total;
	}
	return total;
}

/* A fork during another thread's scan must not leave the child a lock
 * nobody will release. */
static void scan_prepare(void)
{
	pthread_mutex_lock(&scan_lock);
}

static void scan_release(void)
{
	pthread_mutex_unlock(&scan_lock);
}

static void register_scan_atfork(void)
{
	pthread_atfork(scan_prepare, scan_release, scan_release);
}

static void lock_scan(void)
{
	pthread_once(&atfork_once, register_scan_atfork);
	pthread_mutex_lock(&scan_lock);
}

static void rescan_locked(void)
{
	nscanned = scan_all(scanned, MAX_LISTED);
	have_scan = true;
}

int rshare_devices_count(size_t *count)
{
	if (!count)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "count is NULL"));
	lock_scan();
	rescan_locked();
	*count = nscanned;
	pthread_mutex_unlock(&scan_lock);
	return RSHARE_OK;
}

int rshare_devices_get(size_t index, char *name, size_t cap, uint64_t *guid,
		       int *provider)
{
	struct rs_devinfo info;
	size_t n;

	if (!name && cap)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "name is NULL but cap is %zu", cap));
	lock_scan();
	if (!have_scan)
		rescan_locked();
	n = nscanned;
	if (index < n)
		info = scanned[index];
	pthread_mutex_unlock(&scan_lock);
	if (index >= n)
		RS_RETURN(rs_fail(RSHARE_E_NOT_FOUND, 0,
				  "no device at index %zu (%zu listed)", index, n));
	if (name || cap) {
		size_t len = strlen(info.name);
		if (cap < len + 1)
			RS_RETURN(rs_fail(RSHARE_E_NOSPACE, 0,
					  "name buffer of %zu bytes too small, %zu needed",
					  cap, len + 1));
		memcpy(name, info.name, len + 1);
	}
	if (guid)
		*guid = info.guid;
	if (provider)
		*provider = info.provider;
	return RSHARE_OK;
}

/* Wrap an opened context in a new device handle; on failure closes it. */
static int publish_device(struct rs_ctx *ctx, void **out)
{
	struct rs_device *dev = malloc(sizeof(*dev));
	struct rs_slot *slot;
	int status;

	if (!dev) {
		ctx->ops->close(ctx);
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a device");
	}
	status = rs_slot_reserve(&slot);
	if (status) {
		ctx->ops->close(ctx);
		free(dev);
		return status;
	}
	dev->ctx = *ctx;
	slot->u.dev = dev;
	*out = rs_slot_publish(slot, RS_OBJ_DEVICE);
	return RSHARE_OK;
}

static int open_named(const char *name, void **out)
{
	struct rs_devinfo list[MAX_LISTED];

	for (size_t p = 0; p < RS_NPROVIDERS; p++) {
		size_t n = 0;
		if (rs_providers[p]->list(list, MAX_LISTED, &n) != RSHARE_OK)
			continue;
		for (size_t i = 0; i < n && i < MAX_LISTED; i++) {
			struct rs_ctx ctx = { .fd = -1, .ledger_in = -1 };
			int status;

			if (strcmp(list[i].name, name) != 0)
				continue;
			status = rs_providers[p]->open(name, &ctx);
			if (status)
				return status;
			ctx.ops = rs_providers[p];
			return publish_device(&ctx, out);
		}
	}
	return rs_fail(RSHARE_E_NODEV, 0, "no device named \"%s\"%s", name,
		       strcmp(name, "sim0") == 0 ? " (RSHARE_SIM=0 hides it)" : "");
}

int rshare_device_open(const char *name, rshare_device **out)
{
	struct rs_devinfo first;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	if (name && *name)
		RS_RETURN(open_named(name, (void **)out));
	/* Default: the first hardware device, else the simulated one. */
	if (scan_all(&first, 1) == 0)
		RS_RETURN(rs_fail(RSHARE_E_NODEV, 0,
				  "no RDMA device found and the simulated device is "
				  "hidden by RSHARE_SIM=0"));
	RS_RETURN(open_named(first.name, (void **)out));
}

int rs_device_adopt(int fd, int ledger_fd, int user_fd, void **out)
{
	const struct rs_provider *owner = &rs_hw_provider;
	struct rs_ctx ctx = { .fd = -1, .ledger_in = ledger_fd };
	int status;

	/* A provider that recognises the fd gets it; anything else is for
	 * rdma-core to accept or refuse. */
	for (size_t p = 0; p < RS_NPROVIDERS; p++) {
		if (rs_providers[p]->owns_fd(fd)) {
			owner = rs_providers[p];
			break;
		}
	}
	status = owner->import(fd, &ctx);
	if (ctx.ledger_in >= 0)
		rs_close_untrusted(ctx.ledger_in); /* not taken: no use for it */
	if (status) {
		/* A received fd is anyone's: its close may block (closer.c). */
		if (user_fd >= 0)
			rs_close_quietly(fd);
		else
			rs_close_untrusted(fd);
		/* Providers phrase their causes as predicates without a fd
		 * number ("is not a ..."): theirs is our duplicate, which
		 * means nothing to the caller. */
		return user_fd >= 0 ? rs_fail_context(status, "fd %d ", user_fd)
				    : rs_fail_context(status, "the device fd received ");
	}
	ctx.ops = owner;
	return publish_device(&ctx, out); /* closes the context, fd too, on failure */
}

int rs_ctx_fds(const struct rs_ctx *ctx, int fds[2])
{
	fds[0] = ctx->fd;
	if (!ctx->ledger)
		return 1;
	fds[1] = rs_ledger_fd(ctx->ledger);
	return 2;
}

int rs_device_adopt_received(int fd, int ledger_fd, void **out)
{
	if (ledger_fd >= 0 && !rs_fd_may_be_device(ledger_fd)) {
		rs_close_untrusted(ledger_fd); /* not a memfd: no ledger */
		ledger_fd = -1;
	}
	if (!rs_fd_may_be_device(fd)) {
		rs_close_untrusted(fd);
		if (ledger_fd >= 0)
			rs_close_untrusted(ledger_fd);
		return rs_fail(RSHARE_E_NODEV, 0, "the device fd received is not a device context "
			       "(neither a character device nor a sealed memfd)");
	}
	return rs_device_adopt(fd, ledger_fd, -1, out);
}

int rshare_device_import(int fd, rshare_device **out)
{
	int dup;

	if (!out)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "out is NULL"));
	if (fd < 0)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "fd %d is negative", fd));
	dup = rs_dup_cloexec(fd);
	if (dup < 0)
		RS_RETURN(rs_fail(errno == EBADF ? RSHARE_E_INVAL : RSHARE_E_IO, errno,
				  "cannot duplicate fd %d", fd));
	RS_RETURN(rs_device_adopt(dup, -1, fd, (void **)out));
}

/* Pin dev and copy what an accessor needs. */
#define WITH_DEVICE(handle, slot)                                 \
	struct rs_slot *slot;                                     \
	int pin_status_ = rs_pin((handle), RS_OBJ_DEVICE, &slot); \
	if (pin_status_)                                          \
		RS_RETURN(pin_status_)

int rshare_device_fd(const rshare_device *dev, int *fd)
{
	if (!fd)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "fd is NULL"));
	WITH_DEVICE(dev, slot);
	*fd = slot->u.dev->ctx.fd;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_device_name(const rshare_device *dev, char *buf, size_t cap, size_t *len)
{
	int status;

	if (!len)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "len is NULL"));
	WITH_DEVICE(dev, slot);
	status = rs_copy_str(slot->u.dev->ctx.name, strlen(slot->u.dev->ctx.name),
			     buf, cap, len);
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_device_guid(const rshare_device *dev, uint64_t *guid)
{
	if (!guid)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "guid is NULL"));
	WITH_DEVICE(dev, slot);
	*guid = slot->u.dev->ctx.guid;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_device_provider(const rshare_device *dev, int *provider)
{
	if (!provider)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "provider is NULL"));
	WITH_DEVICE(dev, slot);
	*provider = slot->u.dev->ctx.ops->id;
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_device_caps(const rshare_device *dev, uint32_t *caps)
{
	if (!caps)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "caps is NULL"));
	WITH_DEVICE(dev, slot);
	*caps = rs_ctx_caps(&slot->u.dev->ctx);
	rs_unpin(slot);
	return RSHARE_OK;
}

int rshare_device_native(const rshare_device *dev, void **ibv_context)
{
	struct rs_ctx *ctx;
	int status = RSHARE_OK;

	if (!ibv_context)
		RS_RETURN(rs_fail(RSHARE_E_INVAL, 0, "ibv_context is NULL"));
	WITH_DEVICE(dev, slot);
	ctx = &slot->u.dev->ctx;
	if (!(rs_ctx_caps(ctx) & RSHARE_CAP_NATIVE))
		status = rs_fail(RSHARE_E_UNSUPPORTED, 0,
				 "device %s (provider %s) has no native rdma-core context",
				 ctx->name, ctx->ops->name);
	else
		*ibv_context = ctx->native;
	rs_unpin(slot);
	RS_RETURN(status);
}

int rshare_device_close(rshare_device *dev)
{
	struct rs_slot *slot;
	struct rs_device *d;
	bool inherited = false;
	uint64_t pins;
	int status;

	/* A device inherited through fork: first let go, here only, of the
	 * objects the child inherited with it (fork.c). */
	if (rs_pin(dev, RS_OBJ_DEVICE, &slot) == RSHARE_OK) {
		inherited = rs_slot_inherited(slot);
		d = slot->u.dev;
		rs_unpin(slot);
		if (inherited)
			rs_release_inherited(d);
	}
	status = rs_retire_if_idle(dev, RS_OBJ_DEVICE, &slot, &pins);

	/* Every live PD, VAR and DM of the device holds a pin on it (an MR
	 * holds its PD), as does every call on it in progress. */
	if (status == RSHARE_E_BUSY)
		RS_RETURN(rs_fail(RSHARE_E_BUSY, 0,
				  "%llu PD/VAR/DM handle(s) or call(s) in progress are still live "
				  "on this device; free or unimport them first",
				  (unsigned long long)pins));
	if (status)
		RS_RETURN(status);
	d = slot->u.dev;
	rs_retire_commit(slot);
	d->ctx.forked = inherited;
	d->ctx.ops->close(&d->ctx);
	free(d);
	return RSHARE_OK;
}
