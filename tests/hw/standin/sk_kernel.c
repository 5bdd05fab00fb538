/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The stand-in's kernel: per-ufile object table and device-wide state
 * (see sk_kernel.h). */
#include "sk_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deliberately unlike rshare's own simulated device (other magic, no seals,
 * other memfd name), so rshare's sim provider never claims a ufile. */
#define SK_MAGIC 0x534b2d55464c4532ULL /* "SK-UFLE2" */
#define SK_VERSION 3u

enum { ENTRY_FREE = 0, ENTRY_LIVE = 1, ENTRY_DEAD = 2 /* destroyed, still mapped */ };

struct sk_obj {
	uint32_t type; /* enum sk_type; SK_NONE = free handle */
	uint32_t mrs;  /* SK_PD: MRs registered on it */
	struct sk_obj_info info;
};

struct sk_entry {
	uint32_t state;
	uint32_t page_id; /* a VAR's device page; 0 for a UAR's entry */
	uint32_t maps;
};

/* The ufile's first pages. An object's handle is its index in objs. */
struct sk_ufile {
	uint64_t magic;
	uint32_t version;
	uint32_t dev_index;
	pthread_mutex_t lock; /* process-shared, robust */
	struct sk_entry entries[SK_MMAP_ENTRIES];
	/* Device memory, by chunk: DM_FREE, DM_LIVE or DM_DEAD (destroyed,
	 * still mapped); at a DM's first chunk its run and its mappings. */
	uint8_t dm_used[SK_DM_CHUNKS];
	uint8_t dm_run[SK_DM_CHUNKS];
	uint16_t dm_maps[SK_DM_CHUNKS];
	struct sk_obj objs[SK_MAX_OBJS];
};
_Static_assert(sizeof(struct sk_ufile) <= SK_TABLE_SIZE, "table fits its pages");

/* What a device hands out across all its ufiles. */
/* A deregistered MR's mkey, kept for the next registration of its size
 * class and access (drivers/infiniband/hw/mlx5/mr.c: the cache entry is
 * keyed by access and descriptor count; dereg pushes, reg pops LIFO). */
struct sk_cached_mkey {
	uint32_t key;   /* lkey == rkey */
	uint32_t order; /* size class: log2 of the page count, rounded up */
	uint32_t access;
};

struct sk_devstate {
	uint8_t var_page[SK_VAR_PAGES];
	uint8_t pdn[SK_PDNS];
	uint8_t mkey[SK_MKEYS];
	uint32_t variant; /* mkey variant byte: the next new MR's */
	uint32_t ncached;
	struct sk_cached_mkey cache[SK_MKEY_CACHE]; /* a stack: [ncached - 1] is the top */
};

static const char zero_page[SK_PAGE];

/* ---- Device-wide state ---------------------------------------------------- */

/* The shared file: a header, then one sk_devstate per device. */
struct sk_devfile {
	uint64_t magic;
	pthread_mutex_t lock; /* process-shared, robust */
	struct sk_devstate dev[SK_NDEVICES];
	uint32_t env_gen; /* moved by sk_env_changed() (atomic) */
};

static pthread_once_t dev_once = PTHREAD_ONCE_INIT;
static struct sk_devfile *dev_file;

/* Map the device state; the first process to see the file initialises its
 * lock under flock. No descriptor stays open. */
static void dev_map(void)
{
	const char *path = getenv("STANDIN_DEVICE_STATE");
	int fd = path && *path ? open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)
			       : memfd_create("rdma-standin-devices", MFD_CLOEXEC);
	struct sk_devfile *f;
	struct stat st;

	if (fd < 0 || flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
		abort(); /* the test set-up is broken: nothing sensible to do */
	if (st.st_size < (off_t)sizeof(*f) && ftruncate(fd, sizeof(*f)) < 0)
		abort();
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		abort();
	if (f->magic != SK_MAGIC) {
		pthread_mutexattr_t attr;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
		pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&f->lock, &attr);
		pthread_mutexattr_destroy(&attr);
		f->magic = SK_MAGIC;
	}
	flock(fd, LOCK_UN);
	close(fd);
	dev_file = f;
}

static struct sk_devstate *dev_lock(uint32_t index)
{
	pthread_once(&dev_once, dev_map);
	if (pthread_mutex_lock(&dev_file->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&dev_file->lock);
	return &dev_file->dev[index];
}

static void dev_unlock(void)
{
	pthread_mutex_unlock(&dev_file->lock);
}

/* Lowest free index of a byte map, taken; n if none. */
static uint32_t take(uint8_t *map, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n && map[i]; i++)
		;
	if (i < n)
		map[i] = 1;
	return i;
}

/* ---- The ufile ------------------------------------------------------------ */

/* ---- Test hooks ----------------------------------------------------------- */

static const char *const env_names[SK_ENV_COUNT] = {
	[SK_ENV_DISASSOCIATED] = "STANDIN_DISASSOCIATED",
	[SK_ENV_ALLOW_DISASSOC_DESTROY] = "RDMAV_ALLOW_DISASSOC_DESTROY",
	[SK_ENV_NO_VAR_SUPPORT] = "STANDIN_NO_VAR_SUPPORT",
	[SK_ENV_MAX_DM_SIZE] = "STANDIN_MAX_DM_SIZE",
	[SK_ENV_VAR_FAULT] = "STANDIN_VAR_FAULT",
	[SK_ENV_EXPORT_SIZES_GROWN] = "STANDIN_EXPORT_SIZES_GROWN",
	[SK_ENV_FAIL_IMPORT] = "STANDIN_FAIL_IMPORT",
	[SK_ENV_FAIL_ALLOC_PD] = "STANDIN_FAIL_ALLOC_PD",
	[SK_ENV_IMPORT_PAUSE] = "STANDIN_IMPORT_PAUSE",
};
static const char *env_value[SK_ENV_COUNT];
static uint32_t env_read_at = UINT32_MAX; /* env_gen when env_value was read */
static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

/* A getenv() scans the whole environment: one per command cost more than
 * rshare's own checks on the import paths rshare-bench measures (a real
 * rdma-core has no such hooks; docs/hardware.md, "What the identity checks
 * cost"). So the hooks are read once, and again only when the device
 * file's generation moved. The values are getenv()'s own pointers: glibc
 * never frees a string setenv() replaced. */
const char *sk_env(enum sk_env which)
{
	uint32_t gen;

	pthread_once(&dev_once, dev_map);
	gen = __atomic_load_n(&dev_file->env_gen, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&env_read_at, __ATOMIC_ACQUIRE) != gen) {
		pthread_mutex_lock(&env_lock);
		for (int i = 0; i < SK_ENV_COUNT; i++)
			__atomic_store_n(&env_value[i], getenv(env_names[i]), __ATOMIC_RELAXED);
		__atomic_store_n(&env_read_at, gen, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&env_lock);
	}
	return __atomic_load_n(&env_value[which], __ATOMIC_RELAXED);
}

void sk_env_changed(void)
{
	pthread_once(&dev_once, dev_map);
	__atomic_fetch_add(&dev_file->env_gen, 1, __ATOMIC_RELEASE);
}

void sk_import_pause(void)
{
	const char *how = sk_env(SK_ENV_IMPORT_PAUSE);
	int wfd, rfd;
	char c = 0;

	if (how && sscanf(how, "%d,%d", &wfd, &rfd) == 2 && write(wfd, &c, 1) == 1)
		while (read(rfd, &c, 1) < 0 && errno == EINTR)
			;
}

int sk_check_alive(void)
{
	return sk_env(SK_ENV_DISASSOCIATED) ? EIO : 0;
}

static void lock(struct sk_ufile *uf)
{
	/* A process that died holding the lock left at most one object slot
	 * half-written, which is still a valid state. */
	if (pthread_mutex_lock(&uf->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&uf->lock);
}

static void unlock(struct sk_ufile *uf)
{
	pthread_mutex_unlock(&uf->lock);
}

static struct sk_context *sk_of(struct ibv_context *ctx)
{
	return (struct sk_context *)((char *)ctx - offsetof(struct sk_context, vctx.context));
}

int sk_ufile_create(uint32_t dev_index, int *fd_out, struct sk_ufile **uf_out)
{
	pthread_mutexattr_t attr;
	struct sk_ufile *uf;
	int fd = memfd_create("rdma-standin-ufile", MFD_CLOEXEC), err;

	if (fd < 0)
		return errno;
	if (ftruncate(fd, SK_UFILE_SIZE) < 0 || !(uf = sk_ufile_map(fd))) {
		err = errno;
		close(fd);
		return err;
	}
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&uf->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	uf->version = SK_VERSION;
	uf->dev_index = dev_index;
	uf->magic = SK_MAGIC; /* nobody else holds the fd yet: no ordering needed */
	*fd_out = fd;
	*uf_out = uf;
	return 0;
}

int sk_ufile_probe(int fd, uint32_t *dev_index)
{
	struct sk_ufile head;
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return EINVAL;
	if (st.st_size != (off_t)SK_UFILE_SIZE)
		return ENODEV;
	if (pread(fd, &head, offsetof(struct sk_ufile, lock), 0) !=
	    (ssize_t)offsetof(struct sk_ufile, lock))
		return ENODEV;
	if (head.magic != SK_MAGIC || head.version != SK_VERSION)
		return ENODEV;
	*dev_index = head.dev_index;
	return 0;
}

struct sk_ufile *sk_ufile_map(int fd)
{
	void *p = mmap(NULL, SK_TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void sk_ufile_unmap(struct sk_ufile *uf)
{
	munmap(uf, SK_TABLE_SIZE);
}

/* The lowest free mmap entry of the ufile (rdma_user_mmap_entry_insert_range
 * in drivers/infiniband/core/ib_core_uverbs.c: the first free index of the
 * ucontext's mmap_xa from the range's start), or SK_MMAP_ENTRIES. */
static uint32_t free_entry(const struct sk_ufile *uf)
{
	uint32_t e;

	for (e = 0; e < SK_MMAP_ENTRIES && uf->entries[e].state != ENTRY_FREE; e++)
		;
	return e;
}

/* The context's non-cached UAR: an mmap entry with no VAR page (its
 * doorbell page is never mapped here). Called locked. */
static int uar_create(struct sk_ufile *uf, struct sk_obj_info *info)
{
	uint32_t e = free_entry(uf);

	if (e == SK_MMAP_ENTRIES)
		return ENOMEM;
	uf->entries[e] = (struct sk_entry){ ENTRY_LIVE, 0, 0 };
	info->entry = e;
	return 0;
}

/* A VAR: a device page (ENOSPC when none is left, as alloc_var_entry), an
 * mmap entry of this ufile, its backing zeroed. Called locked. */
static int var_create(struct ibv_context *ctx, struct sk_ufile *uf, struct sk_obj_info *info)
{
	struct sk_devstate *ds;
	uint32_t e = free_entry(uf), page;

	if (e == SK_MMAP_ENTRIES)
		return ENOMEM;
	ds = dev_lock(uf->dev_index);
	page = take(ds->var_page, SK_VAR_PAGES);
	dev_unlock();
	if (page == SK_VAR_PAGES)
		return ENOSPC;
	/* A VAR page is handed out zeroed: no data of its previous user
	 * leaks to the next. */
	if (pwrite(ctx->cmd_fd, zero_page, SK_PAGE, (off_t)SK_ENTRY_OFF(e)) != SK_PAGE) {
		int err = errno ? errno : EIO;
		ds = dev_lock(uf->dev_index);
		ds->var_page[page] = 0;
		dev_unlock();
		return err;
	}
	uf->entries[e] = (struct sk_entry){ ENTRY_LIVE, SK_VAR_PAGE_ID0 + page, 0 };
	info->entry = e;
	info->page_id = SK_VAR_PAGE_ID0 + page;
	return 0;
}

/* Release entry e and its device page. Called locked. */
static void entry_release(struct sk_ufile *uf, uint32_t e)
{
	struct sk_devstate *ds;

	if (uf->entries[e].page_id) {
		ds = dev_lock(uf->dev_index);
		ds->var_page[uf->entries[e].page_id - SK_VAR_PAGE_ID0] = 0;
		dev_unlock();
	}
	uf->entries[e] = (struct sk_entry){ 0 };
}

static int pd_create(struct sk_ufile *uf, struct sk_obj_info *info)
{
	struct sk_devstate *ds = dev_lock(uf->dev_index);
	uint32_t n = take(ds->pdn, SK_PDNS);

	dev_unlock();
	if (n == SK_PDNS)
		return ENOMEM;
	info->pdn = n + 1; /* mlx5 never hands out PD number 0 */
	return 0;
}

/* The mkey cache's size class of a registration: pages, rounded up to a
 * power of two (mlx5_ib sizes its cache entries by descriptor count). */
static uint32_t mkey_order(uint64_t length)
{
	uint64_t pages = (length + SK_PAGE - 1) / SK_PAGE;
	uint32_t order = 0;

	while ((1ull << order) < pages)
		order++;
	return order;
}

/* The newest cached mkey of this class and access, taken off the cache;
 * 0 if none. Called with the device state locked. */
static uint32_t mkey_cache_pop(struct sk_devstate *ds, uint32_t order, uint32_t access)
{
	for (uint32_t i = ds->ncached; i-- > 0;) {
		uint32_t key = ds->cache[i].key;

		if (ds->cache[i].order != order || ds->cache[i].access != access)
			continue;
		memmove(&ds->cache[i], &ds->cache[i + 1],
			(ds->ncached - i - 1) * sizeof(ds->cache[0]));
		ds->ncached--;
		return key;
	}
	return 0;
}

/* Dereg: the mkey goes back to the cache (its index stays taken); a full
 * cache gives its oldest entry's index back to the device. */
static void mkey_cache_push(struct sk_devstate *ds, uint32_t key, uint32_t order,
			    uint32_t access)
{
	if (ds->ncached == SK_MKEY_CACHE) {
		ds->mkey[(ds->cache[0].key >> 8) - 1] = 0;
		memmove(&ds->cache[0], &ds->cache[1], (SK_MKEY_CACHE - 1) * sizeof(ds->cache[0]));
		ds->ncached--;
	}
	ds->cache[ds->ncached++] = (struct sk_cached_mkey){ key, order, access };
}

/* An MR's mkey: from the cache when one of the same size class and access
 * was deregistered (the same key comes back), else a new index lowest-free
 * with the variant byte from a device counter, as mlx5_ib makes them
 * (lkey == rkey). Called locked. */
static int mr_create(struct sk_ufile *uf, struct sk_obj_info *info)
{
	struct sk_obj *pd;
	struct sk_devstate *ds;
	uint32_t idx, key, cached;

	if (info->pd >= SK_MAX_OBJS)
		return ENOENT;
	pd = &uf->objs[info->pd];
	if (pd->type != SK_PD)
		return pd->type == SK_NONE ? ENOENT : EINVAL;
	if (info->length == 0)
		return EINVAL;
	ds = dev_lock(uf->dev_index);
	cached = mkey_cache_pop(ds, mkey_order(info->length), info->access);
	idx = cached ? 0 : take(ds->mkey, SK_MKEYS);
	key = cached ? 0 : ds->variant++ & 0xff;
	dev_unlock();
	if (!cached && idx == SK_MKEYS)
		return ENOMEM;
	info->lkey = info->rkey = cached ? cached : ((idx + 1) << 8) | key;
	pd->mrs++;
	return 0;
}

enum { DM_FREE = 0, DM_LIVE = 1, DM_DEAD = 2 };

static int dm_create(struct sk_ufile *uf, struct sk_obj_info *info)
{
	uint64_t need = (info->length + SK_DM_CHUNK - 1) / SK_DM_CHUNK;
	uint32_t start, run = 0;

	if (info->length == 0 || need > SK_DM_CHUNKS)
		return info->length == 0 ? EINVAL : ENOMEM;
	for (start = 0; start < SK_DM_CHUNKS; start++) {
		run = uf->dm_used[start] ? 0 : run + 1;
		if (run == need)
			break;
	}
	if (run != need)
		return ENOMEM;
	start = start + 1 - (uint32_t)need;
	memset(&uf->dm_used[start], DM_LIVE, need);
	uf->dm_run[start] = (uint8_t)need;
	uf->dm_maps[start] = 0;
	info->offset = SK_DM_OFF + (uint64_t)start * SK_DM_CHUNK;
	return 0;
}

int sk_obj_create(struct ibv_context *ctx, enum sk_type type, struct sk_obj_info *info,
		  uint32_t *handle)
{
	struct sk_ufile *uf = sk_of(ctx)->uf;
	uint32_t h;
	int err = sk_check_alive();

	if (err)
		return err;
	lock(uf);
	for (h = 0; h < SK_MAX_OBJS && uf->objs[h].type != SK_NONE; h++)
		;
	if (h == SK_MAX_OBJS) {
		err = ENOMEM;
		goto out;
	}
	switch (type) {
	case SK_PD: err = pd_create(uf, info); break;
	case SK_VAR: err = var_create(ctx, uf, info); break;
	case SK_MR: err = mr_create(uf, info); break;
	case SK_DM: err = dm_create(uf, info); break;
	case SK_UAR: err = uar_create(uf, info); break;
	default: err = EINVAL;
	}
	if (err)
		goto out;
	uf->objs[h] = (struct sk_obj){ .type = type, .info = *info };
	*handle = h;
out:
	unlock(uf);
	return err;
}

/* Called locked. */
static int find(struct sk_ufile *uf, enum sk_type type, uint32_t handle)
{
	if (handle >= SK_MAX_OBJS || uf->objs[handle].type == SK_NONE)
		return ENOENT;
	return uf->objs[handle].type == type ? 0 : EINVAL;
}

int sk_obj_lookup(struct ibv_context *ctx, enum sk_type type, uint32_t handle,
		  struct sk_obj_info *info)
{
	struct sk_ufile *uf = sk_of(ctx)->uf;
	int err = sk_check_alive();

	if (err)
		return err;
	lock(uf);
	err = find(uf, type, handle);
	if (!err && info)
		*info = uf->objs[handle].info;
	unlock(uf);
	return err;
}

/* Called locked, for an existing object of its type. */
static int destroy_locked(struct sk_ufile *uf, struct sk_obj *o)
{
	struct sk_devstate *ds;
	uint32_t e;

	switch (o->type) {
	case SK_PD:
		if (o->mrs)
			return EBUSY;
		ds = dev_lock(uf->dev_index);
		ds->pdn[o->info.pdn - 1] = 0;
		dev_unlock();
		break;
	case SK_VAR:
	case SK_UAR:
		/* The entry leaves the xarray now (new mmaps fail); it and its
		 * page go when the last mapping does. */
		e = o->info.entry;
		if (uf->entries[e].maps)
			uf->entries[e].state = ENTRY_DEAD;
		else
			entry_release(uf, e);
		break;
	case SK_MR:
		uf->objs[o->info.pd].mrs--;
		ds = dev_lock(uf->dev_index);
		mkey_cache_push(ds, o->info.lkey, mkey_order(o->info.length), o->info.access);
		dev_unlock();
		break;
	case SK_DM:
		/* The memory goes when the last mapping does (mlx5_ib_dealloc_dm
		 * removes the mmap entry; mlx5_ib_dm_mmap_free frees the MEMIC). */
		e = (uint32_t)((o->info.offset - SK_DM_OFF) / SK_DM_CHUNK);
		memset(&uf->dm_used[e], uf->dm_maps[e] ? DM_DEAD : DM_FREE, uf->dm_run[e]);
		break;
	}
	o->type = SK_NONE;
	return 0;
}

int sk_obj_destroy(struct ibv_context *ctx, enum sk_type type, uint32_t handle)
{
	struct sk_ufile *uf = sk_of(ctx)->uf;
	int err = sk_check_alive();

	if (err)
		return err;
	lock(uf);
	err = find(uf, type, handle);
	if (!err)
		err = destroy_locked(uf, &uf->objs[handle]);
	unlock(uf);
	return err;
}

int sk_dm_map(struct ibv_context *ctx, uint64_t offset)
{
	struct sk_ufile *uf = sk_of(ctx)->uf;
	uint64_t c = (offset - SK_DM_OFF) / SK_DM_CHUNK;
	int err = sk_check_alive();

	if (err)
		return err;
	lock(uf);
	if (offset < SK_DM_OFF || c >= SK_DM_CHUNKS || uf->dm_used[c] != DM_LIVE ||
	    !uf->dm_run[c] || uf->dm_maps[c] == UINT16_MAX)
		err = EINVAL;
	else
		uf->dm_maps[c]++;
	unlock(uf);
	return err;
}

void sk_dm_unmap(struct ibv_context *ctx, uint64_t offset)
{
	struct sk_ufile *uf = sk_of(ctx)->uf;
	uint64_t c = (offset - SK_DM_OFF) / SK_DM_CHUNK;

	lock(uf);
	if (offset >= SK_DM_OFF && c < SK_DM_CHUNKS && uf->dm_maps[c] &&
	    --uf->dm_maps[c] == 0 && uf->dm_used[c] == DM_DEAD)
		memset(&uf->dm_used[c], DM_FREE, uf->dm_run[c]);
	unlock(uf);
}

int sk_entry_map(struct sk_ufile *uf, uint32_t entry)
{
	int err = sk_check_alive();

	if (err)
		return err;
	lock(uf);
	if (entry >= SK_MMAP_ENTRIES || uf->entries[entry].state != ENTRY_LIVE)
		err = EINVAL;
	else
		uf->entries[entry].maps++;
	unlock(uf);
	return err;
}

void sk_entry_unmap(struct sk_ufile *uf, uint32_t entry)
{
	lock(uf);
	if (entry < SK_MMAP_ENTRIES && uf->entries[entry].maps &&
	    --uf->entries[entry].maps == 0 && uf->entries[entry].state == ENTRY_DEAD)
		entry_release(uf, entry);
	unlock(uf);
}
