/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "runtime.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

char *vault_id(const char *real_path)
{
	const char *b = strrchr(real_path, '/');
	b = b && b[1] ? b + 1 : "root";
	struct sbuf s = {0};
	/* A readable, filesystem-safe stem; the hash makes it unique. */
	for (const unsigned char *p = (const unsigned char *)b;
	     *p && s.len < 32; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
			sb_putc(&s, (char)*p);
		else if (*p < 0x80)
			sb_putc(&s, '_');
	}
	if (!s.len)
		sb_puts(&s, "vault");
	sb_printf(&s, "-%016llx",
		  (unsigned long long)hash_bytes(real_path, strlen(real_path)));
	return sb_steal(&s);
}

/* mkdir -p with mode 0700 for the last component; check ownership. */
static int private_dir(const char *path, const char **ret_msg)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			*ret_msg = "cannot create the runtime folder";
			return -errno;
		}
		*s = '/';
	}
	if (mkdir(p, 0700) < 0 && errno != EEXIST) {
		*ret_msg = "cannot create the runtime folder";
		return -errno;
	}
	struct stat st;
	if (lstat(p, &st) < 0) {
		*ret_msg = "cannot read the runtime folder";
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		*ret_msg =
			"the runtime folder is not a folder owned by this user";
		return -EPERM;
	}
	if ((st.st_mode & 077) && chmod(p, 0700) < 0) {
		*ret_msg = "cannot make the runtime folder private";
		return -errno;
	}
	return 0;
}

int runtime_dir(char **ret, const char **ret_msg)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	char *dir;
	struct stat st;
	if (x && *x == '/')
		dir = xasprintf("%s/vaultd", x);
	else {
		char ru[64];
		snprintf(ru, sizeof(ru), "/run/user/%u", (unsigned)getuid());
		if (stat(ru, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == getuid())
			dir = xasprintf("%s/vaultd", ru);
		else
			dir = xasprintf("/tmp/vaultd-%u", (unsigned)getuid());
	}
	int r = private_dir(dir, ret_msg);
	if (r < 0) {
		free(dir);
		return r;
	}
	*ret = dir;
	return 0;
}

int socket_path_for(const char *vault_path, char **ret, const char **ret_msg)
{
	char real[PATH_MAX];
	if (!realpath(vault_path, real)) {
		/* A folder moved away under its vaultd: that vaultd still
		 * answers (that the folder is gone) on the old name. */
		size_t n = strlen(vault_path);
		if (errno != ENOENT || vault_path[0] != '/' || n >= PATH_MAX) {
			*ret_msg = "the vault folder does not exist";
			return -errno;
		}
		memcpy(real, vault_path, n + 1);
		while (n > 1 && real[n - 1] == '/')
			real[--n] = 0;
	}
	_cleanup_free_ char *dir = NULL;
	int r = runtime_dir(&dir, ret_msg);
	if (r < 0)
		return r;
	_cleanup_free_ char *id = vault_id(real);
	*ret = xasprintf("%s/%s.sock", dir, id);
	return 0;
}

int cache_dir_for(const char *real_path, char **ret, const char **ret_msg)
{
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	_cleanup_free_ char *base = NULL;
	if (x && *x == '/')
		base = xasprintf("%s/vaultd", x);
	else if (home && *home == '/')
		base = xasprintf("%s/.cache/vaultd", home);
	else {
		*ret_msg = "neither XDG_CACHE_HOME nor HOME is set";
		return -ENOENT;
	}
	_cleanup_free_ char *id = vault_id(real_path);
	char *dir = xasprintf("%s/%s", base, id);
	int r = private_dir(dir, ret_msg);
	if (r < 0) {
		free(dir);
		return r;
	}
	*ret = dir;
	return 0;
}

/* a is b or lies under it (real paths). */
static bool path_within(const char *a, const char *b)
{
	size_t n = strlen(b);
	if (n == 1 && b[0] == '/')
		return true;
	return !strncmp(a, b, n) && (a[n] == '/' || !a[n]);
}

int mount_point_check(const char *vault_root, const char *mountpoint,
		      char **ret_msg)
{
	char real[PATH_MAX];
	if (!realpath(mountpoint, real)) {
		int e = errno;
		if (e == ENOTCONN)
			return 0;
		if (e == ENOENT)
			*ret_msg =
				xasprintf("the mount point %s does not exist: "
					  "create it first (mkdir -p %s)",
					  mountpoint, mountpoint);
		else
			*ret_msg = xasprintf("the mount point %s cannot be "
					     "used: %s",
					     mountpoint, strerror(e));
		return -e;
	}
	if (path_within(real, vault_root)) {
		*ret_msg = xasprintf("the mount point %s is inside the vault "
				     "%s: choose a folder outside it (e.g. "
				     "%s-guarded)",
				     real, vault_root, vault_root);
		return -EINVAL;
	}
	if (path_within(vault_root, real)) {
		*ret_msg =
			xasprintf("the vault %s is inside the mount point "
				  "%s, which would hide it: choose an empty "
				  "folder outside the vault (e.g. %s-guarded)",
				  vault_root, real, vault_root);
		return -EINVAL;
	}
	DIR *d = opendir(real);
	if (!d) {
		int e = errno;
		if (e == ENOTCONN)
			return 0;
		*ret_msg =
			xasprintf(e == ENOTDIR ? "the mount point %s is not a "
						 "folder%s: give a folder"
					       : "the mount point %s cannot be "
						 "read (%s): give a folder of "
						 "yours",
				  real, e == ENOTDIR ? "" : strerror(e));
		return -e;
	}
	/* Mounting over files hides them (they would seem lost) and
	 * usually means a wrong path. */
	struct sbuf seen = {0};
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n < 3)
			sb_printf(&seen, "%s'%s'", n ? ", " : "", de->d_name);
		n++;
	}
	closedir(d);
	if (n) {
		*ret_msg = xasprintf(
			"the mount point %s is not empty (it holds %s%s): the "
			"mount would hide what is there; give an empty folder "
			"(e.g. mkdir -p %s-guarded)",
			real, seen.s, n > 3 ? " and more" : "", vault_root);
		sb_free(&seen);
		return -ENOTEMPTY;
	}
	sb_free(&seen);
	return 0;
}
