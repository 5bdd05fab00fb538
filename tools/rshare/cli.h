/* Shared helpers of the `rshare` command's subcommands. */
#ifndef RSHARE_CLI_H
#define RSHARE_CLI_H

#include <stdint.h>

#include "rshare/rshare.h"

/* Print "what: RSHARE_E_...: last error" to stderr; returns 1 (exit code). */
int cli_fail(const char *what, int status);
/* Monotonic clock in nanoseconds. */
uint64_t cli_now_ns(void);
const char *cli_provider_name(int provider);

int cmd_devices(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_demo_worker(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
