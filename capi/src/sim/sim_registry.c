/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One view (struct sim_map) per table per process, found by the memfd's
 * (st_dev, st_ino) and checked against the table id in its header (inode
 * numbers wrap: same_table): however many contexts of a table this process
 * receives (a channel peer re-sending the same device, fork inheritance,
 * imports of a dup), the header is validated and the table mapped once.
 * Each context holds a reference; the last one to close unmaps the table
 * and frees the entry, so a process that sees many tables over time keeps
 * only the ones it still has open. The list is short (tables open at once in a process),
 * so a linear search is fine.
 *
 * Untrusted-memory rule (sim_table.h): the header is read once, by pread
 * into a local copy, and must match exactly what this library would have
 * made; afterwards only the entry's copy of the constants is used.
 *
 * Fork: the prepare handler takes the registry lock and every entry's local
 * mutex, so no thread is inside a table operation (and no thread of this
 * process holds a shared table lock) while the process is copied.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rshare/rshare.h"
#include "sim/sim_table.h"
#include "util/error.h"

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static struct sim_map *entries;

static void reg_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
	for (struct sim_map *m = entries; m; m = m->next)
		pthread_mutex_lock(&m->local);
}

static void reg_release(void)
{
	for (struct sim_map *m = entries; m; m = m->next)
		pthread_mutex_unlock(&m->local);
	pthread_mutex_unlock(&reg_lock);
}

/* After a fork both processes map what the parent mapped, through one
 * shared open file description. Each takes a description of its own with
 * the locks for its mappings, then drops the shared one, whose locks thus
 * last until both have theirs (sim_pages.c). */
static void after_fork(bool child)
{
	for (struct sim_map *m = entries; m; m = m->next)
		sim_pages_after_fork(m, child);
	reg_release();
}

static void reg_after_fork(void)
{
	after_fork(false);
}

static void reg_child(void)
{
	after_fork(true); /* another process: another holder value */
}

static void register_atfork(void)
{
	pthread_atfork(reg_prepare, reg_after_fork, reg_child);
}

static void lock_registry(void)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&reg_lock);
}

static struct sim_map *find_locked(const struct stat *st)
{
	for (struct sim_map *m = entries; m; m = m->next)
		if (m->st_dev == st->st_dev && m->st_ino == st->st_ino)
			return m;
	return NULL;
}

static struct sim_map *new_entry(const struct stat *st, const struct sim_header *h)
{
	struct sim_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->st_dev = st->st_dev;
	m->st_ino = st->st_ino;
	m->refs = 1;
	pthread_mutex_init(&m->local, NULL);
	m->page_size = h->page_size;
	m->table_id = h->table_id;
	m->map_len = h->var_area_off;
	m->var_area_off = h->var_area_off;
	m->dm_area_off = h->dm_area_off;
	m->ofd = -1;
	m->next = entries;
	entries = m;
	return m;
}

/* The header in hdr is what this library makes for this machine. */
static bool header_ok(const struct sim_header *hdr, const struct stat *st)
{
	struct sim_header want;

	sim_layout((uint32_t)sysconf(_SC_PAGESIZE), &want);
	want.table_id = hdr->table_id;
	return hdr->table_id != 0 && memcmp(hdr, &want, sizeof(want)) == 0 &&
	       (uint64_t)st->st_size == want.file_size;
}

/*
 * Is the file in fd (found by its inode) the table of entry m? Shmem inode
 * numbers are 32 bits and wrap, so a peer making memfds for long enough can
 * meet a table this process holds. Such a file is refused, never taken for
 * the entry's table: of another size its mapping would end early (SIGBUS;
 * the seals, checked by owns_fd, fix the size), and of another table id it
 * is another table, whose objects the entry's mapping would mix with its
 * own. Refused rather than given an entry of its own: two entries for one
 * file (a peer rewriting the id) would split one table's lock between two
 * views in this process. One pread of the id per adopt (not per import).
 * Nothing else of the header is read again: its constants were validated
 * at first sight, so a peer that damages them later cannot lock this
 * process out of a table it holds.
 */
static int same_table(const struct sim_map *m, int fd, const struct stat *st)
{
	uint64_t id;
	ssize_t got;

	if ((uint64_t)st->st_size != m->dm_area_off + SIM_DM_BYTES)
		return rs_fail(RSHARE_E_NODEV, 0,
			       "has the inode of a simulated table open here but "
			       "not its size");
	got = pread(fd, &id, sizeof(id), (off_t)offsetof(struct sim_header, table_id));
	if (got < 0)
		return rs_fail(RSHARE_E_IO, errno, "could not be read (the table header)");
	if (got != (ssize_t)sizeof(id))
		return rs_fail(RSHARE_E_NODEV, 0, "is too short to hold a simulated table");
	if (id != m->table_id)
		return rs_fail(RSHARE_E_NODEV, 0,
			       "has the inode of a simulated table open here (id "
			       "%016llx) but is another table (id %016llx): refused, so "
			       "the two are never mixed; close the first one's contexts",
			       (unsigned long long)m->table_id, (unsigned long long)id);
	return RSHARE_OK;
}

int sim_map_get(int fd, struct sim_map **out)
{
	struct sim_header hdr;
	struct stat st;
	struct sim_map *m;
	ssize_t got;
	int status;

	if (fstat(fd, &st) < 0)
		return rs_fail(RSHARE_E_IO, errno, "could not be examined (fstat)");
	lock_registry();
	m = find_locked(&st);
	if (m)
		m->refs++; /* held while its id is read, without the registry lock */
	pthread_mutex_unlock(&reg_lock);
	if (m) {
		status = same_table(m, fd, &st);
		if (status) {
			sim_map_put(m);
			return status;
		}
		*out = m;
		return RSHARE_OK;
	}
	/* First sight of this table here: validate its constants (owns_fd()
	 * checked the seals, which are never removed). */
	got = pread(fd, &hdr, sizeof(hdr), 0);
	if (got < 0)
		return rs_fail(RSHARE_E_IO, errno, "could not be read (the table header)");
	if (got != (ssize_t)sizeof(hdr))
		return rs_fail(RSHARE_E_NODEV, 0, "is too short to hold a simulated table");
	if (!header_ok(&hdr, &st))
		return rs_fail(RSHARE_E_NODEV, 0,
			       "holds a simulated table of another layout or a damaged one");
	lock_registry();
	m = find_locked(&st); /* another thread may have added it meanwhile */
	if (m && m->table_id != hdr.table_id) {
		pthread_mutex_unlock(&reg_lock);
		return rs_fail(RSHARE_E_NODEV, 0,
			       "has the inode of a simulated table open here (id "
			       "%016llx) but is another table (id %016llx): refused, so "
			       "the two are never mixed; close the first one's contexts",
			       (unsigned long long)m->table_id,
			       (unsigned long long)hdr.table_id);
	}
	if (m)
		m->refs++;
	else
		m = new_entry(&st, &hdr);
	pthread_mutex_unlock(&reg_lock);
	if (!m)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a simulated table view");
	*out = m;
	return RSHARE_OK;
}

int sim_map_add_new(int fd, struct sim_table *t, struct sim_map **out)
{
	struct stat st;
	struct sim_map *m;

	if (fstat(fd, &st) < 0)
		return rs_fail(RSHARE_E_IO, errno, "cannot stat the new simulated table");
	lock_registry();
	m = new_entry(&st, &t->h); /* our own header, not yet shared */
	if (m)
		m->t = t;
	pthread_mutex_unlock(&reg_lock);
	if (!m)
		return rs_fail(RSHARE_E_NOMEM, ENOMEM, "cannot allocate a simulated table view");
	*out = m;
	return RSHARE_OK;
}

void sim_map_put(struct sim_map *m)
{
	struct sim_map **pp;

	lock_registry();
	if (--m->refs > 0) {
		pthread_mutex_unlock(&reg_lock);
		return;
	}
	for (pp = &entries; *pp != m; pp = &(*pp)->next)
		;
	*pp = m->next;
	pthread_mutex_unlock(&reg_lock);
	if (m->t)
		munmap(m->t, m->map_len);
	if (m->ofd >= 0)
		close(m->ofd);
	pthread_mutex_destroy(&m->local);
	free(m);
}

#ifdef RSHARE_TEST_HOOKS
int sim_test_map_inject(int fd, uint64_t table_id, struct sim_map **out)
{
	struct sim_header h;
	struct stat st;

	if (fstat(fd, &st) < 0)
		return RSHARE_E_IO;
	sim_layout((uint32_t)sysconf(_SC_PAGESIZE), &h);
	h.table_id = table_id;
	lock_registry();
	*out = new_entry(&st, &h); /* first in the list: found before any other */
	pthread_mutex_unlock(&reg_lock);
	return *out ? RSHARE_OK : RSHARE_E_NOMEM;
}
#endif
