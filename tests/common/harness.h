/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The C tests' harness: CHECK records a failure and goes on, so one run
 * shows every broken expectation; REQUIRE stops a test that cannot go on.
 * main() ends with TEST_DONE(), which prints "N passed, N failed" and turns
 * failures into a non-zero exit. The counters live in harness.c, so a test
 * may span several files.
 */
#ifndef RSHARE_TEST_HARNESS_H
#define RSHARE_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rshare/rshare.h"

extern int t_pass, t_fail;

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (cond) {                                                      \
			t_pass++;                                                \
		} else {                                                         \
			t_fail++;                                                \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__,   \
				__LINE__, #cond);                                \
		}                                                                \
	} while (0)

/* Expect a status; on mismatch show both names and the library's message. */
#define CHECK_ST(expr, want)                                                     \
	do {                                                                     \
		int got_ = (expr);                                               \
		if (got_ == (want)) {                                            \
			t_pass++;                                                \
		} else {                                                         \
			t_fail++;                                                \
			fprintf(stderr, "%s:%d: %s = %s, expected %s (%s)\n",    \
				__FILE__, __LINE__, #expr,                       \
				rshare_status_name(got_),                        \
				rshare_status_name(want), rshare_last_error());  \
		}                                                                \
	} while (0)

#define CHECK_OK(expr) CHECK_ST(expr, RSHARE_OK)

/* The thread's last error mentions text. */
#define CHECK_MSG(text)                                                          \
	do {                                                                     \
		if (strstr(rshare_last_error(), (text))) {                       \
			t_pass++;                                                \
		} else {                                                         \
			t_fail++;                                                \
			fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n", \
				__FILE__, __LINE__, rshare_last_error(), (text)); \
		}                                                                \
	} while (0)

/* A condition a test cannot go on without. */
#define REQUIRE(cond)                                                            \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: %s: cannot go on\n", __FILE__,   \
				__LINE__, #cond);                                \
			exit(1);                                                 \
		}                                                                \
	} while (0)

/* A step a test cannot go on without. */
#define REQUIRE_OK(expr)                                                         \
	do {                                                                     \
		int got_ = (expr);                                               \
		if (got_ != RSHARE_OK) {                                         \
			fprintf(stderr, "%s:%d: %s = %s (%s): cannot go on\n",   \
				__FILE__, __LINE__, #expr,                       \
				rshare_status_name(got_), rshare_last_error());  \
			exit(1);                                                 \
		}                                                                \
	} while (0)

#define TEST_DONE()                                                              \
	do {                                                                     \
		printf("%s: %d passed, %d failed\n", __FILE__, t_pass, t_fail);  \
		return t_fail ? 1 : 0;                                           \
	} while (0)

/* Open fds of this process, to prove that failures leak none. */
int count_fds(void);

/* The fd count once a background thread (the broker's) has caught up with
 * the connections closed so far: stable for 100 ms. */
int settled_fds(void);

/*
 * Named cases. tests/c/c_cases.def lists every case of every C test
 * program, C_CASE(program, name), in running order: it is the one list
 * that a program runs (each name is its function case_<name>) and that
 * tests/c/CMakeLists.txt registers, each case its own ctest test
 * c_<program without test_>.<name>. A program says which entries are its
 * own, makes its table of them and ends with T_MAIN (or T_RUN from its own
 * main, after its helper modes):
 *
 *   ...static void case_alloc_free(void) { ... }...
 *   #define T_PROGRAM_test_pd ~, 1
 *   static const struct t_case t_cases[] = {
 *   #include "c_cases.def"
 *   };
 *   T_MAIN(NULL, NULL)
 *
 * A case listed but not written fails the build (case_<name> undeclared),
 * a case written but not listed too (-Werror=unused-function).
 */
struct t_case {
	const char *name;
	void (*run)(void);
};

/* Run the case named argv[1] alone (exit 2 for a name the list lacks), or
 * every case in order; setup and teardown (may be NULL) around each. Prints
 * "file[ case]: N passed, N failed"; returns the exit status. */
int t_run_cases(const char *file, const struct t_case *cases, size_t n, void (*setup)(void),
		void (*teardown)(void), int argc, char **argv);

/* The C_CASE entries of this program (T_PROGRAM_<program> defined as
 * "~, 1"), the others expanding to nothing. */
#define T_ARG2_(a, b, ...) b
#define T_MINE_(...) T_ARG2_(__VA_ARGS__, 0, ~)
#define T_CAT_(a, b) a##b
#define T_CAT(a, b) T_CAT_(a, b)
#define T_IF_1(...) __VA_ARGS__
#define T_IF_0(...)
#define C_CASE(program, name) T_CAT(T_IF_, T_MINE_(T_PROGRAM_##program))({ #name, case_##name },)
#define T_RUN(setup, teardown, argc, argv)                                       \
	t_run_cases(__FILE__, t_cases, sizeof(t_cases) / sizeof(t_cases[0]), setup, \
		    teardown, argc, argv)
#define T_MAIN(setup, teardown)                                                  \
	int main(int argc, char **argv)                                          \
	{                                                                        \
		return T_RUN(setup, teardown, argc, argv);                       \
	}

/* Export helpers that must succeed in a test's set-up. */
static inline size_t export_pd(rshare_pd *pd, unsigned char *buf)
{
	size_t len = 0;
	REQUIRE_OK(rshare_pd_export(pd, buf, RSHARE_BLOB_MAX, &len));
	return len;
}

static inline size_t export_var(rshare_var *var, unsigned char *buf)
{
	size_t len = 0;
	REQUIRE_OK(rshare_var_export(var, buf, RSHARE_BLOB_MAX, &len));
	return len;
}

#endif
