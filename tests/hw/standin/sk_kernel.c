/* The stand-in's per-ufile object table (see sk_kernel.h). */
#include "sk_kernel.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Deliberately unlike rshare's own simulated device (other magic, no seals,
 * other memfd name), so rshare's sim provider never claims a ufile. */
#define SK_MAGIC 0x534b2d55464c4531ULL /* "SK-UFLE1" */
#define SK_VERSION 1u

struct sk_obj {
	uint32_t type; /* enum sk_type; SK_NONE = free handle */
	uint32_t page; /* VAR page index for SK_VAR */
};

/* The ufile's first page. An object's handle is its index in objs. */
struct sk_ufile {
	uint64_t magic;
	uint32_t version;
	uint32_t dev_index;
	pthread_mutex_t lock; /* process-shared, robust */
	uint8_t page_used[SK_VAR_PAGES];
	struct sk_obj objs[SK_MAX_OBJS];
};
_Static_assert(sizeof(struct sk_ufile) <= SK_PAGE, "table fits its page");

static const char zero_page[SK_PAGE];

static struct sk_ufile *uf_of(struct ibv_context *ctx)
{
	return ((struct sk_context *)ctx)->uf;
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
	if (st.st_size != SK_UFILE_SIZE)
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
	void *p = mmap(NULL, SK_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void sk_ufile_unmap(struct sk_ufile *uf)
{
	munmap(uf, SK_PAGE);
}

int sk_obj_create(struct ibv_context *ctx, enum sk_type type, uint32_t *handle,
		  uint32_t *page)
{
	struct sk_ufile *uf = uf_of(ctx);
	uint32_t h, p = 0;
	int err = 0;

	lock(uf);
	for (h = 0; h < SK_MAX_OBJS && uf->objs[h].type != SK_NONE; h++)
		;
	if (h == SK_MAX_OBJS) {
		err = ENOMEM;
		goto out;
	}
	if (type == SK_VAR) {
		for (p = 0; p < SK_VAR_PAGES && uf->page_used[p]; p++)
			;
		if (p == SK_VAR_PAGES) {
			err = ENOMEM;
			goto out;
		}
		/* A VAR page is handed out zeroed: no data of its previous
		 * user leaks to the next. */
		ssize_t n = pwrite(ctx->cmd_fd, zero_page, SK_PAGE,
				   (off_t)SK_PAGE * (1 + p));
		if (n != (ssize_t)SK_PAGE) {
			err = n < 0 ? errno : EIO;
			goto out;
		}
		uf->page_used[p] = 1;
		*page = p;
	}
	uf->objs[h].type = type;
	uf->objs[h].page = p;
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
		  uint32_t *page)
{
	struct sk_ufile *uf = uf_of(ctx);
	int err;

	lock(uf);
	err = find(uf, type, handle);
	if (!err && page)
		*page = uf->objs[handle].page;
	unlock(uf);
	return err;
}

int sk_obj_destroy(struct ibv_context *ctx, enum sk_type type, uint32_t handle)
{
	struct sk_ufile *uf = uf_of(ctx);
	int err;

	lock(uf);
	err = find(uf, type, handle);
	if (!err) {
		if (type == SK_VAR)
			uf->page_used[uf->objs[handle].page] = 0;
		uf->objs[handle].type = SK_NONE;
	}
	unlock(uf);
	return err;
}
