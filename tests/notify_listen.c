/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * notify_listen PATH: a stand-in for systemd's notify socket. Binds a
 * datagram socket at PATH and prints every message it receives, one line
 * per field, flushed, until killed.
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: notify_listen PATH\n");
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(argv[1]) >= sizeof(sa.sun_path))
		return 2;
	strcpy(sa.sun_path, argv[1]);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	unlink(argv[1]);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("notify_listen");
		return 1;
	}
	char buf[4096];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n < 0)
			continue;
		buf[n] = 0;
		printf("%s\n", buf);
		fflush(stdout);
	}
}
