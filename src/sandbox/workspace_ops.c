/* sandbox/workspace_ops.c — files in and out of a sandbox's workspace,
 * snapshot, restore and artifacts: thin wrappers of files.h, snapshot.h and
 * artifacts.h on the workspace fd with the sandbox's owner ids and read cap,
 * plus the cgroup freezer so snapshots and restores are one point in time
 * for the sandbox's processes.  What does NOT live here: the path-safety
 * rules themselves (files.c, snapshot.c, tar_extract.c, artifacts.c), fork
 * (fork.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include "agentnest/files.h"
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/files_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/safe_path.h"

int an_sb_freeze(struct an_sandbox *sb, bool frozen, an_error_t *err) {
  int r = an_sb_ensure_cgroup(sb, err);
  if (r < 0) return r;
  r = an_cgroup_freeze(sb->cg, frozen, err);
  return r < 0 ? an_error_prefix(err, "%s sandbox %s", frozen ? "freeze" : "thaw", sb->rec.id) : 0;
}

uint64_t an_sb_copy_cap(int fd, unsigned copies) {
  struct statvfs sv;
  if (fstatvfs(fd, &sv) < 0) return 1;
  uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize;
  return copies ? (avail / copies ? avail / copies : 1) : avail;
}

static int put_impl(struct an_sandbox *sb, const char *host_path, const char *dest, an_error_t *err) {
  if (!host_path) return an_error_set(err, EINVAL, "put: no host path");
  struct an_file_opts fo;
  an_sandbox_file_opts(sb, &fo);
  cleanup_free char *copy = strdup(host_path);
  if (!copy) return an_error_set(err, ENOMEM, "put");
  if (!dest) dest = basename(copy);
  struct stat st;
  if (stat(host_path, &st) < 0) return an_error_set(err, errno, "put: %s", host_path);
  if (S_ISDIR(st.st_mode)) return an_dir_put(sb->ws_fd, dest, host_path, &fo, err);
  if (!S_ISREG(st.st_mode)) return an_error_set(err, EINVAL, "put: %s: not a regular file or directory", host_path);
  /* O_NONBLOCK, regular only: swapped for a FIFO since the stat, it fails (BL-23) */
  cleanup_close int fd = an_open_input(AT_FDCWD, host_path, 0, false, NULL, err);
  if (fd < 0) return an_error_prefix(err, "put");
  fo.mode = st.st_mode & 0777;
  return an_file_put_fd(sb->ws_fd, dest, fd, &fo, err);
}

static int put_data_impl(struct an_sandbox *sb, const char *dest, const void *data, size_t len,
                         mode_t mode, an_error_t *err) {
  struct an_file_opts fo;
  an_sandbox_file_opts(sb, &fo);
  fo.mode = mode & 0777;
  return an_file_put(sb->ws_fd, dest, data, len, &fo, err);
}

static int get_data_impl(struct an_sandbox *sb, const char *src, void **data, size_t *len,
                         an_error_t *err) {
  struct an_file_opts fo;
  an_sandbox_file_opts(sb, &fo);
  return an_file_get(sb->ws_fd, src, &fo, data, len, err);
}

int an_sandbox_get(struct an_sandbox *sb, const char *src, const char *host_dest, an_error_t *err) {
  return an_sandbox_get_warn(sb, src, host_dest, NULL, NULL, err);
}

static int get_impl(struct an_sandbox *sb, const char *src, const char *host_dest, an_warn_fn warn,
                    void *warn_data, an_error_t *err) {
  if (!src || !host_dest) return an_error_set(err, EINVAL, "get: no source or destination");
  struct an_file_opts fo;
  an_sandbox_file_opts(sb, &fo);
  fo.warn = warn;
  fo.warn_data = warn_data;
  fo.set_owner = false;   /* host files belong to the caller */
  /* Type of src, looked up safely (no symlink followed, never opened). */
  int pfd = an_openat_beneath(sb->ws_fd, src, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, err);
  if (pfd < 0) return pfd;
  struct stat st;
  int r = fstat(pfd, &st);
  close(pfd);
  if (r < 0) return an_error_set(err, errno, "get: %s", src);
  if (S_ISDIR(st.st_mode)) return an_dir_get(sb->ws_fd, src, host_dest, &fo, err);
  /* A file: stream into a temporary next to host_dest, then rename. */
  cleanup_free char *tmp = NULL;
  if (asprintf(&tmp, "%s.agentnest-tmp.%d", host_dest, (int) getpid()) < 0) return an_error_set(err, ENOMEM, "get");
  cleanup_close int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    /* the destination's name, not only the temporary's (new-user nu9) */
    int e = errno;
    if (e == ENOENT) return an_error_set(err, e, "get: create %s: its directory does not exist", host_dest);
    if (e == ENOTDIR)
      return an_error_set(err, e, "get: create %s: a component of its path is not a directory", host_dest);
    return an_error_set(err, e, "get: create %s (as the temporary %s)", host_dest, tmp);
  }
  uint64_t copied = 0;
  r = an_file_get_fd(sb->ws_fd, src, fd, &fo, &copied, err);
  if (r >= 0 && fsync(fd) < 0) r = an_error_set(err, errno, "get: fsync %s", tmp);
  if (r >= 0 && rename(tmp, host_dest) < 0) r = an_error_set(err, errno, "get: rename to %s", host_dest);
  if (r < 0) unlink(tmp);
  return r;
}

int an_sandbox_snapshot(struct an_sandbox *sb, const char *tar_path, struct an_snapshot_info *info,
                        an_error_t *err) {
  return an_sandbox_snapshot_warn(sb, tar_path, info, NULL, NULL, err);
}

static int snapshot_impl(struct an_sandbox *sb, const char *tar_path, struct an_snapshot_info *info,
                         an_warn_fn warn, void *warn_data, an_error_t *err) {
  /* the tar may not fill the disk it goes to (a sandbox's sparse file of
   * 100 GB is 100 GB of tar) */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", tar_path);
  cleanup_close int dfd = open(dirname(dir), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return an_error_set(err, errno, "snapshot: directory of %s", tar_path);
  struct stat tst;
  if (stat(tar_path, &tst) == 0 && S_ISDIR(tst.st_mode))
    return an_error_set(err, EISDIR, "snapshot: %s is a directory (give the tar file's name)", tar_path);
  /* owners as the sandbox sees them, never the host's ids */
  struct an_snapshot_opts so = {.max_bytes = an_sb_copy_cap(dfd, 1), .warn = warn, .warn_data = warn_data,
                                .id_base = sb->rec.ids.host_uid_base, .id_count = sb->rec.ids.size};
  int r = an_sb_freeze(sb, true, err);
  if (r < 0) return r;
  r = an_workspace_snapshot(sb->ws_fd, tar_path, &so, info, err);
  if (r == -EFBIG)
    an_error_prefix(err, "snapshot to %s (cap: the space free there)", tar_path);
  an_error_t e = NULL;
  int t = an_sb_freeze(sb, false, &e);
  if (t < 0 && r >= 0) {
    r = t;
    *err = e;
    e = NULL;
  }
  an_error_free(&e);
  return r;
}

/* Remove every entry of the directory fd (not the directory itself) but
 * `keep`. */
static int empty_dir(int dfd, const char *keep, an_error_t *err) {
  int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0) return an_error_set(err, errno, "read workspace directory: dup");
  DIR *d = fdopendir(dup_fd);
  if (!d) { close(dup_fd); return an_error_set(err, errno, "read workspace directory: fdopendir"); }
  rewinddir(d);
  struct dirent *de;
  int r = 0;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, keep)) continue;
    if ((r = an_remove_tree_beneath(dfd, de->d_name, err)) < 0) break;
  }
  closedir(d);
  return r;
}

/* Move every entry of `from` into `to` (same filesystem). */
static int move_entries(int from, int to, an_error_t *err) {
  int dup_fd = fcntl(from, F_DUPFD_CLOEXEC, 3);
  if (dup_fd < 0) return an_error_set(err, errno, "read workspace directory: dup");
  DIR *d = fdopendir(dup_fd);
  if (!d) { close(dup_fd); return an_error_set(err, errno, "read workspace directory: fdopendir"); }
  struct dirent *de;
  int r = 0;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (renameat(from, de->d_name, to, de->d_name) < 0) {
      r = an_error_set(err, errno, "move restored entry %s", de->d_name);
      break;
    }
  }
  closedir(d);
  return r;
}

/* The staging directory is inside the workspace, on its file system, so the
 * extraction counts against the workspace's quota (a tar's huge or sparse
 * entries cannot fill the host's disk) and the entries move in by rename.
 * The sandbox is frozen throughout: it cannot see or race the staging
 * directory (host root's, 0700); on error the workspace is as it was. */
static int restore_impl(struct an_sandbox *sb, const char *tar_path, const char *expected_sha256,
                        an_error_t *err) {
  cleanup_free char *staging = an_random_name(".agentnest-restore");
  if (!staging) return an_error_set(err, ENOMEM, "restore");
  struct an_file_opts fo;
  an_sandbox_file_opts(sb, &fo);
  /* The files of the tar may declare at most the space free for the
   * workspace, in logical bytes (a sparse entry counts in full). */
  struct an_snapshot_opts so = {.set_owner = true, .uid = fo.uid, .gid = fo.gid,
                                .max_bytes = an_sb_copy_cap(sb->ws_fd, 1)};
  int r = an_sb_freeze(sb, true, err);
  if (r < 0) return an_error_prefix(err, "sandbox %s", sb->rec.id);
  /* messages name the workspace, never the staging directory (the
   * user gave neither: they are the sandbox's "workspace") */
  if (mkdirat(sb->ws_fd, staging, 0700) < 0)
    r = an_error_set(err, errno, "restore: mkdir the staging directory in the workspace");
  /* Verify and extract into the (empty) staging directory. */
  if (r >= 0) r = an_workspace_restore_as(sb->ws_fd, staging, "workspace", tar_path, expected_sha256, &so, err);
  if (r >= 0) {
    cleanup_close int sfd = openat(sb->ws_fd, staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (sfd < 0) r = an_error_set(err, errno, "restore: open the staging directory in the workspace");
    if (r >= 0) r = empty_dir(sb->ws_fd, staging, err);
    if (r >= 0) r = move_entries(sfd, sb->ws_fd, err);
  }
  an_error_t e = NULL;
  an_remove_tree_beneath(sb->ws_fd, staging, &e);
  an_error_free(&e);
  an_sb_freeze(sb, false, &e);
  an_error_free(&e);
  return r < 0 ? an_error_prefix(err, "sandbox %s", sb->rec.id) : 0;
}

static int artifacts_impl(struct an_sandbox *sb, const char *const *globs, size_t nglobs,
                          const struct an_artifact_opts *ao, struct an_artifact_list *out,
                          an_error_t *err) {
  struct an_artifact_opts o = ao ? *ao : (struct an_artifact_opts){0};
  if (!o.max_bytes && sb->opts) o.max_bytes = an_sandbox_opts_max_read(sb->opts);
  return an_artifacts_collect(sb->ws_fd, globs, nglobs, &o, out, err);
}

/* ---- the public calls: approval first, then the operation, then its audit record ---------- */

#define N_OF(a) (sizeof (a) / sizeof *(a))

/* Ask, run `call` (an expression setting r), record. */
#define APPROVED_OP(op, fields, call)                                   \
  do {                                                                  \
    r = an_approval_checkv(sb, op, fields, N_OF(fields), err);          \
    if (r < 0) return r;                                                \
    r = (call);                                                         \
    an_sb_audit(sb, NULL, NULL, op, r, err, fields, N_OF(fields));      \
  } while (0)

int an_sandbox_put(struct an_sandbox *sb, const char *host_path, const char *dest, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "put: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("host_path", host_path), AN_AUDIT_STR("path", dest)};
  int r;
  APPROVED_OP("put", f, put_impl(sb, host_path, dest, err));
  return r;
}

int an_sandbox_put_data(struct an_sandbox *sb, const char *dest, const void *data, size_t len,
                        mode_t mode, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "put: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("host_path", NULL), AN_AUDIT_STR("path", dest),
                               AN_AUDIT_INT("bytes", len)};
  int r;
  APPROVED_OP("put", f, put_data_impl(sb, dest, data, len, mode, err));
  return r;
}

int an_sandbox_get_data(struct an_sandbox *sb, const char *src, void **data, size_t *len,
                        an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "get: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("path", src), AN_AUDIT_STR("host_path", NULL)};
  int r;
  APPROVED_OP("get", f, get_data_impl(sb, src, data, len, err));
  return r;
}

int an_sandbox_get_warn(struct an_sandbox *sb, const char *src, const char *host_dest, an_warn_fn warn,
                        void *warn_data, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "get: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("path", src), AN_AUDIT_STR("host_path", host_dest)};
  int r;
  APPROVED_OP("get", f, get_impl(sb, src, host_dest, warn, warn_data, err));
  return r;
}

int an_sandbox_snapshot_warn(struct an_sandbox *sb, const char *tar_path, struct an_snapshot_info *info,
                             an_warn_fn warn, void *warn_data, an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "snapshot: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("tar_path", tar_path)};
  int r = an_approval_checkv(sb, "snapshot", f, N_OF(f), err);
  if (r < 0) return r;
  struct an_snapshot_info local;
  if (!info) info = &local;
  memset(info, 0, sizeof *info);
  r = snapshot_impl(sb, tar_path, info, warn, warn_data, err);
  struct an_audit_field rf[] = {f[0], AN_AUDIT_STR("sha256", r >= 0 ? info->sha256 : NULL),
                                AN_AUDIT_INT("size", r >= 0 ? info->size : 0)};
  an_sb_audit(sb, NULL, NULL, "snapshot", r, err, rf, N_OF(rf));
  return r;
}

int an_sandbox_restore(struct an_sandbox *sb, const char *tar_path, const char *expected_sha256,
                       an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "restore: no sandbox");
  struct an_audit_field f[] = {AN_AUDIT_STR("tar_path", tar_path), AN_AUDIT_STR("sha256", expected_sha256)};
  int r;
  APPROVED_OP("restore", f, restore_impl(sb, tar_path, expected_sha256, err));
  return r;
}

/* Artifacts copy files out (to_dir) like get: the same approval as a get
 * of the globs when they do; a listing only is recorded, not asked. */
int an_sandbox_artifacts(struct an_sandbox *sb, const char *const *globs, size_t nglobs,
                         const struct an_artifact_opts *ao, struct an_artifact_list *out,
                         an_error_t *err) {
  if (!sb) return an_error_set(err, EINVAL, "artifacts: no sandbox");
  cleanup_free char **gv = calloc(nglobs + 1, sizeof *gv);
  if (!gv) return an_error_set(err, ENOMEM, "artifacts");
  for (size_t i = 0; i < nglobs; i++) gv[i] = (char *) globs[i];
  const char *to = ao ? ao->to_dir : NULL;
  struct an_audit_field f[] = {AN_AUDIT_STRV("globs", gv), AN_AUDIT_STR("host_path", to)};
  int r = to ? an_approval_checkv(sb, "artifacts", f, N_OF(f), err) : 0;
  if (r < 0) return r;
  r = artifacts_impl(sb, globs, nglobs, ao, out, err);
  an_sb_audit(sb, NULL, NULL, "artifacts", r, err, f, N_OF(f));
  return r;
}
