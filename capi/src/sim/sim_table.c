#include "sim/sim_table.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "rshare/rshare.h"
#include "util/error.h"

/* How long a live peer may hold the lock before we report BUSY rather than
 * hang: only a stopped or corrupting peer gets near it. */
#define SIM_LOCK_TIMEOUT_S 5

void sim_layout(uint32_t page_size, uint64_t *var_area_off, uint64_t *file_size)
{
	uint64_t off = (sizeof(struct sim_table) + page_size - 1) / page_size * page_size;

	*var_area_off = off;
	*file_size = off + (uint64_t)SIM_VAR_PAGES * page_size;
}

int sim_table_init(struct sim_table *t, uint32_t page_size, uint64_t table_id)
{
	pthread_mutexattr_t attr;
	int err;

	t->h.layout = SIM_LAYOUT;
	t->h.page_size = page_size;
	t->h.table_id = table_id;
	t->h.guid = SIM_GUID;
	t->h.max_objects = SIM_MAX_OBJECTS;
	t->h.var_pages = SIM_VAR_PAGES;
	sim_layout(page_size, &t->h.var_area_off, &t->h.file_size);
	t->next_serial = 1;
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	err = pthread_mutex_init(&t->lock.mutex, &attr);
	pthread_mutexattr_destroy(&attr);
	if (err)
		return rs_fail(RSHARE_E_IO, err, "cannot initialise the simulated table lock");
	t->h.magic = SIM_MAGIC; /* last: a half-made table is never recognised */
	return RSHARE_OK;
}

/* After a holder died mid-update: drop what cannot be an object and make
 * the page map agree with the VARs that exist. Every update is ordered so
 * that this recovers it (an object's type is written last, cleared first). */
static void sim_repair(struct sim_table *t)
{
	t->free_hint = 0;
	memset(t->page_used, 0, sizeof(t->page_used));
	for (uint32_t i = 0; i < SIM_MAX_OBJECTS; i++) {
		struct sim_obj *o = &t->objs[i];

		if (o->type == SIM_VAR && o->page_id < SIM_VAR_PAGES &&
		    !t->page_used[o->page_id])
			t->page_used[o->page_id] = 1;
		else if (o->type != SIM_PD)
			o->type = SIM_FREE;
	}
}

static int sim_map(struct sim_view *v, struct sim_table **out)
{
	struct sim_table *expected = NULL;
	void *p = mmap(NULL, v->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, v->fd, 0);

	if (p == MAP_FAILED)
		return rs_fail(RSHARE_E_IO, errno, "cannot map the simulated object table");
	/* Two threads may get here at once: one mapping wins. */
	if (!atomic_compare_exchange_strong(&v->map, &expected, (struct sim_table *)p)) {
		munmap(p, v->map_len);
		p = expected;
	}
	*out = p;
	return RSHARE_OK;
}

void sim_view_unmap(struct sim_view *v)
{
	struct sim_table *t = atomic_exchange(&v->map, NULL);

	if (t)
		munmap(t, v->map_len);
}

int sim_lock(struct sim_view *v, struct sim_table **out)
{
	struct sim_table *t = atomic_load_explicit(&v->map, memory_order_acquire);
	struct timespec until;
	int err;

	if (!t) {
		int status = sim_map(v, &t);
		if (status)
			return status;
	}
	/* The uncontended case takes no clock reading: only a wait needs a
	 * deadline. */
	err = pthread_mutex_trylock(&t->lock.mutex);
	if (err == EBUSY) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SIM_LOCK_TIMEOUT_S;
		err = pthread_mutex_timedlock(&t->lock.mutex, &until);
	}
	*out = t;
	if (err == EOWNERDEAD) {
		sim_repair(t);
		pthread_mutex_consistent(&t->lock.mutex);
		return RSHARE_OK;
	}
	if (err == ETIMEDOUT)
		return rs_fail(RSHARE_E_BUSY, err,
			       "simulated object table locked by another process for %d s",
			       SIM_LOCK_TIMEOUT_S);
	if (err)
		return rs_fail(RSHARE_E_IO, err,
			       "simulated object table lock is unusable (corrupted by a peer?)");
	return RSHARE_OK;
}

void sim_unlock(struct sim_table *t)
{
	pthread_mutex_unlock(&t->lock.mutex);
}

static const char *type_name(uint32_t type)
{
	return type == SIM_PD ? "PD" : "VAR";
}

int sim_obj_alloc(struct sim_view *v, uint32_t type, uint32_t flags,
		  uint32_t *handle, uint64_t *serial, uint32_t *page_id)
{
	struct sim_table *t;
	uint32_t i, start, page = 0;
	int status = sim_lock(v, &t);

	if (status)
		return status;
	/* Lowest free handle first, as the kernel's ID allocator does; the
	 * hint skips the run of used ones. A hint a peer scribbled on is only
	 * a starting point: the scan wraps round before calling it full. */
	start = t->free_hint < SIM_MAX_OBJECTS ? t->free_hint : 0;
	for (i = start; i < SIM_MAX_OBJECTS && t->objs[i].type != SIM_FREE; i++)
		;
	if (i == SIM_MAX_OBJECTS) {
		for (i = 0; i < start && t->objs[i].type != SIM_FREE; i++)
			;
		if (i == start)
			i = SIM_MAX_OBJECTS;
	}
	if (i == SIM_MAX_OBJECTS) {
		status = rs_fail(RSHARE_E_NOMEM, ENOSPC,
				 "simulated object table is full (%u objects)",
				 SIM_MAX_OBJECTS);
		goto out;
	}
	if (type == SIM_VAR) {
		while (page < SIM_VAR_PAGES && t->page_used[page])
			page++;
		if (page == SIM_VAR_PAGES) {
			status = rs_fail(RSHARE_E_NOMEM, ENOSPC,
					 "all %u simulated VAR pages are in use",
					 SIM_VAR_PAGES);
			goto out;
		}
		t->page_used[page] = 1;
	}
	t->objs[i].page_id = page;
	t->objs[i].flags = flags;
	t->objs[i].serial = t->next_serial++;
	/* Publish last, and keep the compiler from hoisting it: a holder that
	 * dies here must leave a table sim_repair() can make whole. */
	atomic_signal_fence(memory_order_release);
	t->objs[i].type = type;
	t->free_hint = i + 1;
	*handle = i;
	*serial = t->objs[i].serial;
	*page_id = page;
out:
	sim_unlock(t);
	return status;
}

/* With the lock held: the object named by (type, handle, serial), or NULL. */
static struct sim_obj *find(struct sim_table *t, uint32_t type, uint32_t handle,
			    uint64_t serial)
{
	struct sim_obj *o;

	if (handle >= SIM_MAX_OBJECTS)
		return NULL;
	o = &t->objs[handle];
	if (o->type != type || o->serial != serial ||
	    (type == SIM_VAR && o->page_id >= SIM_VAR_PAGES))
		return NULL;
	return o;
}

static int not_found(uint32_t type, uint32_t handle, uint64_t serial)
{
	return rs_fail(RSHARE_E_NOT_FOUND, ENOENT,
		       "simulated table has no %s with handle %u (serial %llu): "
		       "it was freed or never existed",
		       type_name(type), handle, (unsigned long long)serial);
}

int sim_obj_lookup(struct sim_view *v, uint32_t type, uint32_t handle,
		   uint64_t serial, uint32_t *page_id)
{
	struct sim_table *t;
	struct sim_obj *o;
	int status = sim_lock(v, &t);

	if (status)
		return status;
	o = find(t, type, handle, serial);
	if (o)
		*page_id = o->page_id;
	sim_unlock(t);
	return o ? RSHARE_OK : not_found(type, handle, serial);
}

int sim_obj_free(struct sim_view *v, uint32_t type, uint32_t handle, uint64_t serial)
{
	struct sim_table *t;
	struct sim_obj *o;
	int status = sim_lock(v, &t);

	if (status)
		return status;
	o = find(t, type, handle, serial);
	if (o) {
		o->type = SIM_FREE; /* unpublish first */
		atomic_signal_fence(memory_order_release);
		if (handle < t->free_hint)
			t->free_hint = handle;
		if (type == SIM_VAR)
			t->page_used[o->page_id] = 0;
	}
	sim_unlock(t);
	return o ? RSHARE_OK : not_found(type, handle, serial);
}
