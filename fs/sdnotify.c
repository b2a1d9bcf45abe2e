/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "sdnotify.h"
#include "util.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

int sd_notifyf(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	if (!path || !*path)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	if (n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0; /* abstract namespace */
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int r = 0;
	if (fd < 0)
		r = -errno;
	else if (sendto(fd, b.s, b.len, MSG_NOSIGNAL, (struct sockaddr *)&sa,
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				    n)) < 0)
		r = -errno;
	if (fd >= 0)
		close(fd);
	sb_free(&b);
	return r;
}
