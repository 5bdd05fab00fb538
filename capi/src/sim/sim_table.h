/*
 * The simulated kernel object table.
 *
 * One table models one kernel "ufile": every context that shares its
 * command fd sees the same objects, a handle means something only inside
 * it, and it disappears when its last fd (and mapping) goes. It lives at the
 * start of a sealed memfd, followed by the VAR pages, so other processes
 * receive it as an ordinary fd and map VAR pages through it.
 *
 * Everything in the shared file is treated as untrusted after creation: a
 * peer may die holding the lock or scribble over the table. Constants are
 * validated once at import and then kept per process (struct sim_view);
 * mutable fields are range-checked on every read.
 */
#ifndef RSHARE_SIM_TABLE_H
#define RSHARE_SIM_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAGIC 0x3142415453485352ull /* "RSHSTAB1" as little-endian bytes */
#define SIM_LAYOUT 1
#define SIM_MAX_OBJECTS 1024u
#define SIM_VAR_PAGES 64u
#define SIM_GUID 0x02c0de5100000030ull /* sim0's node GUID */

enum sim_obj_type { SIM_FREE = 0, SIM_PD = 1, SIM_VAR = 2 };

struct sim_obj {
	uint32_t type;     /* enum sim_obj_type; anything else is corruption */
	uint32_t page_id;  /* VAR: its page */
	uint64_t serial;   /* creation serial: tells a reused handle apart */
	uint32_t flags;    /* VAR: allocation flags */
	uint32_t reserved;
};

/* The constants, written once by the creator before anyone else can see
 * the table, and validated by every importer. */
struct sim_header {
	uint64_t magic;
	uint32_t layout;
	uint32_t page_size;
	uint64_t table_id;
	uint64_t guid;
	uint32_t max_objects;
	uint32_t var_pages;
	uint64_t var_area_off;
	uint64_t file_size;
};

struct sim_table {
	struct sim_header h;
	/* shared state, under lock */
	union {
		pthread_mutex_t mutex; /* robust, process-shared */
		uint8_t pad[64];
	} lock;
	uint64_t next_serial;
	uint32_t free_hint; /* no free object below this index */
	uint32_t reserved;
	uint8_t page_used[SIM_VAR_PAGES];
	struct sim_obj objs[SIM_MAX_OBJECTS];
};

/* A process's validated view of one table. The table is mapped on first
 * use: a context that is only received and passed on (or closed) never
 * pays for the mapping. */
struct sim_view {
	_Atomic(struct sim_table *) map; /* NULL until the first table operation */
	int fd;
	size_t map_len;
	uint32_t page_size;
	uint64_t var_area_off;
	uint64_t table_id;
};

/* Layout of a table for this machine's page size. */
void sim_layout(uint32_t page_size, uint64_t *var_area_off, uint64_t *file_size);

/* Initialise a fresh, zeroed table. */
int sim_table_init(struct sim_table *t, uint32_t page_size, uint64_t table_id);

/* Lock the table (mapping it first if needed), repairing it if the previous
 * holder died. On success *t is the mapped table. */
int sim_lock(struct sim_view *v, struct sim_table **t);
void sim_unlock(struct sim_table *t);
/* Drop the mapping, if any. */
void sim_view_unmap(struct sim_view *v);

/* Table operations; each takes the lock itself. Handles are object indices.
 * NOT_FOUND when handle/serial/type do not name a live object. */
int sim_obj_alloc(struct sim_view *v, uint32_t type, uint32_t flags,
		  uint32_t *handle, uint64_t *serial, uint32_t *page_id);
int sim_obj_lookup(struct sim_view *v, uint32_t type, uint32_t handle,
		   uint64_t serial, uint32_t *page_id);
int sim_obj_free(struct sim_view *v, uint32_t type, uint32_t handle, uint64_t serial);

#endif
