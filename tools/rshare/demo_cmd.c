/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rshare demo: the main job, end to end.
 *
 * The parent opens a device, allocates a PD and a VAR, registers an MR on
 * the PD, allocates device memory and writes a message into it, and starts
 * N worker processes (fork + exec of this binary). Each gets the device fd
 * and the blobs over an rshare channel, imports them (the MR into its
 * imported PD), checks the handles and the MR's keys, maps the VAR page,
 * writes its id and pid into its own slot, reads the parent's message from
 * the device memory, unimports and reports. The parent checks every slot,
 * frees everything and shows that a late import fails with
 * RSHARE_E_NOT_FOUND.
 *
 * Where the slots live: on sim0 the VAR page is ordinary memory, so they
 * are in it. On hardware the VAR page is the device's doorbell (uncached
 * MMIO): parent and workers map it and never read or write it, and the
 * slots go to device memory after the parent's message (rshare_dm_write),
 * or, without device memory, nowhere (each worker's report over its socket
 * is the check).
 *
 * On a device or rdma-core without VAR, MR or DM sharing the demo says why
 * (RSHARE_E_UNSUPPORTED, or the device's capabilities) and shares the rest;
 * a device that cannot share at all (no RSHARE_CAP_PD: its provider has no
 * import) is refused with the reason.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

#define MAX_WORKERS 64
#define SLOT_MAGIC 0x52534841u /* "RSHA": marks a slot a worker wrote */
#define NO_OBJ "-"             /* payload placeholder for an object not shared */
#define MR_BYTES 4096
#define DM_BYTES 256 /* the parent's message; the hardware slots follow it */
#define DM_SLOTS_OFF DM_BYTES
#define DM_MESSAGE "rshare demo: written into device memory by pid %d"

/* One worker's slot (16 bytes: whole 4-byte words, as mlx5 device memory
 * wants), in the VAR page on sim0, in device memory on hardware. */
struct slot {
	uint32_t magic;
	uint32_t id;
	uint32_t pid;
	uint32_t pd_handle;
};

/* "<pd> <text>\n<page> <text>\n<lkey> <rkey> <text>\n<text>\n<text>\n" */
#define PAYLOAD_MAX (5 * RSHARE_TEXT_MAX + 64)
#define BUF_SLOT 64 /* each worker's line in the shared buffer */

/* What the parent shares. */
struct shared {
	rshare_pd *pd;
	uint32_t pd_handle;
	unsigned char pd_blob[RSHARE_BLOB_MAX];
	size_t pd_len;
	rshare_var *var; /* NULL when the device cannot share VARs */
	uint32_t page_id;
	volatile struct slot *slots; /* in the VAR page (sim0 only), else NULL */
	bool hw;                     /* the VAR page is a doorbell: never touched */
	rshare_mr *mr; /* NULL when the device has no MRs */
	void *mr_mem;
	uint32_t lkey, rkey;
	rshare_dm *dm; /* NULL when the device has no device memory */
	rshare_buf *buf; /* NULL when the device cannot share buffers */
	char *buf_mem;
	int buf_fd;
	char payload[PAYLOAD_MAX];
};

static uint64_t t_start;

static void step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void step(const char *fmt, ...)
{
	va_list ap;

	printf("[%9.3f ms] ", (double)(cli_now_ns() - t_start) / 1e6);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int blob_text(const unsigned char *blob, size_t len, char *text)
{
	size_t tlen;
	return rshare_blob_to_text(blob, len, text, RSHARE_TEXT_MAX, &tlen);
}

/* Allocate, export and map a VAR; RSHARE_E_UNSUPPORTED leaves sh->var NULL
 * and is not a failure. On success *var_text is its text blob. */
static int share_var(rshare_device *dev, struct shared *sh, int workers, char *var_text)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	uint32_t length;
	uint64_t mmap_off;
	size_t len;
	void *page;
	int s = rshare_var_alloc(dev, 0, &sh->var);

	if (!s && (s = rshare_var_export(sh->var, blob, sizeof(blob), &len)) != RSHARE_OK)
		rshare_var_free(sh->var);
	if (s == RSHARE_E_UNSUPPORTED) {
		step("VARs cannot be shared here (%s); sharing the PD alone",
		     rshare_last_error());
		sh->var = NULL;
		strcpy(var_text, NO_OBJ);
		return RSHARE_OK;
	}
	if (s || (s = rshare_var_attrs(sh->var, &sh->page_id, &length, &mmap_off)) ||
	    (s = rshare_var_map(sh->var, &page)) || (s = blob_text(blob, len, var_text)))
		return cli_fail("allocating, exporting and mapping a VAR", s);
	if (sh->hw) {
		step("allocated VAR, page %" PRIu32 ", %" PRIu32 " bytes at mmap offset 0x%" PRIx64
		     ", exported (%zu-byte blob), mapped and left untouched (a doorbell page)",
		     sh->page_id, length, mmap_off, len);
		return RSHARE_OK;
	}
	if ((size_t)workers * sizeof(struct slot) > length) {
		fprintf(stderr, "rshare demo: VAR page too small for %d workers\n", workers);
		return 1;
	}
	memset(page, 0, length);
	sh->slots = page;
	step("allocated VAR, page %" PRIu32 ", %" PRIu32 " bytes at mmap offset 0x%" PRIx64
	     ", exported (%zu-byte blob), mapped",
	     sh->page_id, length, mmap_off, len);
	return RSHARE_OK;
}

/* Register memory on the PD and export the MR, if the device can share
 * MRs (else *mr_text is "-"). */
static int share_mr(uint32_t caps, struct shared *sh, char *mr_text)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;
	int s;

	strcpy(mr_text, NO_OBJ);
	if (!(caps & RSHARE_CAP_MR)) {
		step("MRs cannot be shared here (the device lacks RSHARE_CAP_MR)");
		return 0;
	}
	sh->mr_mem = calloc(1, MR_BYTES);
	if (!sh->mr_mem) {
		fprintf(stderr, "rshare demo: out of memory\n");
		return 1;
	}
	if ((s = rshare_mr_reg(sh->pd, sh->mr_mem, MR_BYTES,
			       RSHARE_ACCESS_LOCAL_WRITE | RSHARE_ACCESS_REMOTE_READ, &sh->mr)) ||
	    (s = rshare_mr_attrs(sh->mr, NULL, NULL, &sh->lkey, &sh->rkey, NULL)) ||
	    (s = rshare_mr_export(sh->mr, blob, sizeof(blob), &len)) ||
	    (s = blob_text(blob, len, mr_text)))
		return cli_fail("registering and exporting an MR", s);
	step("registered %d bytes on the PD as an MR, lkey 0x%" PRIx32 " rkey 0x%" PRIx32
	     ", exported (%zu-byte blob)", MR_BYTES, sh->lkey, sh->rkey, len);
	return 0;
}

/* Allocate device memory, write the parent's message into it and export
 * it, if the device has device memory (else *dm_text is "-"). */
static int share_dm(rshare_device *dev, uint32_t caps, struct shared *sh, char *dm_text)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char msg[DM_BYTES];
	size_t len;
	int s;

	strcpy(dm_text, NO_OBJ);
	if (!(caps & RSHARE_CAP_DM)) {
		step("device memory cannot be shared here (the device lacks RSHARE_CAP_DM)");
		return 0;
	}
	memset(msg, 0, sizeof(msg));
	snprintf(msg, sizeof(msg), DM_MESSAGE, (int)getpid());
	if ((s = rshare_dm_alloc(dev, DM_BYTES + MAX_WORKERS * sizeof(struct slot), &sh->dm)) ||
	    (s = rshare_dm_write(sh->dm, 0, msg, sizeof(msg))) ||
	    (s = rshare_dm_export(sh->dm, blob, sizeof(blob), &len)) ||
	    (s = blob_text(blob, len, dm_text)))
		return cli_fail("allocating, writing and exporting device memory", s);
	step("allocated %d bytes of device memory, wrote \"%s\", exported (%zu-byte blob)",
	     DM_BYTES, msg, len);
	return 0;
}

/* A shared buffer with a line for each worker to write (since 1.2): the
 * memory itself travels as an extra fd of the channel message. */
static int share_buf(uint32_t caps, struct shared *sh, int workers, char *buf_text)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	size_t len;
	int s;

	strcpy(buf_text, NO_OBJ);
	sh->buf_fd = -1;
	if (!(caps & RSHARE_CAP_BUF)) {
		step("buffers cannot be shared here (the device lacks RSHARE_CAP_BUF)");
		return 0;
	}
	if ((s = rshare_buf_alloc(sh->pd, (size_t)workers * BUF_SLOT, RSHARE_ACCESS_LOCAL_WRITE,
				  &sh->buf)) ||
	    (s = rshare_buf_ptr(sh->buf, (void **)&sh->buf_mem, NULL)) ||
	    (s = rshare_buf_fd(sh->buf, &sh->buf_fd)) ||
	    (s = rshare_buf_export(sh->buf, blob, sizeof(blob), &len)) ||
	    (s = blob_text(blob, len, buf_text)))
		return cli_fail("allocating and exporting a shared buffer", s);
	step("allocated a %d-byte shared buffer (one MR, registered once), exported "
	     "(%zu-byte blob + its memfd)", workers * BUF_SLOT, len);
	return 0;
}

/* The payload: "<pd handle> <pd text>\n<var page id> <var text or ->\n
 * <lkey> <rkey> <mr text or ->\n<dm text or ->\n<buffer text or ->\n"; the
 * worker checks what it imports against the numbers. */
static int share(rshare_device *dev, struct shared *sh, int workers)
{
	char pd_text[RSHARE_TEXT_MAX], var_text[RSHARE_TEXT_MAX], mr_text[RSHARE_TEXT_MAX],
		dm_text[RSHARE_TEXT_MAX], buf_text[RSHARE_TEXT_MAX];
	uint32_t caps;
	int s;

	if ((s = rshare_device_caps(dev, &caps)))
		return cli_fail("asking the device's capabilities", s);
	if (!(caps & RSHARE_CAP_PD)) {
		fprintf(stderr, "rshare demo: this device cannot share anything: its provider "
			"implements no import (only mlx5 does; the device reports no "
			"RSHARE_CAP_PD)\n");
		return 1;
	}
	if ((s = rshare_pd_alloc(dev, &sh->pd)) || (s = rshare_pd_handle(sh->pd, &sh->pd_handle)) ||
	    (s = rshare_pd_export(sh->pd, sh->pd_blob, sizeof(sh->pd_blob), &sh->pd_len)) ||
	    (s = blob_text(sh->pd_blob, sh->pd_len, pd_text)))
		return cli_fail("allocating and exporting a PD", s);
	step("allocated PD, handle %" PRIu32 ", exported (%zu-byte blob)", sh->pd_handle,
	     sh->pd_len);
	if ((s = share_var(dev, sh, workers, var_text)))
		return s;
	if ((s = share_mr(caps, sh, mr_text)) || (s = share_dm(dev, caps, sh, dm_text)) ||
	    (s = share_buf(caps, sh, workers, buf_text)))
		return s;
	snprintf(sh->payload, sizeof(sh->payload),
		 "%" PRIu32 " %s\n%" PRIu32 " %s\n%" PRIu32 " %" PRIu32 " %s\n%s\n%s\n", sh->pd_handle,
		 pd_text, sh->page_id, var_text, sh->lkey, sh->rkey, mr_text, dm_text, buf_text);
	return 0;
}

static int start_worker(int id, int *sock_out, pid_t *pid_out)
{
	int sv[2];
	pid_t pid;
	char fdarg[16], idarg[16];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		/* The child's end survives exec; nothing else does. */
		fcntl(sv[1], F_SETFD, 0);
		snprintf(fdarg, sizeof(fdarg), "%d", sv[1]);
		snprintf(idarg, sizeof(idarg), "%d", id);
		execl("/proc/self/exe", "rshare", "__demo-worker", fdarg, idarg, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	*sock_out = sv[0];
	*pid_out = pid;
	return 0;
}

/* Start the workers, hand each the device and blobs, collect their reports
 * and check the VAR page. Returns 1 if every check passed. */
static int run_workers(rshare_device *dev, struct shared *sh, int workers)
{
	int socks[MAX_WORKERS], ok = 1, s;
	pid_t pids[MAX_WORKERS];

	for (int i = 0; i < workers; i++) {
		if (start_worker(i, &socks[i], &pids[i]) < 0) {
			perror("rshare demo: starting a worker");
			return 0;
		}
		s = rshare_channel_sendv(socks[i], dev, &sh->buf_fd, sh->buf ? 1 : 0, sh->payload,
					 strlen(sh->payload) + 1);
		if (s) {
			cli_fail("sending to a worker", s);
			return 0;
		}
	}
	step("started %d workers, sent each the device fd, the blobs%s", workers,
	     sh->buf ? " and the buffer's memfd" : "");
	for (int i = 0; i < workers; i++) {
		char reply[256] = "";
		uint32_t h = UINT32_MAX;
		int wstatus;
		ssize_t n = recv(socks[i], reply, sizeof(reply) - 1, 0);

		if (waitpid(pids[i], &wstatus, 0) < 0 || !WIFEXITED(wstatus) ||
		    WEXITSTATUS(wstatus) != 0 || n <= 0 ||
		    sscanf(reply, "imported PD %" SCNu32, &h) != 1 || h != sh->pd_handle) {
			printf("  worker %d (pid %d) FAILED%s%s\n", i, (int)pids[i],
			       n > 0 ? ": " : "", n > 0 ? reply : "");
			ok = 0;
		} else {
			printf("  worker %d (pid %d): %s\n", i, (int)pids[i], reply);
		}
		close(socks[i]);
	}
	if (sh->buf) {
		int good = 1;

		for (int i = 0; i < workers; i++) {
			char want[BUF_SLOT];

			snprintf(want, sizeof(want), "worker %d (pid %d) was here", i, (int)pids[i]);
			good &= strncmp(sh->buf_mem + i * BUF_SLOT, want, BUF_SLOT) == 0;
		}
		step("%s: every worker's line is in the shared buffer", good ? "checked" : "FAILED");
		ok &= good;
	}
	if (!sh->slots && !(sh->hw && sh->dm)) {
		step("%s: every worker imported the PD with handle %" PRIu32,
		     ok ? "checked" : "FAILED", sh->pd_handle);
		return ok;
	}
	for (int i = 0; i < workers; i++) {
		struct slot copy = { 0 };
		const volatile struct slot *sl = sh->slots ? &sh->slots[i] : &copy;

		if (!sh->slots &&
		    rshare_dm_read(sh->dm, DM_SLOTS_OFF + (uint64_t)i * sizeof(copy), &copy,
				   sizeof(copy)) != RSHARE_OK)
			copy.magic = 0;
		if (sl->magic != SLOT_MAGIC || sl->id != (uint32_t)i ||
		    sl->pid != (uint32_t)pids[i] || sl->pd_handle != sh->pd_handle) {
			printf("  slot %d: MISSING or wrong (magic 0x%08x id %u pid %u)\n", i,
			       sl->magic, sl->id, sl->pid);
			ok = 0;
		}
	}
	step("%s: every worker's write is in the %s", ok ? "checked" : "FAILED",
	     sh->slots ? "shared VAR page" : "shared device memory");
	return ok;
}

static int run_demo(int argc, char **argv);
static int run_demo_worker(int argc, char **argv);

const struct cli_command cli_demo = {
	.name = "demo",
	.args = "[--device NAME] [--workers N]",
	.summary = "share a PD, a VAR, an MR, device memory and a buffer with N worker processes",
	.options = "  -d, --device=NAME   the device to open (default: the first, else sim0)\n"
		   "  -w, --workers=N     worker processes, 1..64 (default: 4)\n",
	.run = run_demo,
};

/* rshare __demo-worker SOCK ID: started by the demo, not by people. */
const struct cli_command cli_demo_worker = {
	.name = "__demo-worker",
	.args = "SOCK ID",
	.summary = "one worker process of the demo (internal)",
	.options = "",
	.run = run_demo_worker,
	.hidden = 1,
};

static const struct option demo_opts[] = {
	{ "device", required_argument, NULL, 'd' },
	{ "workers", required_argument, NULL, 'w' },
	CLI_OPT_HELP,
	{ 0 },
};

static int run_demo(int argc, char **argv)
{
	const char *device = NULL;
	int workers = 4, ok, s, provider, c;
	struct shared sh = { 0 };
	char name[RSHARE_NAME_MAX];
	rshare_device *dev;
	rshare_pd *late;
	uint64_t guid;
	size_t len;

	while ((c = cli_getopt(&cli_demo, argc, argv, "d:w:h", demo_opts)) != -1) {
		if (c == 'd')
			device = optarg;
		else if (c == 'w')
			workers = cli_int_arg(&cli_demo, "--workers", optarg, 1, MAX_WORKERS);
	}
	if (optind < argc)
		cli_usage_error(&cli_demo, "unexpected argument '%s'", argv[optind]);
	t_start = cli_now_ns();
	if ((s = rshare_device_open(device, &dev)) ||
	    (s = rshare_device_name(dev, name, sizeof(name), &len)) ||
	    (s = rshare_device_guid(dev, &guid)) || (s = rshare_device_provider(dev, &provider)))
		return cli_fail("opening the device", s);
	step("opened %s (guid 0x%016" PRIx64 ", provider %s)", name, guid,
	     cli_provider_name(provider));
	sh.hw = provider == RSHARE_PROVIDER_HW;
	if ((s = share(dev, &sh, workers)))
		return s;
	ok = run_workers(dev, &sh, workers);

	/* The MR and the buffer first: a PD with MRs cannot be freed. */
	if ((sh.buf && (s = rshare_buf_free(sh.buf))) ||
	    (sh.mr && (s = rshare_mr_dereg(sh.mr))) || (sh.dm && (s = rshare_dm_free(sh.dm))) ||
	    (sh.var && (s = rshare_var_free(sh.var))) || (s = rshare_pd_free(sh.pd)))
		return cli_fail("freeing", s);
	free(sh.mr_mem);
	step("freed %s%s%s%sthe PD for every process", sh.buf ? "the buffer, " : "",
	     sh.mr ? "the MR, " : "",
	     sh.dm ? "the device memory, " : "", sh.var ? "the VAR and " : "");
	s = rshare_pd_import(dev, sh.pd_blob, sh.pd_len, &late);
	if (s == RSHARE_E_NOT_FOUND) {
		step("late import of the PD blob: %s, as expected", rshare_status_name(s));
	} else {
		step("late import of the PD blob: %s, expected RSHARE_E_NOT_FOUND",
		     rshare_status_name(s));
		if (!s)
			rshare_pd_unimport(late);
		ok = 0;
	}
	if ((s = rshare_device_close(dev)))
		return cli_fail("closing the device", s);
	step("closed the device: %s", ok ? "all checks passed" : "SOME CHECKS FAILED");
	return ok ? 0 : 1;
}

/* A worker imports the MR into its imported PD and checks its keys. */
static int worker_mr(int id, rshare_pd *pd, const char *text, uint32_t want_lkey,
		     uint32_t want_rkey, char *note, size_t cap)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	uint32_t lkey, rkey;
	rshare_mr *mr;
	size_t len;
	int s;

	if ((s = rshare_blob_from_text(text, blob, sizeof(blob), &len)) ||
	    (s = rshare_mr_import(pd, blob, len, &mr)) ||
	    (s = rshare_mr_attrs(mr, NULL, NULL, &lkey, &rkey, NULL)))
		return cli_fail("worker: importing the MR", s);
	if ((s = rshare_mr_unimport(mr)))
		return cli_fail("worker: releasing the MR", s);
	if (lkey != want_lkey || rkey != want_rkey) {
		fprintf(stderr, "rshare worker %d: MR keys 0x%x/0x%x, expected 0x%x/0x%x\n", id,
			lkey, rkey, want_lkey, want_rkey);
		return 1;
	}
	snprintf(note, cap, "MR keys 0x%" PRIx32 "/0x%" PRIx32 " checked", lkey, rkey);
	return 0;
}

/* A worker's slot in device memory (hardware): after the message. */
static int worker_dm_slot(rshare_dm *dm, int id, uint32_t pd_handle)
{
	struct slot sl = { SLOT_MAGIC, (uint32_t)id, (uint32_t)getpid(), pd_handle };

	return rshare_dm_write(dm, DM_SLOTS_OFF + (uint64_t)id * sizeof(sl), &sl, sizeof(sl));
}

/* A worker imports the device memory and reads the parent's message (and,
 * on hardware, writes its slot there). */
static int worker_dm(int id, rshare_device *dev, const char *text, uint32_t pd_handle,
		     bool hw, char *note, size_t cap)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char got[DM_BYTES], want[DM_BYTES];
	rshare_dm *dm;
	size_t len;
	int s;

	if ((s = rshare_blob_from_text(text, blob, sizeof(blob), &len)) ||
	    (s = rshare_dm_import(dev, blob, len, &dm)) ||
	    (s = rshare_dm_read(dm, 0, got, sizeof(got))) ||
	    (hw && (s = worker_dm_slot(dm, id, pd_handle))))
		return cli_fail("worker: importing, reading and writing the device memory", s);
	if ((s = rshare_dm_unimport(dm)))
		return cli_fail("worker: releasing the device memory", s);
	memset(want, 0, sizeof(want));
	snprintf(want, sizeof(want), DM_MESSAGE, (int)getppid());
	if (memcmp(got, want, sizeof(want)) != 0) {
		fprintf(stderr, "rshare worker %d: device memory holds \"%.*s\", expected \"%s\"\n",
			id, (int)strnlen(got, sizeof(got)), got, want);
		return 1;
	}
	snprintf(note, cap, "read the parent's message from device memory%s",
		 hw ? ", wrote slot there" : "");
	return 0;
}

/* A worker imports the buffer with the memfd that came with the message
 * and writes its line into the shared memory. */
static int worker_buf(int id, rshare_pd *pd, const char *text, int fd, char *note, size_t cap)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_buf *buf;
	size_t len, size;
	void *mem;
	int s;

	if ((s = rshare_blob_from_text(text, blob, sizeof(blob), &len)) ||
	    (s = rshare_buf_import(pd, blob, len, fd, &buf)) ||
	    (s = rshare_buf_ptr(buf, &mem, &size)))
		return cli_fail("worker: importing the shared buffer", s);
	if ((size_t)(id + 1) * BUF_SLOT <= size)
		snprintf((char *)mem + id * BUF_SLOT, BUF_SLOT, "worker %d (pid %d) was here", id,
			 (int)getpid());
	if ((s = rshare_buf_unimport(buf)))
		return cli_fail("worker: releasing the shared buffer", s);
	snprintf(note, cap, "wrote line %d of the shared buffer", id);
	return 0;
}

/* One worker process of the demo. */
static int run_demo_worker(int argc, char **argv)
{
	char payload[PAYLOAD_MAX], pd_text[RSHARE_TEXT_MAX + 1], var_text[RSHARE_TEXT_MAX + 1],
		mr_text[RSHARE_TEXT_MAX + 1], dm_text[RSHARE_TEXT_MAX + 1],
		buf_text[RSHARE_TEXT_MAX + 1], reply[400], var_note[64] = "no VAR",
		mr_note[64] = "no MR", dm_note[64] = "no DM", buf_note[64] = "no buffer";
	unsigned char blob[RSHARE_BLOB_MAX];
	uint32_t want_pd, want_page, got_pd, got_page, want_lkey, want_rkey;
	rshare_device *dev;
	rshare_pd *pd;
	rshare_var *var;
	size_t len, blen, nfds = 0;
	uint64_t t0 = cli_now_ns();
	int sock, id, s, provider = 0, fd = -1;
	bool hw;

	if (argc != 3)
		cli_usage_error(&cli_demo_worker, "expected SOCK ID");
	sock = cli_int_arg(&cli_demo_worker, "SOCK", argv[1], 0, INT32_MAX);
	id = cli_int_arg(&cli_demo_worker, "ID", argv[2], 0, MAX_WORKERS - 1);
	if ((s = rshare_channel_recvv(sock, &dev, &fd, 1, &nfds, payload, sizeof(payload) - 1,
				      &len)))
		return cli_fail("worker: receiving", s);
	payload[len] = '\0';
	if ((s = rshare_device_provider(dev, &provider)))
		return cli_fail("worker: asking the provider", s);
	hw = provider == RSHARE_PROVIDER_HW; /* the VAR page is a doorbell */
	if (sscanf(payload,
		   "%" SCNu32 " %180s %" SCNu32 " %180s %" SCNu32 " %" SCNu32 " %180s %180s %180s",
		   &want_pd, pd_text, &want_page, var_text, &want_lkey, &want_rkey, mr_text,
		   dm_text, buf_text) != 9 || (strcmp(buf_text, NO_OBJ) != 0) != (nfds == 1)) {
		fprintf(stderr, "rshare worker %d: malformed payload\n", id);
		return 1;
	}
	if ((s = rshare_blob_from_text(pd_text, blob, sizeof(blob), &blen)) ||
	    (s = rshare_pd_import(dev, blob, blen, &pd)) || (s = rshare_pd_handle(pd, &got_pd)))
		return cli_fail("worker: importing the PD", s);
	if (got_pd != want_pd) {
		fprintf(stderr, "rshare worker %d: PD handle %u, expected %u\n", id, got_pd,
			want_pd);
		return 1;
	}
	if (strcmp(mr_text, NO_OBJ) != 0 && worker_mr(id, pd, mr_text, want_lkey, want_rkey,
						      mr_note, sizeof(mr_note)))
		return 1;
	if (strcmp(dm_text, NO_OBJ) != 0 &&
	    worker_dm(id, dev, dm_text, got_pd, hw, dm_note, sizeof(dm_note)))
		return 1;
	if (nfds == 1) {
		s = worker_buf(id, pd, buf_text, fd, buf_note, sizeof(buf_note));
		close(fd); /* the buffer held its own duplicate */
		if (s)
			return 1;
	}
	if (strcmp(var_text, NO_OBJ) != 0) {
		volatile struct slot *slots;
		void *page;

		if ((s = rshare_blob_from_text(var_text, blob, sizeof(blob), &blen)) ||
		    (s = rshare_var_import(dev, blob, blen, &var)) ||
		    (s = rshare_var_attrs(var, &got_page, NULL, NULL)) ||
		    (s = rshare_var_map(var, &page)))
			return cli_fail("worker: importing and mapping the VAR", s);
		if (got_page != want_page) {
			fprintf(stderr, "rshare worker %d: VAR page %u, expected %u\n", id,
				got_page, want_page);
			return 1;
		}
		if (!hw) {
			slots = page;
			slots[id].id = (uint32_t)id;
			slots[id].pid = (uint32_t)getpid();
			slots[id].pd_handle = got_pd;
			__atomic_store_n(&slots[id].magic, SLOT_MAGIC, __ATOMIC_RELEASE);
		}
		if ((s = rshare_var_unimport(var)))
			return cli_fail("worker: releasing the VAR", s);
		snprintf(var_note, sizeof(var_note), "VAR page %u, %s", got_page,
			 hw ? "mapped, untouched" : "wrote slot");
	}
	if ((s = rshare_pd_unimport(pd)) || (s = rshare_device_close(dev)))
		return cli_fail("worker: releasing", s);
	snprintf(reply, sizeof(reply), "imported PD %u and %s, %s, %s, %s, unimported (%.3f ms)",
		 got_pd, var_note, mr_note, dm_note, buf_note, (double)(cli_now_ns() - t0) / 1e6);
	if (send(sock, reply, strlen(reply) + 1, MSG_NOSIGNAL) < 0)
		return 1;
	return 0;
}
