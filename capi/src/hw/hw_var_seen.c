/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What a context has seen of VARs. The kernel cannot be asked about a VAR
 * (mlx5dv_var_import makes no call), and handles, mmap offsets and pages
 * are all reused lowest-free, so a VAR blob is checked against the only
 * other witness there is: this context's own record of the VAR at that
 * offset.
 *
 * Every VAR gets a random nonce when it is allocated, carried in its blobs'
 * serial field; it means nothing to the kernel, but it tells two VARs that
 * had the same offset apart. Per offset the record keeps the last VAR this
 * context held there, and whether this context freed it:
 *
 *   freed here, blob has its nonce          stale: refused
 *   freed here, blob has another nonce      a VAR allocated since: allowed
 *   held here, blob has the same nonce      the same VAR: allowed
 *   held here, blob has another nonce       refused: one of the two is stale
 *                                           (unimport the held one if it was
 *                                           freed elsewhere)
 * Without nonces (0: a blob of an older rshare) the page id stands in.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "hw/hw_internal.h"
#include "util/error.h"

uint64_t rs_hw_var_nonce(void)
{
	static _Atomic uint64_t counter;
	uint64_t n = 0;

	if (getrandom(&n, sizeof(n), GRND_NONBLOCK) != (ssize_t)sizeof(n)) {
		/* No entropy yet (early boot): unique enough within a host. */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		n = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
		    (uint64_t)getpid() << 40 ^ atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ULL;
	}
	return n ? n : 1;
}

/* Called locked: the record for off, else (make) a free one, reusing
 * records of freed VARs first (they only refine the check), else NULL. */
static struct rs_hw_seen *record(struct rs_hw_ctx *hw, uint64_t off, bool make)
{
	struct rs_hw_seen *unused = NULL, *dead = NULL;

	for (size_t i = 0; i < RS_HW_SEEN_MAX; i++) {
		struct rs_hw_seen *s = &hw->seen[i];

		if (s->used && s->mmap_off == off)
			return s;
		if (!s->used && !unused)
			unused = s;
		else if (s->used && !s->live && !dead)
			dead = s;
	}
	return make ? (unused ? unused : dead) : NULL;
}

static bool same_var(const struct rs_hw_seen *s, const struct rs_var_info *var)
{
	if (s->serial && var->serial)
		return s->serial == var->serial;
	return s->page_id == var->page_id;
}

void rs_hw_seen_live(const struct rs_ctx *ctx, const struct rs_var_info *var)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct rs_hw_seen *s;

	pthread_mutex_lock(&hw->lock);
	s = record(hw, var->mmap_off, true);
	if (s && s->used && s->live && same_var(s, var))
		s->refs++;
	else if (s)
		*s = (struct rs_hw_seen){ .mmap_off = var->mmap_off, .serial = var->serial,
					  .page_id = var->page_id, .refs = 1, .live = true,
					  .used = true };
	/* All records held by live VARs: this one goes unrecorded, and the
	 * kernel's mmap entry is the only check left for it. */
	pthread_mutex_unlock(&hw->lock);
}

void rs_hw_seen_unimport(const struct rs_ctx *ctx, const struct rs_var_info *var)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct rs_hw_seen *s;

	pthread_mutex_lock(&hw->lock);
	s = record(hw, var->mmap_off, false);
	/* The last handle gone without a destroy seen: nothing is known. */
	if (s && s->live && same_var(s, var) && --s->refs == 0)
		*s = (struct rs_hw_seen){ 0 };
	pthread_mutex_unlock(&hw->lock);
}

void rs_hw_seen_freed(const struct rs_ctx *ctx, const struct rs_var_info *var)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct rs_hw_seen *s;

	pthread_mutex_lock(&hw->lock);
	s = record(hw, var->mmap_off, true);
	if (s)
		*s = (struct rs_hw_seen){ .mmap_off = var->mmap_off, .serial = var->serial,
					  .page_id = var->page_id, .used = true };
	pthread_mutex_unlock(&hw->lock);
}

int rs_hw_seen_check(const struct rs_ctx *ctx, const struct rs_var_info *var,
		     const char *what)
{
	struct rs_hw_ctx *hw = rs_hw_ctx(ctx);
	struct rs_hw_seen *s, seen = { 0 };
	bool same;

	pthread_mutex_lock(&hw->lock);
	s = record(hw, var->mmap_off, false);
	if (s)
		seen = *s;
	pthread_mutex_unlock(&hw->lock);
	if (!seen.used)
		return RSHARE_OK;
	same = same_var(&seen, var);
	if (!seen.live && same)
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "cannot %s VAR page %u at offset 0x%llx on %s: this context "
			       "has seen it freed", what, var->page_id,
			       (unsigned long long)var->mmap_off, ctx->name);
	if (!seen.live && !seen.serial && !var->serial)
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "cannot %s VAR page %u at offset 0x%llx on %s: this context "
			       "has seen the VAR there freed, and the blob carries nothing to "
			       "tell a newer VAR from it", what, var->page_id,
			       (unsigned long long)var->mmap_off, ctx->name);
	if (seen.live && !same)
		return rs_fail(RSHARE_E_NOT_FOUND, 0,
			       "cannot %s VAR page %u at offset 0x%llx on %s: this context "
			       "holds another VAR there (page %u), so one of the two is stale "
			       "(if the held one was freed elsewhere, unimport it first)",
			       what, var->page_id, (unsigned long long)var->mmap_off,
			       ctx->name, seen.page_id);
	return RSHARE_OK;
}
