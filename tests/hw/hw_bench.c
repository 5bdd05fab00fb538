/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What the hardware identity checks cost, through the stand-in rdma-core:
 *
 *   hw_bench [iterations]      (RSHARE_LIBIBVERBS/RSHARE_LIBMLX5 as for
 *                               hw_standin; see docs/hardware.md)
 *
 * Prints the mean time per operation of
 *   - rshare_device_import + close of an mlx5 context from a bare fd
 *     (includes the table identity probe: PD imports of the lowest
 *     handles until the sentinel, its number, unimport),
 *   - the same context received over a channel with its ledger (send +
 *     receive + close: the ledger's checks, its mmap, the sentinel read
 *     back at the handle the ledger names),
 *   - rshare_pd_import + unimport of a PD blob into a context with the
 *     ledger (the PD number compare and one ledger load),
 *   - rshare_var_import + unimport of a VAR blob (the mmap probe).
 * The first two are best of three rounds, in alternation.
 */
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rshare/rshare.h"

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define OK(expr)                                                                  \
	do {                                                                      \
		int s_ = (expr);                                                  \
		if (s_) {                                                         \
			fprintf(stderr, "%s: %s (%s)\n", #expr,                   \
				rshare_status_name(s_), rshare_last_error());     \
			exit(1);                                                  \
		}                                                                 \
	} while (0)

/* Mean ns of one channel send + receive + close of name's context. */
static double device_channel(const char *name, long n)
{
	rshare_device *a, *b;
	double t0;
	size_t len;
	int sv[2];

	OK(rshare_device_open(name, &a));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		exit(1);
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		OK(rshare_channel_send(sv[0], a, NULL, 0));
		OK(rshare_channel_recv(sv[1], &b, NULL, 0, &len));
		OK(rshare_device_close(b));
	}
	t0 = (now_ns() - t0) / n;
	close(sv[0]);
	close(sv[1]);
	OK(rshare_device_close(a));
	return t0;
}

static double device_import(const char *name, long n)
{
	rshare_device *a, *b;
	double t0;
	int fd;

	OK(rshare_device_open(name, &a));
	OK(rshare_device_fd(a, &fd));
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		OK(rshare_device_import(fd, &b));
		OK(rshare_device_close(b));
	}
	t0 = (now_ns() - t0) / n;
	OK(rshare_device_close(a));
	return t0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *a, *b;
	rshare_pd *pd, *copy;
	rshare_var *var, *vcopy;
	double mlx5, other, pdt, vart;
	size_t len;

	if (n <= 0)
		n = 1;
	/* In alternation, best of three each: both see the same conditions. */
	mlx5 = other = 1e18;
	for (int r = 0; r < 3; r++) {
		double m = device_import("mlx5_sim0", n), o = device_channel("mlx5_sim0", n);

		mlx5 = m < mlx5 ? m : mlx5;
		other = o < other ? o : other;
	}

	OK(rshare_device_open("mlx5_sim0", &a));
	{
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
			exit(1);
		OK(rshare_channel_send(sv[0], a, NULL, 0));
		OK(rshare_channel_recv(sv[1], &b, NULL, 0, &len));
		close(sv[0]);
		close(sv[1]);
	}
	OK(rshare_pd_alloc(a, &pd));
	OK(rshare_pd_export(pd, blob, sizeof(blob), &len));
	pdt = now_ns();
	for (long i = 0; i < n; i++) {
		OK(rshare_pd_import(b, blob, len, &copy));
		OK(rshare_pd_unimport(copy));
	}
	pdt = (now_ns() - pdt) / n;
	OK(rshare_var_alloc(a, 0, &var));
	OK(rshare_var_export(var, blob, sizeof(blob), &len));
	vart = now_ns();
	for (long i = 0; i < n; i++) {
		OK(rshare_var_import(b, blob, len, &vcopy));
		OK(rshare_var_unimport(vcopy));
	}
	vart = (now_ns() - vart) / n;
	OK(rshare_var_free(var));
	OK(rshare_pd_free(pd));
	OK(rshare_device_close(b));
	OK(rshare_device_close(a));

	printf("iterations                               %ld\n", n);
	printf("device import+close, mlx5, bare fd       %8.0f ns\n", mlx5);
	printf("device channel send+recv+close (ledger)  %8.0f ns\n", other);
	printf("PD import+unimport (PD number, ledger)   %8.0f ns\n", pdt);
	printf("VAR import+unimport (mmap probe)         %8.0f ns\n", vart);
	return 0;
}
