/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include <dirent.h>
#include <unistd.h>

#include "harness.h"

int t_pass, t_fail;

int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

int settled_fds(void)
{
	int n = count_fds(), same = 0;

	for (int i = 0; i < 500 && same < 10; i++) {
		usleep(10000);
		same = count_fds() == n ? same + 1 : 0;
		n = count_fds();
	}
	return n;
}

int t_run_cases(const char *file, const struct t_case *cases, size_t n, void (*setup)(void),
		void (*teardown)(void), int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	size_t ran = 0;

	for (size_t i = 0; i < n; i++) {
		if (only && strcmp(cases[i].name, only) != 0)
			continue;
		if (setup)
			setup();
		cases[i].run();
		if (teardown)
			teardown();
		ran++;
	}
	if (only && !ran) {
		fprintf(stderr, "%s: no case \"%s\" (tests/c/c_cases.def)\n", file, only);
		return 2;
	}
	printf("%s%s%s: %d passed, %d failed\n", file, only ? " " : "", only ? only : "", t_pass,
	       t_fail);
	return t_fail ? 1 : 0;
}
