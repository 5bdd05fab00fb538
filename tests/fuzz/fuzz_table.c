/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * libFuzzer target for the simulated table as untrusted shared memory: the
 * input is a program of steps, each either a write of the fuzzer's choice
 * (offset, width, value) into the table's memfd, as a peer holding the fd
 * could make, or an API call on a fresh sim0 device (PD and VAR alloc,
 * export, import, map and write, free, unimport). Whatever was written,
 * every call must return without a crash or sanitizer report, and at the
 * end every handle is released and the device closes. MRs and device
 * memory take part too. Built with clang's
 * -fsanitize=fuzzer,address,undefined.
 *
 * Step encoding: one byte op, then its operands:
 *   op % 12 == 0: u32 offset (taken modulo the file size), u8 width
 *                 (1 << (w % 4) bytes), u64 value (little-endian)
 *   otherwise:    u8 slot (which of the 8 remembered objects); ops 1-7 PD
 *                 and VAR, 8-9 MR, 10-11 device memory (see call())
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rshare/rshare.h"

#define SLOTS 8

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* A written lock word may name a live process: keep such waits short. */
	setenv("RSHARE_SIM_LOCK_MS", "20", 1);
	return 0;
}

struct state {
	rshare_device *dev;
	uint8_t *map;
	size_t len;
	rshare_pd *pd[SLOTS];
	rshare_var *var[SLOTS];
	rshare_mr *mr[SLOTS];
	rshare_dm *dm[SLOTS];
	char mem[64];
	unsigned char blob[SLOTS][RSHARE_BLOB_MAX];
	size_t blen[SLOTS];
};

static void poke(struct state *s, const uint8_t *op)
{
	uint32_t off;
	uint64_t v;
	unsigned width = 1u << (op[4] % 4);

	memcpy(&off, op, 4);
	memcpy(&v, op + 5, 8);
	off = (uint32_t)(off % s->len) & ~(width - 1);
	if (off + width > s->len)
		return;
	switch (width) {
	case 1: __atomic_store_n(s->map + off, (uint8_t)v, __ATOMIC_RELAXED); break;
	case 2: __atomic_store_n((uint16_t *)(s->map + off), (uint16_t)v, __ATOMIC_RELAXED); break;
	case 4: __atomic_store_n((uint32_t *)(s->map + off), (uint32_t)v, __ATOMIC_RELAXED); break;
	default: __atomic_store_n((uint64_t *)(s->map + off), v, __ATOMIC_RELAXED); break;
	}
}

static void release_pd(rshare_pd **pd)
{
	if (*pd && rshare_pd_free(*pd) != RSHARE_OK && rshare_pd_unimport(*pd) != RSHARE_OK)
		abort(); /* a live handle must always be releasable */
	*pd = NULL;
}

static void release_var(rshare_var **var)
{
	if (*var && rshare_var_free(*var) != RSHARE_OK && rshare_var_unimport(*var) != RSHARE_OK)
		abort();
	*var = NULL;
}

static void release_mr(rshare_mr **mr)
{
	if (*mr && rshare_mr_dereg(*mr) != RSHARE_OK && rshare_mr_unimport(*mr) != RSHARE_OK)
		abort();
	*mr = NULL;
}

static void release_dm(rshare_dm **dm)
{
	if (*dm && rshare_dm_free(*dm) != RSHARE_OK && rshare_dm_unimport(*dm) != RSHARE_OK)
		abort();
	*dm = NULL;
}

static void call(struct state *s, unsigned op, unsigned i)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	char buf[8];
	rshare_pd *pd;
	rshare_var *var;
	rshare_mr *mr;
	rshare_dm *dm;
	void *addr;
	size_t len;

	switch (op) {
	case 1:
		release_mr(&s->mr[i]); /* an MR keeps its PD busy */
		release_pd(&s->pd[i]);
		if (rshare_pd_alloc(s->dev, &s->pd[i]) != RSHARE_OK)
			s->pd[i] = NULL;
		else
			rshare_pd_export(s->pd[i], s->blob[i], RSHARE_BLOB_MAX, &s->blen[i]);
		break;
	case 2:
		release_mr(&s->mr[i]);
		release_pd(&s->pd[i]);
		break;
	case 3:
		if (rshare_pd_import(s->dev, s->blob[i], s->blen[i], &pd) == RSHARE_OK &&
		    rshare_pd_unimport(pd) != RSHARE_OK)
			abort();
		break;
	case 4:
		release_var(&s->var[i]);
		if (rshare_var_alloc(s->dev, 0, &s->var[i]) != RSHARE_OK)
			s->var[i] = NULL;
		else
			rshare_var_export(s->var[i], s->blob[i], RSHARE_BLOB_MAX, &s->blen[i]);
		break;
	case 5:
		if (s->var[i] && rshare_var_map(s->var[i], &addr) == RSHARE_OK)
			((volatile uint8_t *)addr)[i] = (uint8_t)op;
		break;
	case 6:
		release_var(&s->var[i]);
		break;
	case 7:
		if (rshare_var_import(s->dev, s->blob[i], s->blen[i], &var) == RSHARE_OK) {
			if (rshare_var_map(var, &addr) == RSHARE_OK)
				((volatile uint8_t *)addr)[0] = 1;
			if (rshare_var_unimport(var) != RSHARE_OK)
				abort();
		}
		break;
	case 8: /* register an MR on PD i */
		release_mr(&s->mr[i]);
		if (s->pd[i] && rshare_mr_reg(s->pd[i], s->mem, sizeof(s->mem), 1,
					      &s->mr[i]) != RSHARE_OK)
			s->mr[i] = NULL;
		break;
	case 9: /* import MR i into its PD, then deregister it */
		if (s->mr[i] && rshare_mr_export(s->mr[i], blob, sizeof(blob), &len) == RSHARE_OK &&
		    rshare_mr_import(s->pd[i], blob, len, &mr) == RSHARE_OK &&
		    rshare_mr_unimport(mr) != RSHARE_OK)
			abort();
		release_mr(&s->mr[i]);
		break;
	case 10: /* allocate device memory and write it */
		release_dm(&s->dm[i]);
		if (rshare_dm_alloc(s->dev, 1 + i * 5000u, &s->dm[i]) != RSHARE_OK)
			s->dm[i] = NULL;
		else
			rshare_dm_write(s->dm[i], 0, "fuzz", 4);
		break;
	case 11: /* import and read it, then free it */
		if (s->dm[i] && rshare_dm_export(s->dm[i], blob, sizeof(blob), &len) == RSHARE_OK &&
		    rshare_dm_import(s->dev, blob, len, &dm) == RSHARE_OK) {
			rshare_dm_read(dm, 0, buf, 1);
			if (rshare_dm_unimport(dm) != RSHARE_OK)
				abort();
		}
		release_dm(&s->dm[i]);
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct state s = { 0 };
	struct stat st;
	int fd;

	if (rshare_device_open("sim0", &s.dev) != RSHARE_OK ||
	    rshare_device_fd(s.dev, &fd) != RSHARE_OK || fstat(fd, &st) != 0)
		abort();
	s.len = (size_t)st.st_size;
	s.map = mmap(NULL, s.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s.map == MAP_FAILED)
		abort();
	for (size_t at = 0; at < size;) {
		unsigned op = data[at++] % 12;

		if (op == 0) {
			if (size - at < 13)
				break;
			poke(&s, data + at);
			at += 13;
		} else {
			if (at >= size)
				break;
			call(&s, op, data[at++] % SLOTS);
		}
	}
	for (int i = 0; i < SLOTS; i++) {
		release_mr(&s.mr[i]);
		release_dm(&s.dm[i]);
		release_pd(&s.pd[i]);
		release_var(&s.var[i]);
	}
	munmap(s.map, s.len);
	if (rshare_device_close(s.dev) != RSHARE_OK)
		abort(); /* a handle leaked */
	return 0;
}
