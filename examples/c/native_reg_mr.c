/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Use a shared PD with rdma-core: receive a PD from another process and
 * register memory on it with ibv_reg_mr().
 *
 * rshare shares the objects; rdma-core uses them. rshare_pd_native() hands
 * out the struct ibv_pd behind an imported PD (borrowed: valid until the PD
 * handle is released), so everything rdma-core does with a PD (ibv_reg_mr,
 * ibv_create_qp, ...) works on a PD another process allocated.
 *
 * Needs real RDMA hardware (sim0 has no native rdma-core objects: the
 * program says so and exits 77, "skipped"). Build (needs libibverbs-dev):
 *
 *     cc native_reg_mr.c $(pkg-config --cflags --libs rshare) -libverbs -o native_reg_mr
 *     ./native_reg_mr [DEVICE]
 *
 * Step by step:
 *  1. the parent opens a device and allocates a PD, exports it as a blob;
 *  2. it sends the child the device fd and the blob over an rshare channel;
 *  3. the child imports the device and the PD, asks for the native
 *     struct ibv_pd, registers its own buffer on it with ibv_reg_mr() and
 *     prints the keys; then it deregisters (rdma-core) and releases its
 *     handles (rshare);
 *  4. the parent frees the PD for every process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rshare/rshare.h>

#define SKIPPED 77

static int fail(const char *what, int status)
{
	fprintf(stderr, "%s: %s (%s)\n", what, rshare_status_name(status), rshare_last_error());
	return 1;
}

static int child(int sock)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	static char buffer[1 << 16];
	struct ibv_mr *mr;
	rshare_device *dev;
	rshare_pd *pd;
	void *native;
	size_t len;
	int s;

	if ((s = rshare_channel_recv(sock, &dev, blob, sizeof(blob), &len)))
		return fail("child: receiving", s);
	if ((s = rshare_pd_import(dev, blob, len, &pd)))
		return fail("child: importing the PD", s);
	if ((s = rshare_pd_native(pd, &native)))
		return fail("child: the native PD", s);
	/* The PD another process allocated, used as any struct ibv_pd. */
	mr = ibv_reg_mr((struct ibv_pd *)native, buffer, sizeof(buffer),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) {
		perror("child: ibv_reg_mr on the shared PD");
		return 1;
	}
	printf("child:  registered %zu bytes on the shared PD with ibv_reg_mr: lkey 0x%x, "
	       "rkey 0x%x\n", sizeof(buffer), mr->lkey, mr->rkey);
	fflush(stdout); /* the child ends with _exit */
	if (ibv_dereg_mr(mr)) {
		perror("child: ibv_dereg_mr");
		return 1;
	}
	if ((s = rshare_pd_unimport(pd)) || (s = rshare_device_close(dev)))
		return fail("child: releasing", s);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd;
	uint32_t caps;
	size_t len;
	int sv[2], s, wstatus;
	pid_t pid;

	if ((s = rshare_device_open(argc > 1 ? argv[1] : NULL, &dev)))
		return fail("opening the device", s);
	if ((s = rshare_device_caps(dev, &caps)))
		return fail("asking the device's capabilities", s);
	if (!(caps & RSHARE_CAP_NATIVE)) {
		printf("skipped: this example needs an RDMA device; the device opened has no "
		       "native rdma-core objects (sim0 never has)\n");
		rshare_device_close(dev);
		return SKIPPED;
	}
	if ((s = rshare_pd_alloc(dev, &pd)) || (s = rshare_pd_export(pd, blob, sizeof(blob), &len)))
		return fail("allocating and exporting a PD", s);
	printf("parent: allocated a PD, exported it (%zu-byte blob)\n", len);
	fflush(stdout); /* before fork: the child must not print it again */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || (pid = fork()) < 0) {
		perror("socketpair/fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		_exit(child(sv[1]));
	}
	close(sv[1]);
	if ((s = rshare_channel_send(sv[0], dev, blob, len)))
		return fail("sending", s);
	if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus)) {
		fprintf(stderr, "parent: the child failed\n");
		return 1;
	}
	if ((s = rshare_pd_free(pd)) || (s = rshare_device_close(dev)))
		return fail("freeing", s);
	printf("parent: the child used the PD with rdma-core; freed it\n");
	return 0;
}
