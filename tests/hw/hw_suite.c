/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The hardware provider's suite. One program, one mode per run:
 *
 *   hw_suite standin      against the stand-in rdma-core 63 (VAR sharing)
 *   hw_suite standin-44   against the stand-in without MLX5_1.27
 *   hw_suite real         against the system rdma-core and a real device;
 *                         exits 77 (ctest: skipped) with the reason when
 *                         rdma-core lists no RDMA device.
 *                         RSHARE_TEST_DEVICE=<name> picks the device.
 *
 * The stand-in modes need RSHARE_LIBIBVERBS / RSHARE_LIBMLX5 pointing at the
 * stand-in (ctest sets them). Children of the cross-process cases re-run
 * this program as "child-share <fd>" or "child-var63 <fd>".
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "hw_suite.h"
#include "sk_kernel.h"

rshare_device *hw_open_dev(const char *name)
{
	rshare_device *dev = NULL;

	REQUIRE_OK(rshare_device_open(name, &dev));
	return dev;
}

rshare_device *hw_import_dev(rshare_device *from)
{
	rshare_device *dev = NULL;
	int fd;

	REQUIRE_OK(rshare_device_fd(from, &fd));
	REQUIRE_OK(rshare_device_import(fd, &dev));
	return dev;
}

void hw_hook(const char *name, const char *value)
{
	REQUIRE(value ? setenv(name, value, 1) == 0 : unsetenv(name) == 0);
	sk_env_changed();
}

static void remove_state(void)
{
	unlink(getenv("STANDIN_DEVICE_STATE"));
}

static void setup_standin(struct hw_target *t)
{
	const char *lib = getenv("RSHARE_LIBIBVERBS");

	if (!lib || !strstr(lib, "standin")) {
		fprintf(stderr, "hw_suite %s: RSHARE_LIBIBVERBS must point at the "
			"stand-in libibverbs.so.1 (run it through ctest)\n", t->mode);
		exit(2);
	}
	t->standin = true;
	/* The stand-in device's own state (VAR pages, PD numbers, mkeys),
	 * shared with the children this suite starts, gone with the suite. */
	if (!getenv("STANDIN_DEVICE_STATE")) {
		static char path[] = "/tmp/rshare-standin-device-XXXXXX";
		int fd = mkstemp(path);

		REQUIRE(fd >= 0);
		close(fd);
		setenv("STANDIN_DEVICE_STATE", path, 1);
		atexit(remove_state);
	}
	strcpy(t->name, STANDIN_MLX5);
	t->guid = STANDIN_MLX5_GUID;
	strcpy(t->other, STANDIN_OTHER);
	t->vars = true;
	t->var_sharing = strcmp(t->mode, "standin") == 0;
}

/* Find out what the real device can do, and say what will not be run. */
static void probe_real_vars(struct hw_target *t)
{
	unsigned char blob[RSHARE_BLOB_MAX];
	rshare_device *dev;
	rshare_var *var;
	size_t len;
	int s;

	REQUIRE_OK(rshare_device_open(t->name, &dev));
	s = rshare_var_alloc(dev, 0, &var);
	if (s == RSHARE_OK) {
		t->vars = true;
		s = rshare_var_export(var, blob, sizeof(blob), &len);
		t->var_sharing = s == RSHARE_OK;
		if (!t->var_sharing)
			printf("note: VAR sharing cases not run on %s: %s (%s)\n",
			       t->name, rshare_status_name(s), rshare_last_error());
		REQUIRE_OK(rshare_var_free(var));
	} else {
		printf("note: VAR cases not run on %s: %s (%s)\n", t->name,
		       rshare_status_name(s), rshare_last_error());
	}
	REQUIRE_OK(rshare_device_close(dev));
}

static void setup_real(struct hw_target *t)
{
	const char *want = getenv("RSHARE_TEST_DEVICE");
	char name[RSHARE_NAME_MAX];
	size_t n;

	REQUIRE_OK(rshare_devices_count(&n));
	for (size_t i = 0; i < n; i++) {
		uint64_t guid;
		int prov;

		REQUIRE_OK(rshare_devices_get(i, name, sizeof(name), &guid, &prov));
		if (prov != RSHARE_PROVIDER_HW)
			continue;
		if (!t->name[0] && (!want || strcmp(want, name) == 0)) {
			strcpy(t->name, name);
			t->guid = guid;
		} else if (t->name[0] && !t->other[0] && guid != t->guid) {
			strcpy(t->other, name);
		}
	}
	if (!t->name[0]) {
		printf("SKIP: %s\n", want ? "RSHARE_TEST_DEVICE names no RDMA device "
		       "listed by rdma-core" : "rdma-core lists no RDMA device on this "
		       "host (no RDMA NIC, no kernel RDMA stack, or no rdma-core)");
		exit(77);
	}
	printf("real device: %s (GUID 0x%016llx)\n", t->name, (unsigned long long)t->guid);
	if (!t->other[0])
		printf("note: GUID mismatch case not run: a single RDMA device\n");
	probe_real_vars(t);
}

#define HW_CASE(name, when, why_not)                                             \
	static bool when_##name(const struct hw_target *t)                       \
	{                                                                        \
		(void)t;                                                         \
		return (when);                                                   \
	}
#include "hw_cases.def"
#undef HW_CASE

static const struct hw_case {
	const char *name;
	void (*run)(const struct hw_target *t);
	bool (*when)(const struct hw_target *t);
	const char *why_not;
} cases[] = {
#define HW_CASE(name, when, why_not) { #name, case_##name, when_##name, why_not },
#include "hw_cases.def"
#undef HW_CASE
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const struct hw_case *find_case(const char *name)
{
	for (size_t i = 0; i < NCASES; i++)
		if (strcmp(cases[i].name, name) == 0)
			return &cases[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct hw_target t = { .mode = argc > 1 ? argv[1] : "", .self = argv[0] };
	const struct hw_case *only = NULL;
	int fds;

	if (argc == 3 && strcmp(argv[1], "child-share") == 0)
		return child_share(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "child-mrdm") == 0)
		return child_mrdm(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "child-dmmap") == 0)
		return child_dmmap(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "child-dmnomap") == 0)
		return child_dmnomap(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "child-var63") == 0)
		return child_var63(atoi(argv[2]));
	if (argc == 3 && !(only = find_case(argv[2]))) {
		fprintf(stderr, "hw_suite: no case \"%s\"\n", argv[2]);
		return 2;
	}
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: hw_suite standin|standin-44|real [case]\n");
		return 2;
	}
	if (strcmp(t.mode, "standin") == 0 || strcmp(t.mode, "standin-44") == 0)
		setup_standin(&t);
	else if (strcmp(t.mode, "real") == 0)
		setup_real(&t);
	else {
		fprintf(stderr, "hw_suite: unknown mode \"%s\"\n", t.mode);
		return 2;
	}

	{
		rshare_device *dev;

		REQUIRE_OK(rshare_device_open(t.name, &dev));
		REQUIRE_OK(rshare_device_caps(dev, &t.caps));
		REQUIRE_OK(rshare_device_close(dev));
	}
	if (only && !only->when(&t)) {
		printf("SKIP: case %s does not apply to %s on %s: %s\n", only->name, t.mode,
		       t.name, only->why_not);
		return 77;
	}
	fds = count_fds();
	for (size_t i = 0; i < NCASES; i++) {
		if (only && &cases[i] != only)
			continue;
		if (cases[i].when(&t))
			cases[i].run(&t);
		else
			printf("note: case %s not run on %s: %s\n", cases[i].name, t.name,
			       cases[i].why_not);
	}
	CHECK(count_fds() == fds); /* nothing leaked over the whole run */

	printf("hw_suite %s%s%s on %s: %d passed, %d failed\n", t.mode, only ? " " : "",
	       only ? only->name : "", t.name, t_pass, t_fail);
	return t_fail ? 1 : 0;
}
