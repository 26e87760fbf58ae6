/* agentnest/snapshot.h — workspace snapshot to a pax tar and atomic restore
 * from one (cases BL-24, BL-27).
 *
 * Snapshot: the workspace is walked through O_NOFOLLOW directory fds (util/
 * safe_path), so nothing outside it is ever opened; symlinks are stored as
 * symlinks (their target string, never the target's content); owners are
 * stored as numeric ids only (no uid->name lookup, no NSS module loaded);
 * FIFOs, sockets and devices are skipped with a warning; hard links are
 * stored as separate files.  The archive is written with libarchive in the
 * POSIX pax interchange format (IEEE Std 1003.1 "pax", libarchive's
 * pax_restricted writer: ustar headers plus pax extended headers only where
 * needed), uncompressed, with entries in byte-wise name order.
 *
 * Restore: the sha256 of the tar file is verified (when given) before
 * anything is extracted; entries are extracted into a fresh private sibling
 * directory with the rules below, then swapped in with
 * renameat2(RENAME_EXCHANGE) and the old tree is removed.  A hostile entry
 * aborts the restore with an error naming it; the workspace is then
 * unchanged and nothing is left behind.  Refused entries:
 *   - absolute names, names with a `..` component          -> -EXDEV
 *   - a name whose parent path crosses a symlink (a symlink entry followed
 *     by a write through it)                                 -> -EXDEV
 *   - hard links whose target is absolute, has `..`, crosses a symlink, or
 *     is not an already-extracted regular file               -> -EXDEV/-EPERM
 *   - an entry replacing an existing one of another type (e.g. `dir d` then
 *     `symlink d -> /`); later regular files replace earlier ones -> -EEXIST
 *   - character/block devices, FIFOs, sockets                -> -EPERM
 * Symlink entries themselves are allowed with any target: the host never
 * follows them.  Modes keep permission bits only (& 0777: no setuid,
 * setgid, sticky).  Only uncompressed tar is read: no decompressor program
 * is ever looked up or run (BL-24).
 *
 * Thread-safety: no global state and no change of the process (cwd, umask,
 * signals): calls on different workspaces may run in parallel on any
 * threads.  Calls on one workspace must not overlap a restore of it (the
 * swap replaces the tree a concurrent snapshot or restore is walking).
 */
#ifndef AGENTNEST_SNAPSHOT_H
#define AGENTNEST_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "agentnest/error.h"
#include "agentnest/files.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Options; a zero struct (or NULL) means: no size cap, numeric owners taken
 * from the tar, warnings dropped. */
struct an_snapshot_opts {
  uint64_t max_bytes;  /* snapshot: cap on the file data archived (the tar's
                          size: holes of sparse files are not data); restore: cap
                          on the sum of the logical sizes of the files extracted
                          (a sparse entry counts its full size, so a tar cannot
                          declare 1 TiB in a few bytes); 0 = none.  Over it: -EFBIG */
  bool set_owner;      /* restore: chown every entry to uid:gid (e.g. the
                          target sandbox's mapped ids) instead of the tar's ids */
  uid_t uid;
  gid_t gid;
  an_warn_fn warn;     /* snapshot: skipped entries; restore: cleanup problems */
  void *warn_data;
  uint64_t max_entries;/* entries archived / extracted; 0 =
                          AN_TREE_DEFAULT_MAX_ENTRIES.  Over it: -E2BIG */
  uint32_t id_base;    /* snapshot: when id_count > 0, owners are written as the
                          sandbox sees them: a host id in [id_base, id_base +
                          id_count) as id - id_base, any other as 65534 (the
                          overflow id, as the kernel shows an unmapped id) —
                          never the host's ids */
  uint32_t id_count;
};

/* What a snapshot produced. */
struct an_snapshot_info {
  uint64_t size;       /* bytes of the tar file */
  char sha256[65];     /* lowercase hex sha256 of the tar file */
  uint64_t entries;    /* entries archived */
};

/* Write a snapshot of the workspace `ws_dirfd` to the host file `tar_path`
 * (created atomically: temporary file in the same directory, fsync, rename;
 * mode 0600).  Fills *info (may be NULL).  Sparse files become pax sparse
 * entries (GNU.sparse 1.0 map from SEEK_DATA/SEEK_HOLE: holes take no room in
 * the tar); a hard-linked file is archived once and its other names as link
 * entries.  Directories deeper than AN_TREE_MAX_DEPTH_SKIP (or with a path
 * over PATH_MAX) are left out with a warning naming them; the rest is
 * archived.  Names are read one directory at a time, sorted, the whole walk
 * bounded by max_entries.  Returns 0, or -EFBIG (over max_bytes), -E2BIG
 * (over max_entries), -EXDEV (an entry was swapped
 * for a symlink while walked), or the errno of the failing open/read/write;
 * on error no file is left at tar_path. */
int an_workspace_snapshot(int ws_dirfd, const char *tar_path, const struct an_snapshot_opts *opts,
                          struct an_snapshot_info *info, an_error_t *err);

/* The same, writing the tar to the host fd `out_fd` (not closed; size and
 * sha256 cover exactly the bytes written).  Returns as an_workspace_snapshot,
 * with the write errno of out_fd. */
int an_workspace_snapshot_fd(int ws_dirfd, int out_fd, const struct an_snapshot_opts *opts,
                             struct an_snapshot_info *info, an_error_t *err);

/* Extract the uncompressed tar read from `tar_fd` into the directory
 * `dest_dirfd` (expected empty and private to the caller) with the rules of
 * the file comment.  Stops at the first refused entry: the error message
 * starts `entry "<name>":` (control bytes, quote and backslash in the name
 * shown as \xNN).  On error dest may hold a partial tree; the
 * caller removes it.  Returns 0 or a negative errno (see file comment;
 * -EINVAL for a corrupt archive). */
int an_tar_extract_safe(int tar_fd, int dest_dirfd, const struct an_snapshot_opts *opts,
                        an_error_t *err);

/* Restore the workspace directory `workspace_name` (a single name, no '/')
 * inside `parent_dirfd` from the tar file `tar_path`.  If `expected_sha256`
 * is non-NULL (64 hex digits, any case) the tar's sha256 is checked first
 * (-EBADMSG "sha256 mismatch" on difference, -EINVAL for a malformed value).
 * Extraction goes into a new sibling directory ".<workspace_name>.restore.<rand>"
 * given the old workspace's mode and owner; it is swapped with the
 * workspace by renameat2(2) RENAME_EXCHANGE, then the old tree is removed
 * (a failure to remove it is reported through opts->warn, not as an error).
 * Owners come from the tar (numeric) unless opts->set_owner.
 * Note: a process that has the old directory open or bind-mounted keeps
 * seeing the old (then removed) tree; a live sandbox must re-bind.
 * Returns 0 or a negative errno; on error the workspace is unchanged and
 * nothing is left behind. */
int an_workspace_restore(int parent_dirfd, const char *workspace_name, const char *tar_path,
                         const char *expected_sha256, an_error_t *err);

/* As an_workspace_restore, with options (NULL = defaults); the same errors. */
int an_workspace_restore_ex(int parent_dirfd, const char *workspace_name, const char *tar_path,
                            const char *expected_sha256, const struct an_snapshot_opts *opts,
                            an_error_t *err);

#ifdef __cplusplus
}
#endif
#endif
