/* util/fdcopy.h — capped, hashing fd-to-fd copy, full writes, whole-file
 * reads and atomic whole-file writes (internal).
 * Used by the sandbox file, artifact and snapshot code; sha256 comes from
 * util/sha256.h. */
#ifndef AN_UTIL_FDCOPY_H
#define AN_UTIL_FDCOPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "util/sha256.h"   /* AN_SHA256_HEX_LEN */

/* write(2) all `len` bytes of `buf` to `fd`, retrying on EINTR and short
 * writes.  Returns 0 or -errno (err names `what`). */
int an_write_all(int fd, const void *buf, size_t len, const char *what, an_error_t *err);

/* Read `in_fd` to EOF, writing every byte to `out_fd` (skip writing when
 * out_fd < 0) and hashing it into `sha256_hex` (lowercase hex, skipped when
 * NULL).  Reads at most max_bytes: if the source has more, fails with
 * -EFBIG "<what>: file too large (more than N bytes)".  *copied (may be NULL)
 * receives the number of bytes copied (the logical size: holes count).
 * Holes are preserved: when in_fd is a regular file read from offset 0, its
 * data extents are found with lseek(2) SEEK_DATA/SEEK_HOLE and holes are
 * neither read nor written; when out_fd is a regular file at offset 0 too,
 * holes are skipped with lseek and the file is ftruncate'd to the logical
 * size at the end (so a 1 GiB sparse file costs its data, not 1 GiB); to a
 * pipe, holes are written as zeros.  The cap counts holes (logical size).
 * Returns 0 or a negative errno. */
int an_copy_fd_capped(int in_fd, int out_fd, uint64_t max_bytes, const char *what,
                      uint64_t *copied, char *sha256_hex, an_error_t *err);

/* "regular file", "directory", "FIFO", "socket", "character device",
 * "block device", "symlink" or "special file": the type in st_mode, for
 * messages (static string). */
const char *an_file_type_name(mode_t mode);

/* Open a host-side input (an image archive or blob, a restore tar, a
 * --profile or --secret @FILE) for reading: openat2(2) at dirfd/path with
 * the given RESOLVE_* flags (0 for a trusted host path; AT_FDCWD allowed),
 * O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC so that a FIFO never blocks the
 * open and a tty never becomes the controlling terminal, then fstat(2): only
 * a regular file (or a directory when `allow_dir`) is accepted, and
 * O_NONBLOCK is cleared before the fd is returned (caller owns it; *st, if
 * non-NULL, gets its stat).  Errors: the openat2 errno ("open <path>"),
 * -EINVAL "<path>: not a regular file (FIFO)" and the like (case BL-23). */
int an_open_input(int dirfd, const char *path, uint64_t resolve, bool allow_dir, struct stat *st,
                  an_error_t *err);

/* Read a whole regular file of at most `max` bytes, opened with openat2(2)
 * at dirfd/path with the given RESOLVE_* flags (0 for a trusted host path;
 * AT_FDCWD allowed).  *buf is NUL-terminated and malloc'd (caller frees);
 * *len (may be NULL) gets the byte count.  Errors: the openat2/read errno
 * ("open <path>", "read <path>"), -EINVAL "<path>: not a regular file (TYPE)"
 * (opened as an_open_input: a FIFO never blocks),
 * -EFBIG "<path>: N bytes, more than the M allowed" / "grew while being
 * read". */
int an_read_file_at(int dirfd, const char *path, uint64_t resolve, size_t max, char **buf,
                    size_t *len, an_error_t *err);

/* Replace `name` in the directory `dirfd` atomically with `len` bytes of
 * `buf`, mode 0644: a fresh random temporary name (O_EXCL|O_NOFOLLOW) in the
 * same directory, written, renameat(2)'d over `name` (a symlink at `name` is
 * replaced, never followed).  With `durable` the file is fsync'ed before the
 * rename and the directory after it; callers that make a whole new tree
 * durable at once (one syncfs(2) before renaming the tree into place) pass
 * false.  Nothing is left behind on failure.  Returns 0 or -errno ("write
 * <name>", "fsync <name>", "rename into place <name>"). */
int an_write_file_atomic_at(int dirfd, const char *name, const void *buf, size_t len,
                            bool durable, an_error_t *err);

#endif
