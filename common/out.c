// SPDX-License-Identifier: MIT
/*
 * rtune's output-file writer (see rt_out.h): "-" is standard output, a regular file or a new name is replaced
 * atomically through a temporary file in the same directory, a FIFO or character device is written in place, anything
 * else is refused, and symlinks are not followed out of shared (sticky, world-writable) directories.
 */
#include "rt_out.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory part of path into dir (len bytes). */
static void dir_of(const char *path, char *dir, size_t len)
{
	char tmp[RT_OUT_PATH_LEN];

	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(dir, len, "%s", dirname(tmp));
}

/* Creates the temporary file next to o->dest with permission mode; returns 0 or an errno with err set. */
static int open_temp(struct rt_out *o, unsigned mode, struct rt_error *err)
{
	char dir[RT_OUT_PATH_LEN], base[RT_OUT_PATH_LEN], tmp[RT_OUT_PATH_LEN];
	unsigned char rnd[6];

	dir_of(o->dest, dir, sizeof(dir));
	snprintf(tmp, sizeof(tmp), "%s", o->dest);
	snprintf(base, sizeof(base), "%s", basename(tmp));
	o->fd = -1;
	for (int tries = 0; tries < 16 && o->fd < 0; tries++) {
		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return rt_error_set(err, EIO, "cannot write '%s': getrandom failed", o->path);
		snprintf(o->tmp, sizeof(o->tmp), "%s/.%.200s.%02x%02x%02x%02x%02x%02x.tmp", dir, base, rnd[0], rnd[1],
			 rnd[2], rnd[3], rnd[4], rnd[5]);
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (o->fd < 0 && errno != EEXIST)
			return rt_error_set(err, errno, "cannot write '%s': %s", o->path, strerror(errno));
	}
	if (o->fd < 0)
		return rt_error_set(err, EEXIST, "cannot write '%s': no free temporary name", o->path);
	if (fchmod(o->fd, (mode_t)mode) < 0) {
		int e = errno;

		close(o->fd);
		unlink(o->tmp);
		return rt_error_set(err, e, "cannot write '%s': %s", o->path, strerror(e));
	}
	o->atomic = true;
	return 0;
}

/*
 * Opens an existing FIFO or character device in place (never created, truncated or replaced). follow: path is a
 * symlink the caller decided to follow. Checks after opening that the object is still the one lstat/stat saw.
 */
static int open_in_place(struct rt_out *o, const struct stat *seen, bool follow, struct rt_error *err)
{
	struct stat now;

	o->fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (o->fd < 0)
		return rt_error_set(err, errno, "cannot write '%s': %s", o->path, strerror(errno));
	if (fstat(o->fd, &now) < 0 || now.st_dev != seen->st_dev || now.st_ino != seen->st_ino ||
	    (now.st_mode & S_IFMT) != (seen->st_mode & S_IFMT)) {
		close(o->fd);
		o->fd = -1;
		return rt_error_set(err, EAGAIN, "cannot write '%s': it changed while being opened", o->path);
	}
	return 0;
}

int rt_out_open(const char *path, unsigned mode, struct rt_out *o, struct rt_error *err)
{
	char dir[RT_OUT_PATH_LEN];
	struct stat dst, lst, st;
	bool shared, follow = false;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (!path || !*path)
		return rt_error_set(err, EINVAL, "cannot write '': empty file name");
	if (strcmp(path, "-") == 0) {
		fflush(stdout); /* what the caller printed with stdio comes first */
		o->is_stdout = true;
		o->fd = STDOUT_FILENO;
		snprintf(o->path, sizeof(o->path), "standard output");
		return 0;
	}
	if (strlen(path) >= sizeof(o->path))
		return rt_error_set(err, ENAMETOOLONG, "cannot write '%.64s...': path too long", path);
	snprintf(o->path, sizeof(o->path), "%s", path);
	snprintf(o->dest, sizeof(o->dest), "%s", path);
	dir_of(path, dir, sizeof(dir));
	if (stat(dir, &dst) < 0)
		return rt_error_set(err, errno, "cannot write '%s': directory '%s': %s", path, dir, strerror(errno));
	shared = S_ISDIR(dst.st_mode) && (dst.st_mode & S_ISVTX) && (dst.st_mode & S_IWOTH);
	if (lstat(path, &lst) < 0) {
		if (errno != ENOENT)
			return rt_error_set(err, errno, "cannot write '%s': %s", path, strerror(errno));
		return open_temp(o, mode, err);
	}
	st = lst;
	if (S_ISLNK(lst.st_mode)) {
		char real[PATH_MAX];

		if (shared)
			return rt_error_set(err, EPERM,
					    "cannot write '%s': a symlink in the shared directory '%s' is not followed",
					    path, dir);
		if (stat(path, &st) < 0)
			return rt_error_set(err, errno, "cannot write '%s': symlink to %s", path,
					    errno == ENOENT ? "nothing (dangling)" : strerror(errno));
		follow = true;
		if (S_ISREG(st.st_mode)) {
			/* the target is what gets replaced, in its own directory; the symlink stays */
			errno = 0;
			if (!realpath(path, real) || strlen(real) >= sizeof(o->dest))
				return rt_error_set(err, errno ? errno : ENAMETOOLONG, "cannot write '%s': %s", path,
						    strerror(errno ? errno : ENAMETOOLONG));
			snprintf(o->dest, sizeof(o->dest), "%s", real);
		}
	}
	if (S_ISREG(st.st_mode))
		return open_temp(o, st.st_mode & 0777, err);
	if (S_ISDIR(st.st_mode))
		return rt_error_set(err, EISDIR, "cannot write '%s': is a directory", path);
	if (S_ISSOCK(st.st_mode))
		return rt_error_set(err, ENOTSUP, "cannot write '%s': is a socket (not written to)", path);
	if (S_ISBLK(st.st_mode))
		return rt_error_set(err, ENOTSUP, "cannot write '%s': is a block device (not written to)", path);
	if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
		return rt_error_set(err, ENOTSUP, "cannot write '%s': not a regular file, FIFO or device", path);
	if (shared && st.st_uid != geteuid() && st.st_uid != dst.st_uid)
		return rt_error_set(
			err, EPERM,
			"cannot write '%s': owned by another user in the shared directory '%s' (not written "
			"to)",
			path, dir);
	return open_in_place(o, &st, follow, err);
}

int rt_out_write(struct rt_out *o, const void *data, size_t len, struct rt_error *err)
{
	const char *p = data;

	if (o->failed)
		return rt_error_set(err, o->write_errno, "cannot write '%s': %s", o->path, strerror(o->write_errno));
	while (len) {
		ssize_t w = write(o->fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->failed = true;
			o->write_errno = w < 0 ? errno : EIO;
			return rt_error_set(err, o->write_errno, "cannot write '%s': %s", o->path,
					    strerror(o->write_errno));
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int rt_out_commit(struct rt_out *o, struct rt_error *err)
{
	char dir[RT_OUT_PATH_LEN];
	int e = o->failed ? o->write_errno : 0, dfd;

	if (o->is_stdout) {
		o->fd = -1;
		return e ? rt_error_set(err, e, "cannot write to standard output: %s", strerror(e)) : 0;
	}
	if (o->fd < 0)
		return rt_error_set(err, EBADF, "cannot write '%s': not open", o->path);
	if (!o->atomic) {
		if (close(o->fd) < 0 && !e)
			e = errno;
		o->fd = -1;
		return e ? rt_error_set(err, e, "cannot write '%s': %s", o->path, strerror(e)) : 0;
	}
	if (!e && fsync(o->fd) < 0)
		e = errno;
	if (close(o->fd) < 0 && !e)
		e = errno;
	o->fd = -1;
	/* rename replaces the destination (never following a symlink there) in one step */
	if (!e && rename(o->tmp, o->dest) < 0)
		e = errno;
	if (e) {
		unlink(o->tmp);
		return rt_error_set(err, e, "cannot write '%s': %s", o->path, strerror(e));
	}
	dir_of(o->dest, dir, sizeof(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

void rt_out_abort(struct rt_out *o)
{
	if (o->fd >= 0 && !o->is_stdout)
		close(o->fd);
	if (o->atomic)
		unlink(o->tmp);
	o->fd = -1;
	o->atomic = false;
}

int rt_out_write_file(const char *path, const void *data, size_t len, unsigned mode, struct rt_error *err)
{
	struct rt_out o;
	int rc = rt_out_open(path, mode, &o, err);

	if (rc)
		return rc;
	if ((rc = rt_out_write(&o, data, len, err))) {
		rt_out_abort(&o);
		return rc;
	}
	return rt_out_commit(&o, err);
}
