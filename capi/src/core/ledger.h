/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-context ledger: rshare's own record of which kernel handles it
 * freed, for tables where the kernel cannot tell a reused handle from the
 * object a blob names (hardware; docs/hardware.md, "Checking levels").
 *
 * A ledger is a small sealed memfd made with the context (hw_ledger.c) and
 * sent with its command fd on every rshare path (channel, broker; a fork
 * inherits it). It holds one serial per kernel handle of the table: the
 * kernel hands every object kind its handle from one space per ufile, so a
 * handle names one object at a time whatever its kind. VARs, whose handle
 * rshare cannot see, are keyed by their mmap entry instead (a second set of
 * serials; see enum rs_ledger_space). Every rshare free bumps the serial of
 * the freed object's key before the kernel destroy; a blob carries the
 * serial its object had when it was made or imported, and an import into a
 * context with the ledger refuses a blob whose serial is not the key's
 * current one, before the kernel is asked and again after it answered
 * (RSHARE_E_NOT_FOUND), and a free refuses a handle whose
 * object's serial moved on since the handle got it (freed elsewhere: the
 * destroy could reach the object now at that handle).
 *
 * The memfd is untrusted shared memory exactly as sim0's table is
 * (sim_table.h's rule): any process holding it can write any byte at any
 * time. Its constants are validated once when it is adopted and kept
 * locally; a serial is read once per use, and any value is a valid one
 * (a forged serial can refuse a good blob or accept a stale one, never
 * crash or reach outside the file).
 */
#ifndef RSHARE_CORE_LEDGER_H
#define RSHARE_CORE_LEDGER_H

#include <stdbool.h>
#include <stdint.h>

struct rs_ledger;

/* A new ledger for a table whose anchor (the object that names it: on
 * hardware the sentinel PD) is (anchor, anchor_id). RSHARE_OK or a status
 * with the cause recorded. */
int rs_ledger_create(uint64_t guid, uint32_t anchor, uint32_t anchor_id,
		     struct rs_ledger **out);
/* Adopt a ledger received with a context of device guid: takes fd in every
 * case. NULL when fd is not a well-formed ledger of that device (the
 * context then has no ledger; nothing is recorded: not an error). */
struct rs_ledger *rs_ledger_adopt(int fd, uint64_t guid);
void rs_ledger_close(struct rs_ledger *l);
/* The memfd, to send with the context's fd. */
int rs_ledger_fd(const struct rs_ledger *l);
/* The anchor recorded by the creator (untrusted: verify it). */
void rs_ledger_anchor(const struct rs_ledger *l, uint32_t *anchor, uint32_t *anchor_id);

/* The ledger keeps two sets of serials, each keyed by what names one live
 * object of a context at a time:
 *   HANDLES  the kernel handle (PD, MR, DM: one handle space per ufile);
 *   MMAP     a VAR's mmap entry (its kernel handle is private to libmlx5,
 *            the mmap offset is in every VAR blob; rs_ledger_mmap_key).
 * A serial moves on with every rshare free of the object it names. */
enum rs_ledger_space { RS_LEDGER_HANDLES = 0, RS_LEDGER_MMAP = 1 };

/* The MMAP key of a VAR at mmap_off: false when the offset is not one the
 * ledger covers (then the VAR keeps only the checks of a context without
 * a ledger). */
bool rs_ledger_mmap_key(uint64_t mmap_off, uint32_t *key);

/* What every import reads, inline (two lookups per import in a context
 * with a ledger: before the kernel is asked and after it answered). The
 * first member of struct rs_ledger (hw_ledger.c), set when the file is
 * mapped: the two serial arrays of the file and their validated lengths,
 * local constants (the file's own counts are never read again). */
struct rs_ledger_serials {
	uint32_t *handles, nhandles;
	uint32_t *mmap, nmmap;
};

/* Does the ledger cover key in space? Then *serial is its current serial
 * (one relaxed load of the shared word: any value is a valid one). */
static inline bool rs_ledger_get(const struct rs_ledger *l, enum rs_ledger_space space,
				 uint32_t key, uint32_t *serial)
{
	const struct rs_ledger_serials *s = (const struct rs_ledger_serials *)l;
	uint32_t *p;

	if (!s)
		return false;
	if (space == RS_LEDGER_MMAP) {
		if (key >= s->nmmap)
			return false;
		p = &s->mmap[key];
	} else {
		if (key >= s->nhandles)
			return false;
		p = &s->handles[key];
	}
	*serial = __atomic_load_n(p, __ATOMIC_RELAXED);
	return true;
}
/* Before a free: move key's serial on (blobs made before no longer
 * import); *before is what it was, for rs_ledger_undo if the free fails.
 * With expect (the serial the freeing handle got), only if the serial is
 * still *expect: otherwise nothing moves and *before is the serial found
 * (the object was freed elsewhere, or another free of it is in flight).
 * A refused free writing nothing keeps two failing frees of one object
 * from undoing into each other's bump (which left the serial moved on for
 * an object that lives). False if the ledger does not cover key. */
bool rs_ledger_bump(struct rs_ledger *l, enum rs_ledger_space space, uint32_t key,
		    const uint32_t *expect, uint32_t *before);
/* A free that failed: the serial goes back unless someone moved it since. */
void rs_ledger_undo(struct rs_ledger *l, enum rs_ledger_space space, uint32_t key,
		    uint32_t before);

#endif
