/*
 * Assertions of the hardware suite (the shape of tests/c/harness.h, with
 * counters shared by the suite's files). A CHECK records a failure and goes
 * on; REQUIRE stops the process.
 */
#ifndef RSHARE_HW_CHECK_H
#define RSHARE_HW_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rshare/rshare.h"

extern int hw_pass, hw_fail;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (cond) {                                                    \
			hw_pass++;                                             \
		} else {                                                       \
			hw_fail++;                                             \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

#define CHECK_ST(expr, want)                                                   \
	do {                                                                   \
		int got_ = (expr);                                             \
		if (got_ == (want)) {                                          \
			hw_pass++;                                             \
		} else {                                                       \
			hw_fail++;                                             \
			fprintf(stderr, "%s:%d: %s = %s, expected %s (%s)\n",  \
				__FILE__, __LINE__, #expr,                     \
				rshare_status_name(got_),                      \
				rshare_status_name(want), rshare_last_error());\
		}                                                              \
	} while (0)

#define CHECK_OK(expr) CHECK_ST(expr, RSHARE_OK)

/* The thread's last error mentions text. */
#define CHECK_MSG(text)                                                        \
	do {                                                                   \
		if (strstr(rshare_last_error(), (text))) {                     \
			hw_pass++;                                             \
		} else {                                                       \
			hw_fail++;                                             \
			fprintf(stderr, "%s:%d: last error \"%s\" lacks \"%s\"\n", \
				__FILE__, __LINE__, rshare_last_error(), (text)); \
		}                                                              \
	} while (0)

#define REQUIRE_OK(expr)                                                       \
	do {                                                                   \
		int got_ = (expr);                                             \
		if (got_ != RSHARE_OK) {                                       \
			fprintf(stderr, "%s:%d: %s = %s (%s): cannot go on\n", \
				__FILE__, __LINE__, #expr,                     \
				rshare_status_name(got_), rshare_last_error());\
			exit(1);                                               \
		}                                                              \
	} while (0)

#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s: cannot go on\n", __FILE__, \
				__LINE__, #cond);                              \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* Open fds of this process, to prove that failures leak none. */
int hw_count_fds(void);

#endif
