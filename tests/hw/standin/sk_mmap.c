/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stand-in kernel's mmap() of a cmd_fd, linked into test programs.
 *
 * On real hardware mmap(cmd_fd, mmap_off) goes to uverbs, which looks the
 * offset up among the context's mmap entries: a destroyed VAR's offset
 * answers EINVAL, and an entry (with its device page) is released only when
 * its last mapping goes. A memfd cannot refuse an offset, and librshare
 * calls mmap() itself (the stand-in libraries, loaded RTLD_LOCAL, never see
 * it), so the test program defines mmap/munmap: the executable's definition
 * wins symbol lookup for every library in the process, librshare included.
 * mmaps of a ufile's VAR area consult the stand-in's table
 * (sk_entry_map/sk_entry_unmap, compiled in from sk_kernel.c); every other
 * call goes straight to the next definition (libc, or a sanitizer's).
 *
 * STANDIN_VAR_FAULT set: a VAR page is mapped PROT_NONE, so any read or
 * write of it faults (SIGSEGV). On a NIC the page is the device's doorbell
 * (uncached MMIO): a test in this mode proves that a path maps it without
 * ever touching it. Built also as libstandin_mmap.so, for LD_PRELOAD into
 * programs that cannot link it (the rshare command).
 *
 * Mappings are tracked per process; a process that ends without unmapping
 * drops its counts in a destructor. The kernel counts a mapping a fork()
 * copies (rdma_umap_open in drivers/infiniband/core/ib_core_uverbs.c) and
 * drops it at the child's munmap, exec or exit; the stand-in cannot see an
 * exec, so it counts no copy, and the child's munmap of an inherited
 * mapping drops nothing (the parent's keep the entry, as on a real
 * kernel). One left by a killed process keeps its entry forever: the
 * stand-in has no hook on the end of a process.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "sk_kernel.h"

#define SK_MAX_MAPS 128

struct sk_map {
	void *addr;
	size_t len;
	struct sk_ufile *uf; /* the table, mapped for as long as this mapping lives */
	uint32_t entry;
	bool inherited; /* a fork child's copy: never counted */
};

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sk_map maps[SK_MAX_MAPS];

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);

static mmap_fn real_mmap(void)
{
	static mmap_fn fn;

	if (!fn)
		fn = (mmap_fn)dlsym(RTLD_NEXT, "mmap");
	return fn;
}

static munmap_fn real_munmap(void)
{
	static munmap_fn fn;

	if (!fn)
		fn = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
	return fn;
}

/* Is (fd, off) a VAR entry of a ufile? Its entry index, and the table. */
static bool var_entry(int fd, off_t off, uint32_t *entry, struct sk_ufile **uf)
{
	uint32_t dev;
	void *p;

	if (fd < 0 || off < (off_t)SK_ENTRY_OFF(0) || off >= (off_t)SK_DM_OFF ||
	    off % SK_PAGE || sk_ufile_probe(fd, &dev) != 0)
		return false;
	p = real_mmap()(NULL, SK_TABLE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return false;
	*uf = p;
	*entry = (uint32_t)(((uint64_t)off - SK_ENTRY_OFF(0)) / SK_PAGE);
	return true;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	struct sk_ufile *uf;
	uint32_t entry;
	void *p;
	int err, slot;

	if (!var_entry(fd, off, &entry, &uf))
		return real_mmap()(addr, len, prot, flags, fd, off);
	err = len == SK_PAGE && (flags & MAP_SHARED) ? sk_entry_map(uf, entry) : EINVAL;
	if (err) {
		real_munmap()(uf, SK_TABLE_SIZE);
		errno = err;
		return MAP_FAILED;
	}
	p = real_mmap()(addr, len, sk_env(SK_ENV_VAR_FAULT) ? PROT_NONE : prot, flags, fd,
			off);
	pthread_mutex_lock(&maps_lock);
	for (slot = 0; slot < SK_MAX_MAPS && maps[slot].addr; slot++)
		;
	if (p != MAP_FAILED && slot < SK_MAX_MAPS)
		maps[slot] = (struct sk_map){ p, len, uf, entry, false };
	pthread_mutex_unlock(&maps_lock);
	if (p == MAP_FAILED || slot == SK_MAX_MAPS) {
		err = p == MAP_FAILED ? errno : ENOMEM;
		if (p != MAP_FAILED)
			real_munmap()(p, len);
		sk_entry_unmap(uf, entry);
		real_munmap()(uf, SK_TABLE_SIZE);
		errno = err;
		return MAP_FAILED;
	}
	return p;
}

/* Forget the tracked mapping at addr (if any) and drop its count. */
static void untrack(void *addr, size_t len)
{
	struct sk_map m = { 0 };

	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < SK_MAX_MAPS; i++) {
		if (maps[i].addr && maps[i].addr == addr && maps[i].len == len) {
			m = maps[i];
			maps[i] = (struct sk_map){ 0 };
			break;
		}
	}
	pthread_mutex_unlock(&maps_lock);
	if (m.addr) {
		if (!m.inherited)
			sk_entry_unmap(m.uf, m.entry);
		real_munmap()(m.uf, SK_TABLE_SIZE);
	}
}

int munmap(void *addr, size_t len)
{
	int r = real_munmap()(addr, len);

	if (r == 0)
		untrack(addr, len);
	return r;
}

static void maps_prepare(void)
{
	pthread_mutex_lock(&maps_lock);
}

static void maps_parent(void)
{
	pthread_mutex_unlock(&maps_lock);
}

static void maps_child(void)
{
	for (int i = 0; i < SK_MAX_MAPS; i++)
		maps[i].inherited = maps[i].addr != NULL;
	pthread_mutex_unlock(&maps_lock);
}

__attribute__((constructor)) static void maps_atfork(void)
{
	pthread_atfork(maps_prepare, maps_parent, maps_child);
}

__attribute__((destructor)) static void drop_all(void)
{
	for (int i = 0; i < SK_MAX_MAPS; i++)
		if (maps[i].addr)
			untrack(maps[i].addr, maps[i].len);
}
