/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-context ledger's memfd (core/ledger.h): two pages, sealed against
 * any change of size as sim0's table is (SIM_SEALS), read and written only
 * through sim0's shared-memory accessors (SH_LOAD/SH_STORE and atomic
 * read-modify-writes), its constants validated once at adoption.
 *
 * Layout (little-endian host order; both ends are this library on one host):
 *   u64 magic "RSHLEDG1", u32 layout (2), u32 slots (RS_LEDGER_SLOTS),
 *   u64 guid of the device, u32 anchor handle, u32 anchor id (mlx5: the
 *   sentinel PD's number), u32 mmap_slots (RS_LEDGER_MMAP_SLOTS), u32 0,
 *   then u32 serial[slots], one per kernel handle, and u32
 *   mmap_serial[mmap_slots], one per VAR mmap entry (rs_ledger_mmap_key).
 * Layout 1 (one page, no mmap serials) is refused: such a ledger is dropped
 * and the context keeps the checks of one without a ledger.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/ledger.h"
#include "rshare/rshare.h"
#include "sim/sim_table.h" /* SH_LOAD, SH_STORE, SIM_SEALS: the same rules */
#include "util/error.h"
#include "util/fdutil.h"

#define LEDGER_MAGIC 0x314744454c485352ull /* "RSHLEDG1" as little-endian bytes */
#define LEDGER_LAYOUT 2u
#define LEDGER_SIZE 8192u
#define LEDGER_HEAD 40u
/* mlx5 hands a context's mmap entries out lowest-free, so a few hundred
 * cover every VAR a context can usefully hold (rs_ledger_mmap_key). */
#define RS_LEDGER_MMAP_SLOTS 256u
#define RS_LEDGER_SLOTS ((LEDGER_SIZE - LEDGER_HEAD) / 4u - RS_LEDGER_MMAP_SLOTS)

struct ledger_file {
	uint64_t magic;
	uint32_t layout;
	uint32_t slots;
	uint64_t guid;
	uint32_t anchor;
	uint32_t anchor_id;
	uint32_t mmap_slots;
	uint32_t reserved;
	uint32_t serial[RS_LEDGER_SLOTS];
	uint32_t mmap_serial[RS_LEDGER_MMAP_SLOTS];
};
_Static_assert(sizeof(struct ledger_file) == LEDGER_SIZE, "two pages, no padding");

struct rs_ledger {
	struct rs_ledger_serials s; /* first: ledger.h's inline rs_ledger_get */
	int fd;
	struct ledger_file *f;
	/* The validated constants, never read from the file again. */
	uint32_t anchor, anchor_id;
};
_Static_assert(offsetof(struct rs_ledger, s) == 0, "ledger.h reads the serials first");

static struct rs_ledger *wrap(int fd)
{
	struct rs_ledger *l = calloc(1, sizeof(*l));
	void *p;

	if (!l)
		return NULL;
	p = mmap(NULL, LEDGER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		free(l);
		return NULL;
	}
	l->fd = fd;
	l->f = p;
	l->s = (struct rs_ledger_serials){ l->f->serial, RS_LEDGER_SLOTS, l->f->mmap_serial,
					   RS_LEDGER_MMAP_SLOTS };
	return l;
}

int rs_ledger_create(uint64_t guid, uint32_t anchor, uint32_t anchor_id,
		     struct rs_ledger **out)
{
	int fd = memfd_create("rshare-ledger", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct rs_ledger *l;

	if (fd < 0)
		return rs_fail(RSHARE_E_IO, errno, "memfd_create for the ledger failed");
	if (ftruncate(fd, LEDGER_SIZE) < 0 || fcntl(fd, F_ADD_SEALS, SIM_SEALS) < 0 ||
	    !(l = wrap(fd))) {
		int err = errno;

		rs_close_quietly(fd);
		return rs_fail(RSHARE_E_IO, err, "cannot make the ledger");
	}
	/* Nobody else holds the fd yet: plain stores, the magic last. */
	l->f->layout = LEDGER_LAYOUT;
	l->f->slots = RS_LEDGER_SLOTS;
	l->f->mmap_slots = RS_LEDGER_MMAP_SLOTS;
	l->f->guid = guid;
	l->f->anchor = l->anchor = anchor;
	l->f->anchor_id = l->anchor_id = anchor_id;
	__atomic_store_n(&l->f->magic, LEDGER_MAGIC, __ATOMIC_RELEASE);
	*out = l;
	return RSHARE_OK;
}

struct rs_ledger *rs_ledger_adopt(int fd, uint64_t guid)
{
	struct rs_ledger *l;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	/* A memfd of exactly LEDGER_SIZE that can never shrink: a mapping of it
	 * never loses its end (no SIGBUS), whatever a peer does. */
	if (seals < 0 || (seals & SIM_SEALS) != SIM_SEALS || (seals & F_SEAL_WRITE) ||
	    fstat(fd, &st) < 0 || st.st_size != LEDGER_SIZE || !(l = wrap(fd))) {
		rs_close_untrusted(fd); /* another process's fd: its close may block */
		return NULL;
	}
	if (SH_LOAD(l->f->magic) != LEDGER_MAGIC || SH_LOAD(l->f->layout) != LEDGER_LAYOUT ||
	    SH_LOAD(l->f->slots) != RS_LEDGER_SLOTS ||
	    SH_LOAD(l->f->mmap_slots) != RS_LEDGER_MMAP_SLOTS || SH_LOAD(l->f->guid) != guid) {
		rs_ledger_close(l);
		return NULL;
	}
	l->anchor = SH_LOAD(l->f->anchor);
	l->anchor_id = SH_LOAD(l->f->anchor_id);
	return l;
}

void rs_ledger_close(struct rs_ledger *l)
{
	if (!l)
		return;
	munmap(l->f, LEDGER_SIZE);
	rs_close_quietly(l->fd);
	free(l);
}

int rs_ledger_fd(const struct rs_ledger *l)
{
	return l->fd;
}

void rs_ledger_anchor(const struct rs_ledger *l, uint32_t *anchor, uint32_t *anchor_id)
{
	*anchor = l->anchor;
	*anchor_id = l->anchor_id;
}

/*
 * A VAR's key: its entry in the ucontext's mmap xarray. mlx5_ib inserts
 * every VAR (and dynamic UAR: one per ibv_open_device/ibv_import_device)
 * entry with rdma_user_mmap_entry_insert_range() over page offsets
 * (9 << 16) .. (255 << 16) + 0xffff, which takes the lowest free one
 * (drivers/infiniband/core/ib_core_uverbs.c; hw/mlx5/main.c
 * mlx5_rdma_user_mmap_entry_insert, alloc_var_entry, alloc_uar_entry), and
 * tells user space mlx5_entry_to_mmap_offset() of it: for the first 256
 * entries the offset page is 0x900 + index. The entry is removed only when
 * the VAR is destroyed and its last mapping gone, so while a VAR lives no
 * other VAR of the context has its offset, and a freed VAR's offset comes
 * back for the next one: the offset, not the device-wide page_id (mlx5's VAR bitmap
 * is shared by every context of the device, and can be thousands long),
 * names one VAR per context at a time and is in every blob.
 */
bool rs_ledger_mmap_key(uint64_t mmap_off, uint32_t *key)
{
	uint64_t page = (uint64_t)getpagesize(), index;

	if (mmap_off % page)
		return false;
	index = mmap_off / page;
	if (index < 0x900 || index >= 0x900 + RS_LEDGER_MMAP_SLOTS)
		return false;
	*key = (uint32_t)(index - 0x900);
	return true;
}

/* The serial of key in space, or NULL if the ledger does not cover it. */
static uint32_t *slot(const struct rs_ledger *l, enum rs_ledger_space space, uint32_t key)
{
	if (!l)
		return NULL;
	if (space == RS_LEDGER_MMAP)
		return key < RS_LEDGER_MMAP_SLOTS ? &l->f->mmap_serial[key] : NULL;
	return key < RS_LEDGER_SLOTS ? &l->f->serial[key] : NULL;
}

bool rs_ledger_bump(struct rs_ledger *l, enum rs_ledger_space space, uint32_t key,
		    const uint32_t *expect, uint32_t *before)
{
	uint32_t *p = slot(l, space, key);

	if (!p)
		return false;
	if (!expect) {
		*before = __atomic_fetch_add(p, 1, __ATOMIC_RELAXED);
		return true;
	}
	*before = *expect; /* on a mismatch the CAS stores the serial found */
	__atomic_compare_exchange_n(p, before, *expect + 1, false, __ATOMIC_RELAXED,
				    __ATOMIC_RELAXED);
	return true;
}

void rs_ledger_undo(struct rs_ledger *l, enum rs_ledger_space space, uint32_t key,
		    uint32_t before)
{
	uint32_t *p = slot(l, space, key), bumped = before + 1;

	if (p)
		__atomic_compare_exchange_n(p, &bumped, before, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
}
