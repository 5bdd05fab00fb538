/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Two Lua processes joined by a socket: for every ordered pair of the
 * interpreters given (each with itself too), a socketpair and two children,
 * `SENDER SCRIPT send FD` and `RECEIVER SCRIPT recv FD`, each with its end.
 * The Lua scripts do all the sharing; this program only makes the socket,
 * which Lua cannot, and fails when a child does.
 *
 *   usage: pair_launch SCRIPT INTERPRETER...
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t start(const char *interp, const char *script, const char *role, int sock,
		   int other)
{
	char fd[16];
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	close(other);
	snprintf(fd, sizeof(fd), "%d", sock);
	execl(interp, interp, script, role, fd, (char *)NULL);
	perror("pair_launch: exec");
	_exit(127);
}

static int finished(pid_t pid, const char *what)
{
	int status = 0;

	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "pair_launch: %s failed (status 0x%x)\n", what, status);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int failures = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: pair_launch SCRIPT INTERPRETER...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		for (int j = 2; j < argc; j++) {
			char what[512];
			int sv[2];
			pid_t s, r;

			if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
				perror("pair_launch: socketpair");
				return 1;
			}
			s = start(argv[i], argv[1], "send", sv[0], sv[1]);
			r = start(argv[j], argv[1], "recv", sv[1], sv[0]);
			close(sv[0]);
			close(sv[1]);
			snprintf(what, sizeof(what), "%s sending to %s", argv[i], argv[j]);
			failures += finished(s, what);
			failures += finished(r, what);
			if (!failures)
				printf("ok   %s\n", what);
		}
	}
	return failures ? 1 : 0;
}
