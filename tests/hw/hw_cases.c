/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* Devices and PDs through the hardware provider. */
#include <errno.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <stddef.h>
#include <linux/kcmp.h>
#include <linux/seccomp.h>
#include <linux/filter.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"

static int dev_fd(rshare_device *dev)
{
	int fd = -1;

	REQUIRE_OK(rshare_device_fd(dev, &fd));
	return fd;
}

void case_listing(const struct hw_target *t)
{
	char name[RSHARE_NAME_MAX];
	bool seen_sim = false, found = false;
	uint64_t guid;
	size_t n = 0;
	int prov;

	CHECK_OK(rshare_devices_count(&n));
	for (size_t i = 0; i < n; i++) {
		CHECK_OK(rshare_devices_get(i, name, sizeof(name), &guid, &prov));
		/* Hardware first, then sim0. */
		CHECK(prov == RSHARE_PROVIDER_HW || prov == RSHARE_PROVIDER_SIM);
		CHECK(!(seen_sim && prov == RSHARE_PROVIDER_HW));
		seen_sim |= prov == RSHARE_PROVIDER_SIM;
		if (strcmp(name, t->name) == 0) {
			found = true;
			CHECK(prov == RSHARE_PROVIDER_HW);
			CHECK(guid == t->guid);
		}
	}
	CHECK(found);
	if (!t->standin)
		return;
	/* Exactly the stand-in's two devices, in its order, then sim0. */
	CHECK(n == 3);
	CHECK_OK(rshare_devices_get(0, name, sizeof(name), &guid, &prov));
	CHECK(strcmp(name, STANDIN_MLX5) == 0 && guid == STANDIN_MLX5_GUID &&
	      prov == RSHARE_PROVIDER_HW);
	CHECK_OK(rshare_devices_get(1, name, sizeof(name), &guid, &prov));
	CHECK(strcmp(name, STANDIN_OTHER) == 0 && guid == STANDIN_OTHER_GUID &&
	      prov == RSHARE_PROVIDER_HW);
	CHECK_OK(rshare_devices_get(2, name, sizeof(name), &guid, &prov));
	CHECK(strcmp(name, "sim0") == 0 && prov == RSHARE_PROVIDER_SIM);
}

void case_open_default(const struct hw_target *t)
{
	char name[RSHARE_NAME_MAX];
	rshare_device *dev;
	uint64_t guid = 0;
	size_t len;
	int prov = 0, fd;

	/* No name: the first hardware device, not sim0. */
	dev = hw_open_dev(NULL);
	CHECK_OK(rshare_device_provider(dev, &prov));
	CHECK(prov == RSHARE_PROVIDER_HW);
	if (t->standin) {
		CHECK_OK(rshare_device_name(dev, name, sizeof(name), &len));
		CHECK(strcmp(name, STANDIN_MLX5) == 0);
	}
	CHECK_OK(rshare_device_close(dev));

	dev = hw_open_dev(t->name);
	CHECK_OK(rshare_device_name(dev, name, sizeof(name), &len));
	CHECK(strcmp(name, t->name) == 0 && len == strlen(t->name));
	CHECK_OK(rshare_device_guid(dev, &guid));
	CHECK(guid == t->guid);
	fd = dev_fd(dev);
	CHECK(fcntl(fd, F_GETFD) >= 0);
	CHECK_OK(rshare_device_close(dev));
	/* ibv_close_device closed the command fd (single-threaded: the
	 * number cannot have been reused meanwhile). */
	CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
}

void case_pd_local(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char json[512], want[64], name[RSHARE_NAME_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = NULL;
	rshare_pd *pd, *same = NULL, *other = NULL;
	uint32_t h = 0, h2 = 0;
	uint64_t guid = 0;
	size_t len = 0, jlen;
	int prov = 0, kind = 0;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_handle(pd, &h));
	CHECK_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	CHECK_OK(rshare_blob_kind(blob, len, &kind));
	CHECK(kind == RSHARE_KIND_PD);
	CHECK_OK(rshare_blob_describe(blob, len, json, sizeof(json), &jlen));
	CHECK(strstr(json, "\"provider\":\"hw\"") != NULL);
	snprintf(want, sizeof(want), "\"guid\":\"0x%016llx\"", (unsigned long long)t->guid);
	CHECK(strstr(json, want) != NULL);

	/* Into the same context, and into a context imported from its fd. */
	CHECK_OK(rshare_pd_import(a, blob, len, &same));
	CHECK_OK(rshare_pd_handle(same, &h2));
	CHECK(h2 == h);
	REQUIRE_OK(rshare_device_import(dev_fd(a), &b));
	CHECK_OK(rshare_device_provider(b, &prov));
	CHECK(prov == RSHARE_PROVIDER_HW);
	CHECK_OK(rshare_device_guid(b, &guid));
	CHECK(guid == t->guid);
	CHECK_OK(rshare_device_name(b, name, sizeof(name), &jlen));
	CHECK(strcmp(name, t->name) == 0);
	CHECK(dev_fd(b) != dev_fd(a));
	CHECK_OK(rshare_pd_import(b, blob, len, &other));
	h2 = ~0u;
	CHECK_OK(rshare_pd_handle(other, &h2));
	CHECK(h2 == h);

	CHECK_OK(rshare_pd_unimport(same));
	CHECK_OK(rshare_pd_unimport(other));
	CHECK_ST(rshare_device_close(a), RSHARE_E_BUSY); /* pd is live */
	CHECK_OK(rshare_pd_free(pd));
	/* Gone for every context sharing the table: the kernel says so. */
	CHECK_ST(rshare_pd_import(b, blob, len, &other), RSHARE_E_NOT_FOUND);
	CHECK_MSG("ibv_import_pd");
	CHECK_ST(rshare_pd_import(a, blob, len, &other), RSHARE_E_NOT_FOUND);
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_pd_freed_elsewhere(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *b = NULL;
	rshare_pd *pd, *copy = NULL;
	uint32_t h;
	size_t len = 0;

	REQUIRE_OK(rshare_device_import(dev_fd(a), &b));
	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	REQUIRE_OK(rshare_pd_import(b, blob, len, &copy));
	CHECK_OK(rshare_pd_free(copy)); /* destroys it for a as well */
	CHECK_ST(rshare_pd_free(pd), RSHARE_E_NOT_FOUND);
	CHECK_MSG("ibv_dealloc_pd");
	CHECK_OK(rshare_pd_handle(pd, &h)); /* the handle stays live */
	CHECK_OK(rshare_pd_unimport(pd));
	CHECK_ST(rshare_pd_handle(pd, &h), RSHARE_E_STALE);
	CHECK_OK(rshare_device_close(b));
	CHECK_OK(rshare_device_close(a));
}

void case_guid_mismatch(const struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a = hw_open_dev(t->name), *c = hw_open_dev(t->other);
	rshare_pd *pd, *wrong = NULL;
	size_t len = 0;

	REQUIRE_OK(rshare_pd_alloc(a, &pd));
	REQUIRE_OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	CHECK_ST(rshare_pd_import(c, blob, len, &wrong), RSHARE_E_DEVICE_MISMATCH);
	CHECK(wrong == NULL);
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(c));
	CHECK_OK(rshare_device_close(a));
}

/* Import fd, which is no device context: NODEV, fd untouched, nothing leaked. */
static void refuse(int fd, const char *what)
{
	rshare_device *dev = NULL;
	int before = count_fds();

	CHECK_ST(rshare_device_import(fd, &dev), RSHARE_E_NODEV);
	if (dev)
		fprintf(stderr, "%s was imported\n", what);
	CHECK(dev == NULL);
	CHECK_MSG("ibv_import_device");
	CHECK(count_fds() == before);
	CHECK(fcntl(fd, F_GETFD) >= 0);
}

void case_not_a_context(const struct hw_target *t)
{
	int p[2], null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int mem = memfd_create("not-a-ufile", MFD_CLOEXEC);
	FILE *tmp = tmpfile();

	(void)t;
	REQUIRE(pipe(p) == 0 && null >= 0 && mem >= 0 && tmp);
	/* A memfd of the stand-in's size, but not one of its ufiles. */
	REQUIRE(ftruncate(mem, STANDIN_UFILE_SIZE) == 0);
	refuse(p[0], "a pipe");
	refuse(null, "/dev/null");
	refuse(fileno(tmp), "a regular file");
	refuse(mem, "a foreign memfd");
	close(p[0]);
	close(p[1]);
	close(null);
	close(mem);
	fclose(tmp);
}

/* Import fd with STANDIN_FAIL_IMPORT=how: IO, and neither a leak nor a
 * second close of a descriptor that rdma-core already closed. */
static void import_fails_after_adoption(int fd, const char *how)
{
	rshare_device *b = NULL;
	int before = count_fds(), squat = -1;
	char link[64], path[64] = "";

	unsetenv("STANDIN_SQUATTER_FD");
	hw_hook("STANDIN_FAIL_IMPORT", how);
	CHECK_ST(rshare_device_import(fd, &b), RSHARE_E_IO);
	hw_hook("STANDIN_FAIL_IMPORT", NULL);
	CHECK(rshare_last_errno() == EIO);
	CHECK_MSG("ibv_import_device");
	CHECK(b == NULL);
	CHECK(fcntl(fd, F_GETFD) >= 0);
	if (strcmp(how, "close") != 0) {
		/* The descriptor that took the closed number is not ours to close. */
		REQUIRE(getenv("STANDIN_SQUATTER_FD"));
		squat = atoi(getenv("STANDIN_SQUATTER_FD"));
		snprintf(link, sizeof(link), "/proc/self/fd/%d", squat);
		CHECK(readlink(link, path, sizeof(path) - 1) > 0);
		CHECK(strcmp(how, "squat") != 0 || strcmp(path, "/dev/null") == 0);
		CHECK(count_fds() == before + 1);
		close(squat);
	}
	CHECK(count_fds() == before);
}

void case_import_adopted_then_failed(const struct hw_target *t)
{
	rshare_device *a = NULL, *b = NULL;
	int fd, before;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	fd = dev_fd(a);
	before = count_fds();
	import_fails_after_adoption(fd, "close");
	import_fails_after_adoption(fd, "squat");
	import_fails_after_adoption(fd, "reopen");
	/* The context's own fd survived all that and still imports. */
	CHECK_OK(rshare_device_import(fd, &b));
	CHECK_OK(rshare_device_close(b));
	CHECK(count_fds() == before);
	CHECK_OK(rshare_device_close(a));
}

void case_pd_limit(const struct hw_target *t)
{
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pds[STANDIN_MAX_OBJS + 1];
	int n = 0, s = RSHARE_OK;

	/* The table is full after STANDIN_MAX_OBJS, mlx5's own UAR (made by
	 * every open) and the sentinel PD of the table's identity included:
	 * ENOMEM -> NOMEM. */
	while (n <= STANDIN_MAX_OBJS && (s = rshare_pd_alloc(a, &pds[n])) == RSHARE_OK)
		n++;
	CHECK(n == STANDIN_MAX_OBJS - 2);
	CHECK_ST(s, RSHARE_E_NOMEM);
	CHECK(rshare_last_errno() == ENOMEM);
	for (int i = 0; i < n; i++)
		CHECK_OK(rshare_pd_free(pds[i]));
	CHECK_OK(rshare_pd_alloc(a, &pds[0]));
	CHECK_OK(rshare_pd_free(pds[0]));
	CHECK_OK(rshare_device_close(a));
}

void case_pd_errno_map(const struct hw_target *t)
{
	static const struct { int err; int status; } map[] = {
		{ EPERM, RSHARE_E_PERM },        { EACCES, RSHARE_E_PERM },
		{ ENOMEM, RSHARE_E_NOMEM },      { EOPNOTSUPP, RSHARE_E_UNSUPPORTED },
		{ EBUSY, RSHARE_E_BUSY },        { EIO, RSHARE_E_IO },
		{ EFAULT, RSHARE_E_IO },         { EPROTONOSUPPORT, RSHARE_E_UNSUPPORTED },
		{ ENOSPC, RSHARE_E_NOMEM },
	};
	rshare_device *a = hw_open_dev(t->name);
	rshare_pd *pd;
	char num[16];

	/* What rdma-core says becomes a status, with its errno kept and named. */
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		snprintf(num, sizeof(num), "%d", map[i].err);
		hw_hook("STANDIN_FAIL_ALLOC_PD", num);
		CHECK_ST(rshare_pd_alloc(a, &pd), map[i].status);
		CHECK(rshare_last_errno() == map[i].err);
		CHECK_MSG(strerror(map[i].err));
		CHECK_MSG("rshare_pd_alloc");
	}
	hw_hook("STANDIN_FAIL_ALLOC_PD", NULL);
	CHECK_OK(rshare_pd_alloc(a, &pd));
	CHECK_OK(rshare_pd_free(pd));
	CHECK_OK(rshare_device_close(a));
}

/* Only kcmp is refused, with ENOSYS, as container seccomp profiles do. */
static int filter_kcmp(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kcmp, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* The same with kcmp filtered: the squatter is another open of the same
 * file (every open of a uverbs device is one inode), and must survive. */
void case_import_failed_kcmp_filtered(const struct hw_target *t)
{
	rshare_device *a = NULL;
	int fd, pid, st = 0;

	REQUIRE_OK(rshare_device_open(t->name, &a));
	fd = dev_fd(a);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		pid_t me = getpid();
		int failed_before = t_fail;

		if (filter_kcmp() != 0 || syscall(SYS_kcmp, me, me, KCMP_FILE, fd, fd) != -1 ||
		    errno != ENOSYS)
			_exit(3);
		import_fails_after_adoption(fd, "reopen");
		import_fails_after_adoption(fd, "squat");
		_exit(t_fail != failed_before);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_OK(rshare_device_close(a));
}
