/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The systemd notify protocol (sd_notify(3)) without libsystemd: one
 * datagram to $NOTIFY_SOCKET. A no-op when it is not set. */
#pragma once

int sd_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
