#include <stdio.h>
#include <time.h>

#include "cli.h"

int cli_fail(const char *what, int status)
{
	fprintf(stderr, "rshare: %s: %s: %s\n", what, rshare_status_name(status),
		*rshare_last_error() ? rshare_last_error() : rshare_strerror(status));
	return 1;
}

uint64_t cli_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *cli_provider_name(int provider)
{
	return provider == RSHARE_PROVIDER_HW ? "hw" : provider == RSHARE_PROVIDER_SIM ? "sim" : "?";
}
