/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Share a PD and a VAR with a child process, in C.
 *
 * Runs anywhere: without an RDMA device it uses the simulated device sim0.
 * A VAR needs sim0, or an mlx5 device with rdma-core 63 or later.
 * Build and run (from a build tree: build/bin/example_share_pd):
 *
 *     cc share_pd.c $(pkg-config --cflags --libs rshare) -o share_pd && ./share_pd
 *
 * Step by step:
 *  1. the parent opens a device context, allocates a PD and a VAR, and maps
 *     the VAR page;
 *  2. it exports both as blobs, here in their text form ("rshare:...");
 *  3. it sends the child the device fd and the blobs in one message over an
 *     rshare channel (a connected AF_UNIX socket);
 *  4. the child imports the device and the objects, writes a line into the
 *     VAR page through its own mapping, releases its handles (unimport:
 *     the objects live on) and exits;
 *  5. the parent reads the child's line in its own mapping, then frees the
 *     objects for every process.
 *
 * The child uses only what it received: handles inherited through fork()
 * belong to the parent.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rshare/rshare.h>

/* Print what failed and why, and give the exit status 1. */
static int fail(const char *what, int status)
{
	fprintf(stderr, "%s: %s (%s)\n", what, rshare_status_name(status), rshare_last_error());
	return 1;
}

/* The child: receive, import, write into the VAR page, release. */
static int child(int sock)
{
	char payload[2 * RSHARE_TEXT_MAX + 2], *pd_text, *var_text, *save;
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	uint32_t handle;
	size_t len, blen;
	char *page;
	int s;

	/* 3. The device fd and the payload, in one message. */
	if ((s = rshare_channel_recv(sock, &dev, payload, sizeof(payload) - 1, &len)))
		return fail("child: receiving", s);
	payload[len] = '\0';
	pd_text = strtok_r(payload, "\n", &save);
	var_text = strtok_r(NULL, "\n", &save);
	if (!pd_text || !var_text) {
		fprintf(stderr, "child: expected two text blobs\n");
		return 1;
	}

	/* 4. Import (each blob is validated first), map, write, release. */
	if ((s = rshare_blob_from_text(pd_text, blob, sizeof(blob), &blen)) ||
	    (s = rshare_pd_import(dev, blob, blen, &pd)) || (s = rshare_pd_handle(pd, &handle)))
		return fail("child: importing the PD", s);
	if ((s = rshare_blob_from_text(var_text, blob, sizeof(blob), &blen)) ||
	    (s = rshare_var_import(dev, blob, blen, &var)) ||
	    (s = rshare_var_map(var, (void **)&page)))
		return fail("child: importing and mapping the VAR", s);
	snprintf(page, 128, "hello from pid %d, which imported PD %u", (int)getpid(), handle);
	printf("child:  imported PD %u and the VAR, wrote into the VAR page\n", handle);
	if ((s = rshare_var_unimport(var)) || (s = rshare_pd_unimport(pd)) ||
	    (s = rshare_device_close(dev)))
		return fail("child: releasing", s);
	return 0;
}

int main(void)
{
	char pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX];
	char payload[2 * RSHARE_TEXT_MAX + 2]; /* two lines */
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	size_t len, tlen;
	char *page;
	int sv[2], s, wstatus, ok;
	pid_t pid;

	/* 1. A device (NULL: the first RDMA device, else sim0), a PD, a VAR. */
	if ((s = rshare_device_open(NULL, &dev)))
		return fail("opening a device", s);
	if ((s = rshare_pd_alloc(dev, &pd)) || (s = rshare_var_alloc(dev, 0, &var)) ||
	    (s = rshare_var_map(var, (void **)&page)))
		return fail("allocating a PD and a VAR", s);
	memset(page, 0, 128);

	/* 2. Export both, in their text form. */
	if ((s = rshare_pd_export(pd, blob, sizeof(blob), &len)) ||
	    (s = rshare_blob_to_text(blob, len, pd_text, sizeof(pd_text), &tlen)) ||
	    (s = rshare_var_export(var, blob, sizeof(blob), &len)) ||
	    (s = rshare_blob_to_text(blob, len, var_text, sizeof(var_text), &tlen)))
		return fail("exporting", s);
	snprintf(payload, sizeof(payload), "%s\n%s\n", pd_text, var_text);

	/* 3. A channel to a child; the device fd and the blobs over it. */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("socketpair failed");
		return 1;
	}
	fflush(stdout); /* or the child would print the parent's buffer again */
	pid = fork();
	if (pid < 0) {
		perror("fork failed");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		s = child(sv[1]);
		fflush(stdout);
		_exit(s); /* not exit(): the parent's atexit work is not the child's */
	}
	close(sv[1]);
	if ((s = rshare_channel_send(sv[0], dev, payload, strlen(payload))))
		return fail("sending", s);
	printf("parent: sent the device fd, the PD and the VAR to child %d\n", (int)pid);

	/* 5. The child's write, seen through the parent's own mapping. */
	if (waitpid(pid, &wstatus, 0) < 0 || !WIFEXITED(wstatus) || WEXITSTATUS(wstatus)) {
		fprintf(stderr, "parent: the child failed\n");
		return 1;
	}
	ok = strncmp(page, "hello from pid ", 15) == 0;
	printf("parent: the VAR page says \"%.*s\"\n", 100, page);
	if ((s = rshare_var_free(var)) || (s = rshare_pd_free(pd)) ||
	    (s = rshare_device_close(dev)))
		return fail("freeing", s);
	close(sv[0]);
	printf("parent: freed the VAR and the PD for every process: %s\n",
	       ok ? "done" : "THE CHILD'S WRITE IS MISSING");
	return ok ? 0 : 1;
}
