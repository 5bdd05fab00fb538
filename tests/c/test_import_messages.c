/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Failure messages of a device import name the fd the caller knows: the fd
 * passed to rshare_device_import() (the library works on a private
 * duplicate, whose number means nothing to the caller), and, for a fd that
 * arrived in a channel message, no number at all.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

/* Every "fd N" in the last error names want (want -1: no "fd N" at all). */
static int names_only_fd(int want)
{
	const char *m = rshare_last_error();
	int seen = 0;

	for (const char *p = strstr(m, "fd "); p; p = strstr(p + 1, "fd ")) {
		char *end;
		long n;

		if (!isdigit((unsigned char)p[3]))
			continue;
		n = strtol(p + 3, &end, 10);
		if (n != want) {
			fprintf(stderr, "message names fd %ld, not %d: %s\n", n, want, m);
			return 0;
		}
		seen = 1;
	}
	if (want >= 0 && !seen)
		fprintf(stderr, "message does not name fd %d: %s\n", want, m);
	return want < 0 || seen;
}

/* Import fd, expect NODEV and a message naming fd (and no other number). */
static void check_import_names(int fd, const char *cause)
{
	rshare_device *imp = NULL;
	char prefix[64];

	CHECK_ST(rshare_device_import(fd, &imp), RSHARE_E_NODEV);
	CHECK(imp == NULL);
	snprintf(prefix, sizeof(prefix), "rshare_device_import: fd %d ", fd);
	CHECK(strncmp(rshare_last_error(), prefix, strlen(prefix)) == 0);
	CHECK(names_only_fd(fd));
	CHECK_MSG(cause);
}

/* Every case: sim0 and its fd, whose first bytes a fake table copies. */
static rshare_device *dev;
static int devfd;

static void setup(void)
{
	REQUIRE_OK(rshare_device_open("sim0", &dev));
	REQUIRE_OK(rshare_device_fd(dev, &devfd));
}

static void teardown(void)
{
	CHECK_OK(rshare_device_close(dev));
}

/* Not a memfd at all: the simulated provider's first check. High fd
 * numbers make the caller's fd and the library's duplicate differ. */
static void case_not_a_memfd(void)
{
	int p[2];

	REQUIRE(pipe(p) == 0);
	REQUIRE(dup2(p[0], 200) == 200);
	check_import_names(200, "device context");
	check_import_names(p[0], "device context");
	close(200);
	close(p[0]);
	close(p[1]);
}

/* A sealed memfd starting like a table, but of another size: the table
 * registry's validation (a later, deeper check). */
static void case_other_layout(void)
{
	unsigned char hdr[128];
	int fake = memfd_create("rshare-fake-table", MFD_ALLOW_SEALING | MFD_CLOEXEC);

	REQUIRE(fake >= 0);
	REQUIRE(pread(devfd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	REQUIRE(ftruncate(fake, 1 << 16) == 0);
	REQUIRE(pwrite(fake, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	REQUIRE(fcntl(fake, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
	REQUIRE(dup2(fake, 201) == 201);
	check_import_names(201, "simulated table of another layout");
	close(201);
	close(fake);
}

/* The same, too short even for the table's header. */
static void case_too_short(void)
{
	unsigned char hdr[128];

	REQUIRE(pread(devfd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr));
	{
		int tiny = memfd_create("rshare-tiny-table", MFD_ALLOW_SEALING | MFD_CLOEXEC);
		REQUIRE(tiny >= 0);
		REQUIRE(pwrite(tiny, hdr, 16, 0) == 16);
		REQUIRE(fcntl(tiny, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0);
		REQUIRE(dup2(tiny, 202) == 202);
		check_import_names(202, "too short to hold a simulated table");
		CHECK(rshare_last_errno() == 0);
		close(202);
		close(tiny);
	}
}

/* A channel message carrying a fd that is not a device: the fd was
 * installed by the kernel and never seen by the caller, so no number. */
static void case_channel_fd_not_a_device(void)
{
	rshare_device *got = NULL;
	int p[2], sv[2];
	size_t len = 99;

	REQUIRE(pipe(p) == 0);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	{
		/* The API only sends devices: take a real message off the
		 * socket and send its bytes again with a pipe's fd instead. */
		unsigned char msg[256];
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov;
		struct msghdr mh;
		struct cmsghdr *c;
		ssize_t n;
		int rfd = -1;

		REQUIRE_OK(rshare_channel_send(sv[0], dev, "x", 1));
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = msg;
		iov.iov_len = sizeof(msg);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		n = recvmsg(sv[1], &mh, MSG_CMSG_CLOEXEC);
		REQUIRE(n > 0);
		c = CMSG_FIRSTHDR(&mh);
		REQUIRE(c && c->cmsg_type == SCM_RIGHTS);
		memcpy(&rfd, CMSG_DATA(c), sizeof(int));
		close(rfd);
		/* The same bytes with the pipe's fd in place of the device's. */
		memcpy(CMSG_DATA(c), &p[1], sizeof(int));
		iov.iov_len = (size_t)n;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		REQUIRE(sendmsg(sv[0], &mh, 0) == n);
	}
	{
		char payload[8];
		CHECK_ST(rshare_channel_recv(sv[1], &got, payload, sizeof(payload), &len),
			 RSHARE_E_NODEV);
		CHECK(got == NULL && len == 99);
		CHECK_MSG("rshare_channel_recv: the device fd received is ");
		CHECK_MSG("device context");
		CHECK(names_only_fd(-1));
	}

	close(sv[0]);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

#define T_PROGRAM_test_import_messages ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(setup, teardown)

