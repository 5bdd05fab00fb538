/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Locked atomic operations per call, counted in the compiled library.
 *
 * A child runs each call between two markers (raise SIGUSR1, call, raise
 * SIGUSR2); the parent single-steps it with ptrace and looks at every
 * instruction it executes inside librshare.so: a lock prefix, or xchg with
 * a memory operand (locked without a prefix), is a locked atomic operation.
 * The library's symbol table (STT_FILE entries and function symbols) says
 * which function, so which source file, each belongs to: the ABI layer (the
 * core and its utilities) is counted apart from the provider (sim0's own
 * lock is the floor, not the layer).
 *
 * The aim (issue 10): at most two in the ABI layer per call on the
 * uncontended path. Calls with an mmap or munmap system call (the first
 * map of a VAR page, an unmap of a mapped one) take one more to publish or
 * withdraw the mapping; an MR's registration and import take three (pin
 * its PD, count in the PD, unpin): those bounds are in the table below.
 */
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* ---- the child: the calls, each between markers ---- */

static rshare_device *dev;
static rshare_pd *pd, *ipd;
static rshare_var *var, *ivar;
static rshare_mr *mr, *imr;
static rshare_dm *dm;
static unsigned char pblob[RSHARE_BLOB_MAX], vblob[RSHARE_BLOB_MAX], mblob[RSHARE_BLOB_MAX];
static unsigned char buf[RSHARE_BLOB_MAX];
static size_t plen, vlen, mlen, len;
static uint32_t u32;
static int fd;
static void *addr;
static char region[8192] __attribute__((aligned(4096)));

struct call {
	const char *name;
	int max;        /* locked operations allowed in the ABI layer */
	int (*run)(void);
};

static int c_pd_alloc(void) { return rshare_pd_alloc(dev, &pd); }
static int c_pd_export(void) { return rshare_pd_export(pd, buf, sizeof(buf), &len); }
static int c_pd_handle(void) { return rshare_pd_handle(pd, &u32); }
static int c_pd_import(void) { return rshare_pd_import(dev, pblob, plen, &ipd); }
static int c_pd_unimport(void) { return rshare_pd_unimport(ipd); }
static int c_pd_free(void) { return rshare_pd_free(pd); }
static int c_var_alloc(void) { return rshare_var_alloc(dev, 0, &var); }
static int c_var_export(void) { return rshare_var_export(var, buf, sizeof(buf), &len); }
static int c_var_import(void) { return rshare_var_import(dev, vblob, vlen, &ivar); }
static int c_var_attrs(void) { return rshare_var_attrs(ivar, &u32, &u32, NULL); }
static int c_var_map(void) { return rshare_var_map(ivar, &addr); }
static int c_var_unmap(void) { return rshare_var_unmap(ivar); }
static int c_var_unimport(void) { return rshare_var_unimport(ivar); }
static int c_var_free(void) { return rshare_var_free(var); }
static int c_mr_reg(void) { return rshare_mr_reg(pd, region, 4096, RSHARE_ACCESS_LOCAL_WRITE, &mr); }
static int c_mr_export(void) { return rshare_mr_export(mr, buf, sizeof(buf), &len); }
static int c_mr_import(void) { return rshare_mr_import(pd, mblob, mlen, &imr); }
static int c_mr_unimport(void) { return rshare_mr_unimport(imr); }
static int c_mr_dereg(void) { return rshare_mr_dereg(mr); }
static int c_dm_alloc(void) { return rshare_dm_alloc(dev, 64, &dm); }
static int c_dm_write(void) { return rshare_dm_write(dm, 0, "x", 1); }
static int c_dm_free(void) { return rshare_dm_free(dm); }
static int c_device_fd(void) { return rshare_device_fd(dev, &fd); }
static int c_stale(void) { return rshare_pd_handle(ipd, &u32) == RSHARE_E_STALE ? 0 : -1; }

/* In order: each call's objects come from the ones before it. */
static const struct call calls[] = {
	{ "pd_alloc", 2, c_pd_alloc },       { "pd_export", 2, c_pd_export },
	{ "pd_handle", 2, c_pd_handle },     { "pd_import", 2, c_pd_import },
	{ "pd_unimport", 2, c_pd_unimport }, { "pd_handle(stale)", 2, c_stale },
	{ "var_alloc", 2, c_var_alloc },     { "var_export", 2, c_var_export },
	{ "var_import", 2, c_var_import },   { "var_attrs", 2, c_var_attrs },
	{ "var_map(first: mmap)", 3, c_var_map }, { "var_map(again)", 2, c_var_map },
	{ "var_unmap(munmap)", 3, c_var_unmap }, { "var_unimport", 2, c_var_unimport },
	{ "var_free", 2, c_var_free },       { "mr_reg", 3, c_mr_reg },
	{ "mr_export", 2, c_mr_export },     { "mr_import", 3, c_mr_import },
	{ "mr_unimport", 2, c_mr_unimport }, { "mr_dereg", 2, c_mr_dereg },
	{ "pd_free", 2, c_pd_free },         { "dm_alloc", 2, c_dm_alloc },
	{ "dm_write", 2, c_dm_write },       { "dm_free", 2, c_dm_free },
	{ "device_fd", 2, c_device_fd },
};
#define NCALLS (sizeof(calls) / sizeof(calls[0]))

/* What a call leaves for the next ones: mr_import needs the blob of the
 * MR just registered. */
static int after(size_t i)
{
	if (strcmp(calls[i].name, "mr_reg") == 0)
		return rshare_mr_export(mr, mblob, sizeof(mblob), &mlen);
	return 0;
}

/* Make every call once first: lazy binding, first-use set-up and the
 * slot cache are then out of the way, as on any warm path. */
static int warm_up(void)
{
	rshare_pd *p;
	rshare_var *v;

	if (rshare_device_open("sim0", &dev) || rshare_pd_alloc(dev, &p) ||
	    rshare_pd_export(p, pblob, sizeof(pblob), &plen) ||
	    rshare_var_alloc(dev, 0, &v) || rshare_var_export(v, vblob, sizeof(vblob), &vlen))
		return -1;
	for (int round = 0; round < 3; round++)
		for (size_t i = 0; i < NCALLS; i++)
			if (calls[i].run() || after(i))
				return -1;
	/* The blobs the measured imports use. */
	if (rshare_pd_free(p) || rshare_var_free(v) || rshare_pd_alloc(dev, &p) ||
	    rshare_pd_export(p, pblob, sizeof(pblob), &plen) || rshare_var_alloc(dev, 0, &v) ||
	    rshare_var_export(v, vblob, sizeof(vblob), &vlen))
		return -1;
	return 0;
}

static void child(void)
{
	if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
		_exit(10);
	raise(SIGSTOP);
	if (warm_up())
		_exit(11);
	for (size_t i = 0; i < NCALLS; i++) {
		int s;

		raise(SIGUSR1);
		s = calls[i].run();
		raise(SIGUSR2);
		if (s || after(i))
			_exit(20 + (int)i);
	}
	_exit(0);
}

/* ---- the parent: which function each address is in ---- */

struct func {
	uint64_t lo, hi;
	bool layer; /* the ABI layer (core, util) rather than a provider */
	const char *name, *file;
};

static struct func *funcs;
static size_t nfuncs;

static bool provider_file(const char *f)
{
	return !strncmp(f, "sim_", 4) || !strncmp(f, "hw_", 3);
}

static bool provider_func(const char *n)
{
	return !strncmp(n, "sim_", 4) || !strncmp(n, "hw_", 3) || !strncmp(n, "rs_sim", 6) ||
	       !strncmp(n, "rs_hw", 5);
}

/* The function symbols of the library file, from its .symtab. */
static void load_symbols(const char *path)
{
	int f = open(path, O_RDONLY);
	struct stat sb;
	const uint8_t *img;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;

	REQUIRE(f >= 0 && fstat(f, &sb) == 0);
	img = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, f, 0);
	REQUIRE(img != MAP_FAILED);
	close(f);
	eh = (const Elf64_Ehdr *)img;
	sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym;
		const char *str, *file = "";
		size_t n;

		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
		str = (const char *)(img + sh[sh[i].sh_link].sh_offset);
		n = sh[i].sh_size / sizeof(*sym);
		funcs = calloc(n, sizeof(*funcs));
		REQUIRE(funcs != NULL);
		for (size_t k = 0; k < n; k++) {
			const char *name = str + sym[k].st_name;
			if (ELF64_ST_TYPE(sym[k].st_info) == STT_FILE)
				file = name;
			if (ELF64_ST_TYPE(sym[k].st_info) != STT_FUNC || !sym[k].st_size)
				continue;
			funcs[nfuncs].name = name;
			funcs[nfuncs].file = file;
			funcs[nfuncs].lo = sym[k].st_value;
			funcs[nfuncs].hi = sym[k].st_value + sym[k].st_size;
			/* Hidden globals are local in the linked library and come
			 * after every file's own: the name tells those apart. */
			funcs[nfuncs].layer = !provider_file(file) && !provider_func(name);
			nfuncs++;
		}
	}
	REQUIRE(nfuncs > 0); /* the library keeps its symbol table */
}

static const struct func *func_at(uint64_t off)
{
	for (size_t i = 0; i < nfuncs; i++)
		if (off >= funcs[i].lo && off < funcs[i].hi)
			return &funcs[i];
	return NULL;
}

/* The library's file and load base in the child (its first mapping). */
static uint64_t lib_base(pid_t pid, char *path, size_t cap)
{
	char maps[64], line[512];
	FILE *f;
	uint64_t base = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	f = fopen(maps, "r");
	REQUIRE(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		unsigned long long lo, off;
		if (!p || !strstr(p, "librshare.so"))
			continue;
		if (sscanf(line, "%llx-%*x %*s %llx", &lo, &off) == 2 && off == 0) {
			base = lo;
			snprintf(path, cap, "%.*s", (int)strcspn(p, "\n"), p);
			break;
		}
	}
	fclose(f);
	REQUIRE(base != 0);
	return base;
}

/* Does the instruction at bytes lock the bus? */
static bool locked(const uint8_t *b)
{
	int i = 0;
	bool lock = false;

	for (; i < 14; i++) {
		if (b[i] == 0xf0)
			lock = true;
		else if (b[i] != 0x66 && b[i] != 0x67 && b[i] != 0xf2 && b[i] != 0xf3 &&
			 b[i] != 0x2e && b[i] != 0x36 && b[i] != 0x3e && b[i] != 0x26 &&
			 b[i] != 0x64 && b[i] != 0x65)
			break;
	}
	if (lock)
		return true;
	if (b[i] >= 0x40 && b[i] <= 0x4f)
		i++;
	/* xchg r/m, r with a memory operand (ModRM mod != 3). */
	return (b[i] == 0x86 || b[i] == 0x87) && (b[i + 1] >> 6) != 3;
}

/* Continue the child to its next stop; the signal it stopped with. */
static int resume(pid_t pid, int req)
{
	int st;

	REQUIRE(ptrace(req, pid, NULL, NULL) == 0);
	REQUIRE(waitpid(pid, &st, 0) == pid);
	if (!WIFSTOPPED(st)) {
		fprintf(stderr, "child ended: status %d\n", st);
		exit(1);
	}
	return WSTOPSIG(st);
}

static void case_locked_ops_per_call(void)
{
	char path[400];
	uint64_t base;
	pid_t pid = fork();

	if (pid == 0)
		child();
	REQUIRE(pid > 0);
	REQUIRE(waitpid(pid, NULL, 0) == pid); /* its SIGSTOP */
	base = lib_base(pid, path, sizeof(path));
	load_symbols(path);
	for (size_t i = 0; i < NCALLS; i++) {
		int layer = 0, provider = 0, sig;
		long steps = 0;

		while ((sig = resume(pid, PTRACE_CONT)) != SIGUSR1)
			REQUIRE(sig == SIGTRAP || sig == SIGSTOP);
		while ((sig = resume(pid, PTRACE_SINGLESTEP)) != SIGUSR2) {
			struct user_regs_struct regs;
			union {
				long w[3];
				uint8_t b[24];
			} ins;
			const struct func *fn;

			REQUIRE(sig == SIGTRAP);
			steps++;
			REQUIRE(ptrace(PTRACE_GETREGS, pid, NULL, &regs) == 0);
			if (regs.rip < base || !(fn = func_at(regs.rip - base)))
				continue; /* outside the library (libc, the kernel's vdso) */
			for (int w = 0; w < 3; w++)
				ins.w[w] = ptrace(PTRACE_PEEKTEXT, pid, (void *)(regs.rip + 8 * w), NULL);
			if (!locked(ins.b))
				continue;
			*(fn->layer ? &layer : &provider) += 1;
			if (getenv("RSHARE_TEST_VERBOSE"))
				printf("  %s %s (%s)\n", fn->layer ? "layer" : "provider", fn->name,
				       fn->file);
		}
		printf("%-22s %d locked in the ABI layer (max %d), %d in the provider, %ld steps\n",
		       calls[i].name, layer, calls[i].max, provider, steps);
		CHECK(layer <= calls[i].max);
		CHECK(steps > 20); /* the call was really stepped through */
	}
	REQUIRE(ptrace(PTRACE_CONT, pid, NULL, NULL) == 0);
	{
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
}

#define T_PROGRAM_test_atomics ~, 1
static const struct t_case t_cases[] = {
#include "c_cases.def"
};
T_MAIN(NULL, NULL)
