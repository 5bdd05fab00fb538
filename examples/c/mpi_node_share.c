/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One device context, PD and shared buffer per node of an MPI job, shared
 * by the node's ranks: the pattern of rshare.mpi.node_share() in C, with only
 * rshare's public ABI and MPI, to copy into C (or, through its C
 * interoperability, Fortran) programs.
 *
 *     mpicc mpi_node_share.c $(pkg-config --cflags --libs rshare) -o mpi_node_share
 *     mpirun -np 4 ./mpi_node_share [DEVICE]      (default: the first device, else sim0)
 *
 * Step by step:
 *  1. the ranks of each node find each other (MPI_Comm_split_type with
 *     MPI_COMM_TYPE_SHARED); the node's rank 0 is the owner;
 *  2. the owner opens the device, allocates a PD and a shared buffer on it
 *     (memory registered once), and listens on an AF_UNIX socket in a new
 *     private (0700) directory,
 *     whose path it broadcasts over the node's communicator: the rendezvous
 *     is private to this job;
 *  3. the other ranks connect; the owner accepts only the processes of its
 *     node (pids gathered over MPI, checked against SO_PEERCRED) and sends
 *     each the device fd, the two blobs and the buffer's memory fd in one
 *     rshare channel message (rshare_channel_sendv);
 *  4. every rank imports the PD and the buffer: the same memory and keys
 *     everywhere; each rank writes its rank into its slot, the owner reads
 *     them all;
 *  5. leaving, the other ranks unimport and close, and only after a barrier
 *     does the owner free, so no rank holds a freed object.
 * After every step the ranks of the node agree on success (MPI_Allreduce),
 * so a rank that fails makes every rank of its node stop with a message
 * instead of waiting. (A rank that crashes makes mpirun abort the job.)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* struct ucred (SO_PEERCRED), accept4 */
#endif
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <mpi.h>
#include <rshare/rshare.h>

#define TIMEOUT_MS 30000
#define SLOT 4096u                /* each rank's slot of the buffer */
#define BUF_BYTES (1024u * SLOT)  /* room for 1024 ranks a node */

struct node {
	MPI_Comm comm;
	int rank, size, world_rank;
	pid_t *pids; /* node rank -> pid */
};

struct objects {
	rshare_device *dev;
	rshare_pd *pd;
	rshare_buf *buf;
	int memfd; /* the buffer's memory (borrowed from buf on the owner) */
	/* The two blobs, as sent: the PD's, then the buffer's. */
	unsigned char blobs[2 * RSHARE_BLOB_MAX];
	size_t pd_len, buf_len;
};

/* Print why this rank failed; returns 0 (not ok) for all_ok(). */
static int fail(const struct node *n, const char *what, int status)
{
	if (status < 0)
		fprintf(stderr, "rank %d: %s: %s (%s)\n", n->world_rank, what,
			rshare_status_name(status), rshare_last_error());
	else
		fprintf(stderr, "rank %d: %s: %s\n", n->world_rank, what, strerror(errno));
	return 0;
}

/* Whether every rank of the node succeeded at this step. */
static int all_ok(const struct node *n, int ok)
{
	int all;

	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, n->comm);
	return all;
}

/* Owner, step 2: the device, the PD, the buffer, and their blobs. */
static int make_objects(const struct node *n, const char *device, struct objects *o)
{
	int s;

	if ((s = rshare_device_open(device, &o->dev)))
		return fail(n, "opening the device", s);
	if ((s = rshare_pd_alloc(o->dev, &o->pd)))
		return fail(n, "allocating the PD", s);
	if ((s = rshare_buf_alloc(o->pd, BUF_BYTES,
				  RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_WRITE, &o->buf)))
		return fail(n, "allocating the buffer", s);
	if ((s = rshare_pd_export(o->pd, o->blobs, RSHARE_BLOB_MAX, &o->pd_len)) ||
	    (s = rshare_buf_export(o->buf, o->blobs + o->pd_len, RSHARE_BLOB_MAX, &o->buf_len)) ||
	    (s = rshare_buf_fd(o->buf, &o->memfd)))
		return fail(n, "exporting", s);
	return 1;
}

/* Owner, step 2: a listening socket at a fresh path in a new 0700 directory. */
static int listen_private(const struct node *n, char dir[PATH_MAX], struct sockaddr_un *addr)
{
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	int fd;

	addr->sun_family = AF_UNIX;
	if (snprintf(dir, PATH_MAX, "%s/rshare-mpi-XXXXXX", base) >= PATH_MAX || !mkdtemp(dir))
		return fail(n, "making the socket's directory", 0), -1;
	if (snprintf(addr->sun_path, sizeof(addr->sun_path), "%s/s", dir) >=
	    (int)sizeof(addr->sun_path)) {
		errno = ENAMETOOLONG;
		rmdir(dir);
		return fail(n, "the socket's path", 0), -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(fd, n->size)) {
		fail(n, "listening", 0);
		if (fd >= 0)
			close(fd);
		unlink(addr->sun_path);
		rmdir(dir);
		return -1;
	}
	return fd;
}

/* Owner, step 3: accept each other rank of the node, known by its pid, and
 * send it the device and the blobs. Anyone else is dropped. */
static int serve_ranks(const struct node *n, int lfd, const struct objects *o, int *peers)
{
	int got = 0;

	while (got < n->size - 1) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		struct ucred cred;
		socklen_t clen = sizeof(cred);
		int fd, r, s;

		if (poll(&p, 1, TIMEOUT_MS) != 1)
			return fail(n, "waiting for the node's ranks to connect", 0);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return fail(n, "accepting", 0);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.uid != getuid()) {
			close(fd);
			continue;
		}
		for (r = 1; r < n->size && n->pids[r] != cred.pid; r++)
			;
		if (r == n->size || peers[r] >= 0) {
			close(fd); /* not a rank of this node */
			continue;
		}
		peers[r] = fd;
		got++;
		if ((s = rshare_channel_sendv(fd, o->dev, &o->memfd, 1, o->blobs,
					      o->pd_len + o->buf_len)))
			return fail(n, "sending the objects", s);
	}
	return 1;
}

/* A rank other than the owner, steps 3 and 4: receive and import. */
static int join(const struct node *n, const char *path, int *sock, struct objects *o)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = TIMEOUT_MS / 1000 };
	size_t len, nfds;
	int s;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
	*sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (*sock < 0 || setsockopt(*sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(*sock, (struct sockaddr *)&addr, sizeof(addr)))
		return fail(n, "connecting to the node owner", 0);
	if ((s = rshare_channel_recvv(*sock, &o->dev, &o->memfd, 1, &nfds, o->blobs,
				      sizeof(o->blobs), &len)))
		return fail(n, "receiving the objects", s);
	if (nfds != 1) {
		errno = EPROTO;
		return fail(n, "receiving the buffer's memory", 0);
	}
	/* Each blob states its length in bytes 8-9 (abi/BLOB-FORMAT.md). */
	o->pd_len = len >= 10 ? (size_t)o->blobs[8] | (size_t)o->blobs[9] << 8 : 0;
	o->buf_len = len - (o->pd_len <= len ? o->pd_len : len);
	if ((s = rshare_pd_import(o->dev, o->blobs, o->pd_len, &o->pd)))
		return fail(n, "importing the PD", s);
	s = rshare_buf_import(o->pd, o->blobs + o->pd_len, o->buf_len, o->memfd, &o->buf);
	close(o->memfd); /* the buffer holds its own */
	if (s)
		return fail(n, "importing the buffer", s);
	return 1;
}

/* Step 5: unimport (the others) or free (the owner), then close. The owner
 * calls it only after every other rank has, and shows that the PD is gone
 * for everyone: its blob no longer imports. */
static int release(const struct node *n, struct objects *o)
{
	int owner = n->rank == 0, s = 0;
	rshare_pd *late;

	if (o->buf && (s = owner ? rshare_buf_free(o->buf) : rshare_buf_unimport(o->buf)))
		return fail(n, "releasing the buffer", s);
	if (o->pd && (s = owner ? rshare_pd_free(o->pd) : rshare_pd_unimport(o->pd)))
		return fail(n, "releasing the PD", s);
	if (owner && o->pd) {
		s = rshare_pd_import(o->dev, o->blobs, o->pd_len, &late);
		printf("owner: freed after all %d ranks released; a late import of the PD: %s\n",
		       n->size, rshare_status_name(s));
		if (s == RSHARE_OK)
			return fail(n, "the PD outlived its free", -1);
	}
	if (o->dev && (s = rshare_device_close(o->dev)))
		return fail(n, "closing the device", s);
	return 1;
}

/* Steps 2 to 4 on every rank of the node; 1 when all of them succeeded. */
static int share(const struct node *n, const char *device, struct objects *o,
		 int *peers, int *sock)
{
	struct { int ok; char path[sizeof(((struct sockaddr_un *)0)->sun_path)]; } setup = { 0 };
	struct sockaddr_un addr;
	char dir[PATH_MAX];
	int lfd = -1, ok;

	if (n->rank == 0) {
		setup.ok = make_objects(n, device, o);
		if (setup.ok && n->size > 1 && (lfd = listen_private(n, dir, &addr)) < 0)
			setup.ok = 0;
		if (lfd >= 0)
			memcpy(setup.path, addr.sun_path, sizeof(setup.path));
	}
	MPI_Bcast(&setup, sizeof(setup), MPI_BYTE, 0, n->comm);
	if (!setup.ok)
		return 0;
	if (n->size == 1)
		return 1;
	ok = n->rank == 0 ? serve_ranks(n, lfd, o, peers) : join(n, setup.path, sock, o);
	if (lfd >= 0) {
		close(lfd);
		unlink(addr.sun_path);
		rmdir(dir);
	}
	return all_ok(n, ok);
}

/* Step 4: the same keys on every rank, and the same memory: each rank
 * writes into its slot, the owner reads every slot. */
static int use_buffer(const struct node *n, const struct objects *o)
{
	uint32_t keys[2] = { 0 }, lo[2], hi[2];
	rshare_mr *mr;
	uint64_t *mem;
	size_t len;
	int ok = 1, i;

	if (rshare_buf_mr(o->buf, &mr) ||
	    rshare_mr_attrs(mr, NULL, NULL, &keys[0], &keys[1], NULL) ||
	    rshare_buf_ptr(o->buf, (void **)&mem, &len) || len < (size_t)n->size * SLOT)
		ok = fail(n, "reading the buffer's keys and mapping", -1);
	MPI_Allreduce(keys, lo, 2, MPI_UINT32_T, MPI_MIN, n->comm);
	MPI_Allreduce(keys, hi, 2, MPI_UINT32_T, MPI_MAX, n->comm);
	if (!all_ok(n, ok && lo[0] == hi[0] && lo[1] == hi[1]))
		return 0;
	mem[(size_t)n->rank * SLOT / sizeof(*mem)] = 1000u + (unsigned)n->rank;
	MPI_Barrier(n->comm);
	if (n->rank == 0) {
		for (i = 0; i < n->size && mem[(size_t)i * SLOT / sizeof(*mem)] == 1000u + (unsigned)i;
		     i++)
			;
		if (i < n->size)
			ok = fail(n, "a rank's slot does not hold its write", -1);
		else
			printf("node of %d ranks: one buffer, lkey 0x%x rkey 0x%x on every rank, "
			       "every rank's write in its slot\n", n->size, keys[0], keys[1]);
	}
	return all_ok(n, ok);
}

int main(int argc, char **argv)
{
	struct objects o = { .memfd = -1 };
	struct node n;
	pid_t me = getpid();
	int *peers, sock = -1, ok, i, status = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &n.world_rank);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, n.world_rank, MPI_INFO_NULL,
			    &n.comm);
	MPI_Comm_rank(n.comm, &n.rank);
	MPI_Comm_size(n.comm, &n.size);
	n.pids = calloc((size_t)n.size, sizeof(*n.pids));
	peers = malloc((size_t)n.size * sizeof(*peers));
	if (!n.pids || !peers || (size_t)n.size * SLOT > BUF_BYTES)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = 0; i < n.size; i++)
		peers[i] = -1;
	MPI_Allgather(&me, sizeof(me), MPI_BYTE, n.pids, sizeof(me), MPI_BYTE, n.comm);

	ok = share(&n, argc > 1 ? argv[1] : NULL, &o, peers, &sock) && use_buffer(&n, &o);
	if (!ok && n.rank == 0)
		fprintf(stderr, "rank %d: a rank of this node failed (see above): stopping\n",
			n.world_rank);

	/* Step 5: the others release first; the owner frees after the barrier. */
	if (n.rank != 0 && !release(&n, &o))
		status = 1;
	if (sock >= 0)
		close(sock);
	MPI_Barrier(n.comm);
	if (n.rank == 0) {
		if (!release(&n, &o))
			status = 1;
		for (i = 1; i < n.size; i++)
			if (peers[i] >= 0)
				close(peers[i]);
	}
	free(peers);
	free(n.pids);
	MPI_Comm_free(&n.comm);
	MPI_Finalize();
	return ok ? status : 1;
}
