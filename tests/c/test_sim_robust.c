/*
 * The simulated table against peers that misbehave: one killed (SIGKILL)
 * while holding the table lock, one killed mid-update, one stopped while
 * holding it, one that scribbles over the table, and one that tries to
 * shrink or grow the file. The survivors keep working with clear statuses.
 *
 * The misbehaving peers poke the shared file directly, so this test (and
 * only this one) includes the simulated table's private layout.
 */
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "sim/sim_table.h"

static struct sim_table *map_table(int fd)
{
	void *p = mmap(NULL, sizeof(struct sim_table), PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Fork a peer that locks the table, optionally damages it, tells us, then
 * waits to be killed or stopped. */
static pid_t locked_peer(int fd, void (*damage)(struct sim_table *))
{
	int p[2];
	char c;
	pid_t pid;

	if (pipe(p) < 0)
		exit(2);
	pid = fork();
	if (pid == 0) {
		struct sim_table *t = map_table(fd);
		if (!t || pthread_mutex_lock(&t->lock.mutex) != 0)
			_exit(1);
		if (damage)
			damage(t);
		if (write(p[1], "L", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	CHECK(read(p[0], &c, 1) == 1);
	close(p[0]);
	return pid;
}

static void half_made_var(struct sim_table *t)
{
	/* Died between taking a page and publishing the object, and left a
	 * second VAR claiming the same page plus garbage. */
	t->page_used[5] = 1;
	t->objs[900].type = 77;
	t->objs[901].type = SIM_VAR;
	t->objs[901].page_id = 9999;
}

static void kill_peer(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev, *imp;
	rshare_pd *pd, *pd2;
	rshare_var *vars[SIM_VAR_PAGES];
	struct sim_table *t;
	size_t len;
	int fd, n;

	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &fd));
	REQUIRE_OK(rshare_pd_alloc(dev, &pd));
	len = export_pd(pd, blob);

	/* 1. Killed while holding the lock: the next caller recovers it. */
	kill_peer(locked_peer(fd, NULL));
	CHECK_OK(rshare_pd_alloc(dev, &pd2));
	CHECK_OK(rshare_pd_free(pd2));
	CHECK_OK(rshare_pd_import(dev, blob, len, &pd2));
	CHECK_OK(rshare_pd_unimport(pd2));

	/* 2. Killed mid-update: the repair drops the half-made objects and
	 * frees the leaked page, so every VAR page can be had again. */
	kill_peer(locked_peer(fd, half_made_var));
	for (n = 0; n < (int)SIM_VAR_PAGES; n++)
		if (rshare_var_alloc(dev, 0, &vars[n]) != RSHARE_OK)
			break;
	CHECK(n == (int)SIM_VAR_PAGES);
	while (n--)
		CHECK_OK(rshare_var_free(vars[n]));
	CHECK_OK(rshare_pd_import(dev, blob, len, &pd2)); /* the good PD survived */
	CHECK_OK(rshare_pd_unimport(pd2));

	/* 3. A live peer that sits on the lock: BUSY after the timeout, not a
	 * hang; fine again once it is gone. */
	{
		pid_t pid = locked_peer(fd, NULL);
		kill(pid, SIGSTOP);
		CHECK_ST(rshare_pd_alloc(dev, &pd2), RSHARE_E_BUSY);
		CHECK(strstr(rshare_last_error(), "locked by another process") != NULL);
		kill_peer(pid);
		CHECK_OK(rshare_pd_alloc(dev, &pd2));
		CHECK_OK(rshare_pd_free(pd2));
	}

	/* 4. Scribbles: garbage objects are not found, never crash us. */
	t = map_table(fd);
	REQUIRE_OK(t ? 0 : RSHARE_E_IO);
	for (int i = 100; i < 200; i++) {
		t->objs[i].type = (uint32_t)i * 2654435761u;
		t->objs[i].page_id = 0xffffffffu - (uint32_t)i;
	}
	t->objs[150].type = SIM_VAR; /* a VAR on a page that does not exist */
	{
		unsigned char forged[RSHARE_BLOB_MAX];
		rshare_pd *fp;
		memcpy(forged, blob, len);
		/* Point the blob at a scribbled slot by re-exporting a PD we
		 * then damage: its type no longer says PD. */
		REQUIRE_OK(rshare_pd_alloc(dev, &fp));
		len = export_pd(fp, forged);
		{
			uint32_t h;
			REQUIRE_OK(rshare_pd_handle(fp, &h));
			t->objs[h].type = 12345;
		}
		CHECK_ST(rshare_pd_import(dev, forged, len, &pd2), RSHARE_E_NOT_FOUND);
		CHECK_ST(rshare_pd_free(fp), RSHARE_E_NOT_FOUND);
		CHECK_OK(rshare_pd_unimport(fp));
	}
	CHECK_OK(rshare_pd_alloc(dev, &pd2));
	CHECK_OK(rshare_pd_free(pd2));
	/* A scribbled allocation hint: still the lowest free handle, never a
	 * false "full". */
	t->free_hint = SIM_MAX_OBJECTS - 1;
	t->objs[SIM_MAX_OBJECTS - 1].type = SIM_PD;
	CHECK_OK(rshare_pd_alloc(dev, &pd2));
	{
		uint32_t h;
		CHECK_OK(rshare_pd_handle(pd2, &h));
		CHECK(h < 100); /* found by wrapping round, below the garbage */
	}
	CHECK_OK(rshare_pd_free(pd2));
	t->free_hint = 0xffffffffu;
	CHECK_OK(rshare_pd_alloc(dev, &pd2));
	CHECK_OK(rshare_pd_free(pd2));

	/* 5. The file cannot be shrunk or grown under anyone's mappings. */
	CHECK(ftruncate(fd, 4096) < 0 && errno == EPERM);
	CHECK(ftruncate(fd, 1 << 30) < 0 && errno == EPERM);

	/* 6. A damaged header: existing contexts keep their validated view,
	 * new imports are refused. */
	t->h.var_area_off = 12;
	CHECK_ST(rshare_device_import(fd, &imp), RSHARE_E_NODEV);
	{
		void *a;
		rshare_var *v;
		CHECK_OK(rshare_var_alloc(dev, 0, &v));
		CHECK_OK(rshare_var_map(v, &a));
		((volatile char *)a)[0] = 1;
		CHECK_OK(rshare_var_free(v));
	}
	munmap(t, sizeof(*t));

	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(dev));
	TEST_DONE();
}
