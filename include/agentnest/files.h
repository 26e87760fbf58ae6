/* agentnest/files.h — path-safe file and directory put/get between the host
 * and a sandbox workspace (DESIGN.md "Behaviour users rely on"; cases BL-21,
 * BL-23, BL-24).
 *
 * Every call takes `ws_dirfd`, an fd of the workspace directory opened by the
 * runtime (O_RDONLY|O_DIRECTORY or O_PATH|O_DIRECTORY), and a path relative to
 * it.  The sandbox may change the workspace concurrently; these calls are
 * safe anyway because every lookup is done by the kernel in one step with
 * openat2(2) RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS:
 *  - relative paths only; a `..` component is refused before any lookup;
 *  - no symlink is followed at any component, including the last one;
 *  - only regular files are read: FIFOs, sockets and devices are detected on
 *    an O_PATH handle (they are never opened, so a call never blocks on them);
 *  - reads are capped (default AN_FILE_DEFAULT_MAX_BYTES, DESIGN "file read
 *    64 MiB"): a larger (or sparse) file fails before its data is read;
 *  - writes are atomic: data goes to a fresh temporary name in the same
 *    directory, is fsync'ed, then renameat(2)'d over the target, so readers
 *    see the old or the new file, never a mix, and a symlink at the target is
 *    replaced, never written through;
 *  - modes are sanitised: permission bits only (no setuid, setgid, sticky).
 * Nothing here execs a program, dlopens a library or looks up user names
 * (BL-24).
 *
 * Errors common to all calls (negative errno, *err names the path):
 *   -EXDEV   "path escapes workspace": absolute path, `..`, or a symlink at
 *            any component (the workspace may contain symlinks; the host never
 *            follows them);
 *   -EINVAL  "not a regular file" (get), or an empty path / the workspace
 *            itself where an entry is needed;
 *   -EFBIG   "file too large" (more than the cap);
 *   -ENOENT, -ENOTDIR, -EISDIR, -EACCES, -ENOSPC, ...: from the kernel.
 *
 * Thread-safety: no global state and no change of the process (cwd, umask,
 * signals): calls may run in parallel on any threads, also on one
 * ws_dirfd, which is only used as the base of openat2(2) lookups.
 */
#ifndef AGENTNEST_FILES_H
#define AGENTNEST_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default read cap in bytes (DESIGN: file read 64 MiB). */
#define AN_FILE_DEFAULT_MAX_BYTES (64ull << 20)

/* Default caps of one directory copy (an_dir_get, an_dir_put), artifacts
 * and snapshots (issue 10 item 6): entries walked (files, directories,
 * links, skipped entries alike) and the sum of the logical sizes of the
 * files copied (a sparse file counts its st_size even though its holes
 * are kept as holes; a hard link counts once).  Over a cap: -EFBIG (bytes)
 * or -E2BIG (entries), naming the cap. */
#define AN_TREE_DEFAULT_MAX_ENTRIES 100000ull
#define AN_TREE_DEFAULT_MAX_BYTES (4ull << 30)

/* Directories nested deeper than this below the root of a directory copy,
 * artifacts walk or snapshot are not walked: each such directory is skipped
 * with a warning naming it and the rest is copied (no call fails because
 * of the depth a sandbox chose). */
#define AN_TREE_MAX_DEPTH_SKIP 256

/* Called for each non-fatal problem of a directory copy (a skipped symlink or
 * special file).  `msg` is valid only during the call. */
typedef void (*an_warn_fn)(void *data, const char *msg);

/* Options of the calls below.  A zero-initialised struct (or NULL) means:
 * 64 MiB cap, mode 0644 for files and 0755 for directories, no parent
 * creation, owner unchanged (the caller's), warnings dropped. */
struct an_file_opts {
  uint64_t max_bytes;   /* read cap per file in bytes; 0 = AN_FILE_DEFAULT_MAX_BYTES */
  mode_t mode;          /* put: permission bits of new files (& 0777); 0 = 0644 */
  mode_t dir_mode;      /* put: permission bits of created directories (& 0777); 0 = 0755 */
  bool mkdir_parents;   /* put: create missing parent directories (mkdir -p, safely) */
  bool set_owner;       /* put: chown new files/dirs to uid:gid (e.g. the sandbox's
                           mapped host ids) */
  uid_t uid;
  gid_t gid;
  an_warn_fn warn;      /* directory copies: receives warnings; NULL = ignore */
  void *warn_data;
  uint64_t max_total_bytes; /* directory copies: cap on the sum of file sizes
                               (logical); 0 = AN_TREE_DEFAULT_MAX_BYTES for
                               an_dir_get, none for an_dir_put (host data) */
  uint64_t max_entries;     /* directory copies: cap on entries walked;
                               0 = AN_TREE_DEFAULT_MAX_ENTRIES */
};

/* Write `len` bytes of `data` to `relpath` beneath ws_dirfd, atomically
 * (temporary file in the same directory, fsync(2), renameat(2)).  An existing
 * regular file or symlink at `relpath` is replaced (the symlink itself, never
 * its target).  Returns 0, or -EXDEV (escape), -EISDIR (a directory is
 * there), -ENOENT (parent missing and !mkdir_parents), or an I/O errno.  On
 * failure nothing is left behind (the temporary file is removed). */
int an_file_put(int ws_dirfd, const char *relpath, const void *data, size_t len,
                const struct an_file_opts *opts, an_error_t *err);

/* As an_file_put, with the content read from `src_fd` (a host fd, read to
 * EOF, no cap).  Also usable to write into any untrusted tree (e.g. a host
 * output directory) with the same guarantees.  Errors: as an_file_put,
 * plus -EBADF for a negative src_fd and the read errno of src_fd. */
int an_file_put_fd(int ws_dirfd, const char *relpath, int src_fd,
                   const struct an_file_opts *opts, an_error_t *err);

/* Read the regular file `relpath` beneath ws_dirfd into a malloc'd buffer
 * (*data, owned by the caller, NUL-terminated after *len bytes for
 * convenience).  Refuses symlinks (-EXDEV) and non-regular files (-EINVAL
 * "not a regular file") without opening them; refuses files larger than
 * max_bytes (-EFBIG "file too large"), also when the file grows while read. */
int an_file_get(int ws_dirfd, const char *relpath, const struct an_file_opts *opts,
                void **data, size_t *len, an_error_t *err);

/* As an_file_get, streaming the content into the host fd `dst_fd`; *copied
 * (may be NULL) receives the byte count.  On -EFBIG, dst_fd may already hold
 * up to max_bytes bytes: write to a temporary and discard it on error. */
int an_file_get_fd(int ws_dirfd, const char *relpath, int dst_fd, const struct an_file_opts *opts,
                   uint64_t *copied, an_error_t *err);

/* Copy the host directory tree `host_dir` (a trusted host path) into
 * `relpath` beneath ws_dirfd (created, with parents if mkdir_parents).
 * Regular files are written atomically with their permission bits (& 0777);
 * directories are created with dir_mode; symlinks are recreated as symlinks
 * with the same target string (never followed); other file types are skipped
 * with a warning.  Existing files of the same name are replaced.  Holes of
 * sparse files stay holes; the names of a hard-linked file become hard
 * links of one copy.  The tree is made durable with one syncfs(2) at the
 * end.  Directories deeper than AN_TREE_MAX_DEPTH_SKIP (or whose path
 * exceeds PATH_MAX) are skipped with a warning.  -EFBIG / -E2BIG past
 * max_total_bytes / max_entries.  On error the copy may be partial. */
int an_dir_put(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err);

/* Copy the workspace directory `relpath` (use "." for the whole workspace)
 * out into the host directory `host_dir` (created if missing; its parent
 * must exist).  Regular files are copied atomically, each capped at
 * max_bytes; symlinks, FIFOs, sockets and devices inside are skipped with a
 * warning (never followed or opened); directories are walked through
 * O_NOFOLLOW dirfds only, so the walk terminates.  Files are created with
 * their permission bits & 0755 (never setuid/setgid, group/other write).
 * Holes of sparse files stay holes (SEEK_DATA/SEEK_HOLE) and the names of a
 * hard-linked file become hard links of its one copy, so the host gets no
 * more disk use than the workspace has.  Directories nested deeper than
 * AN_TREE_MAX_DEPTH_SKIP, or whose path exceeds PATH_MAX, are skipped with a
 * warning naming them (quoted) and the rest is copied.  Memory use does not
 * grow with the number of files (entries are streamed with readdir(3); the
 * hard-link map holds only multiply-linked files, at most max_entries).
 * Returns 0, -EXDEV, -EFBIG (a file over max_bytes, or the sum over
 * max_total_bytes), -E2BIG (more than max_entries entries), ... */
int an_dir_get(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
