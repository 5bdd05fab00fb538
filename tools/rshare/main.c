/* rshare: list devices, run the sharing demo, inspect blobs, benchmark. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: rshare <command> [options]\n"
	"\n"
	"  devices [--json]                       list devices (hardware first, then sim0)\n"
	"  demo [--device NAME] [--workers N]     share a PD and a VAR with N worker processes\n"
	"  inspect BLOB|FILE|-                    print a blob (text form, binary file or stdin) as JSON\n"
	"  bench [--device NAME]                  per-operation latency against the provider floor\n"
	"  version                                print the library version\n";

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} cmds[] = {
		{ "devices", cmd_devices }, { "demo", cmd_demo },
		{ "inspect", cmd_inspect }, { "bench", cmd_bench },
		{ "__demo-worker", cmd_demo_worker },
	};

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("rshare %s\n", rshare_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "rshare: unknown command \"%s\"\n\n%s", argv[1], usage);
	return 2;
}
