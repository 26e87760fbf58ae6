/* sandbox/files_internal.h — helpers of sandbox/files.c shared with the
 * artifact and snapshot code (internal, not installed). */
#ifndef AN_SANDBOX_FILES_INTERNAL_H
#define AN_SANDBOX_FILES_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include "agentnest/files.h"
#include "agentnest/snapshot.h"

/* Fill *out from *in (NULL = defaults) with defaults applied and modes & 0777. */
void an_files_resolve_opts(const struct an_file_opts *in, struct an_file_opts *out);

/* printf-style warning to warn(data, msg); nothing when warn is NULL
 * (an_file_opts and an_snapshot_opts both carry such a pair). */
void an_warnf(an_warn_fn warn, void *data, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Atomically create/replace `name` in the directory fd `parent` with either
 * `len` bytes of `data` (src_fd < 0) or the content of src_fd read to EOF and
 * capped at max_bytes (-EFBIG beyond); permission bits `mode` & 0777; owner
 * per o->set_owner.  Temp name + renameat; nothing left on failure; with
 * `durable` the file and directory are fsync'ed (tree copies pass false and
 * syncfs once at the end).  `display` names the file in errors. */
int an_files_write_at(int parent, const char *name, const char *display, const void *data,
                      size_t len, int src_fd, uint64_t max_bytes, mode_t mode,
                      const struct an_file_opts *o, bool durable, an_error_t *err);

/* As an_files_write_at from src_fd (not durable: callers syncfs), also
 * returning the sha256 (lowercase hex into sha256_hex[65]) and byte count of
 * exactly what was written. */
int an_files_copy_hashed_at(int parent, const char *name, const char *display, int src_fd,
                            uint64_t max_bytes, mode_t mode, const struct an_file_opts *o,
                            uint64_t *copied, char *sha256_hex, an_error_t *err);

/* an_open_regular_beneath() plus a size check: -EFBIG "file too large" when
 * st_size > max_bytes.  Returns the fd; fills *st if non-NULL. */
int an_files_open_capped(int dirfd, const char *relpath, const char *display, uint64_t max_bytes,
                         struct stat *st, an_error_t *err);

/* Mode of a file or directory copied from a workspace to the host: the
 * sandbox's permission bits without set-id, sticky, or write for group and
 * others (a sandbox could chmod 0777 what the host caller then keeps). */
#define AN_HOST_COPY_MODE(m) ((mode_t) ((m) & 0755))

/* an_workspace_restore_ex (agentnest/snapshot.h) whose messages call the
 * workspace `label` (e.g. "workspace", under the caller's "sandbox ID"
 * prefix) and its private sibling "the staging directory" instead of their
 * names in parent_dirfd (a caller's internal directory the user never
 * gave).  label NULL: exactly an_workspace_restore_ex.  The same errors. */
int an_workspace_restore_as(int parent_dirfd, const char *workspace_name, const char *label,
                            const char *tar_path, const char *expected_sha256,
                            const struct an_snapshot_opts *opts, an_error_t *err);

#endif
