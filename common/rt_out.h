/* SPDX-License-Identifier: MIT */
/*
 * The one way rtune writes an output file (export -o, report --html, calibrate --out, probe --out, ...): "-" is
 * standard output; a regular file or a new name is replaced atomically (a temporary file in the same directory,
 * fsync, rename, directory fsync), keeping an existing file's permission bits; a FIFO or a character device (a pipe
 * someone reads, /dev/null, a terminal) is written in place, never replaced; a socket, a block device or a directory
 * is refused. A symlink is followed (its target is what gets written) except in a shared directory (sticky and
 * world-writable, like /tmp), where it is refused, as are a FIFO or device there that neither the user nor the
 * directory's owner owns (the reasoning of the kernel's protected_symlinks / protected_fifos).
 */
#ifndef RT_OUT_H
#define RT_OUT_H

#include <rtune/error.h>

#include <stdbool.h>
#include <stddef.h>

#define RT_OUT_PATH_LEN 4096

/* An output being written; fill it with rt_out_open(), end it with rt_out_commit() or rt_out_abort(). */
struct rt_out {
	int fd;
	bool is_stdout; /* "-": fd is STDOUT_FILENO, never closed */
	bool atomic;	/* fd is the temporary file tmp, renamed to path by commit */
	bool failed;	/* a write failed: commit fails, nothing replaced */
	int write_errno;
	char path[RT_OUT_PATH_LEN]; /* what the user named (messages) */
	char dest[RT_OUT_PATH_LEN]; /* what is replaced (path, or a symlink's target) */
	char tmp[RT_OUT_PATH_LEN + 64];
};

/*
 * Opens path for writing as described above; mode is the permission of a new file (an existing regular file keeps
 * its own). A FIFO blocks here until a reader opens it, as a shell's redirection does. Returns 0, or an errno with
 * err set to one line naming path ("cannot write 'x': is a socket"); then nothing was created and o needs no abort.
 */
int rt_out_open(const char *path, unsigned mode, struct rt_out *o, struct rt_error *err);

/* Appends len bytes. Returns 0, or an errno with err set; the failure is remembered and makes commit fail. */
int rt_out_write(struct rt_out *o, const void *data, size_t len, struct rt_error *err);

/*
 * Ends the output: the temporary file is fsync'd and renamed over the destination (then the directory fsync'd); an
 * in-place file is closed; standard output flushed. Returns 0, or an errno with err set, in which case the
 * destination is unchanged (an in-place FIFO/device may have received part of the data) and the temporary file is
 * gone. o is finished either way.
 */
int rt_out_commit(struct rt_out *o, struct rt_error *err);

/* Abandons the output: the temporary file is removed, the destination left as it was. */
void rt_out_abort(struct rt_out *o);

/* rt_out_open + rt_out_write + rt_out_commit of one buffer. Returns 0 or an errno with err set. */
int rt_out_write_file(const char *path, const void *data, size_t len, unsigned mode, struct rt_error *err);

#endif
