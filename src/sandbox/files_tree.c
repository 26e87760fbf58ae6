/* sandbox/files_tree.c — directory trees between the host and a workspace:
 * an_dir_put (host -> workspace) and an_dir_get (workspace -> host), see
 * agentnest/files.h.  One walk for both: readdir(3) streaming (memory does
 * not grow with the number of entries), entry and byte caps, directories
 * deeper than AN_TREE_MAX_DEPTH_SKIP skipped with a warning while the rest is
 * copied, holes kept (util/fdcopy), and on the way out the names of a
 * hard-linked file linked to its one copy (util/inode_map).  Names chosen by
 * the sandbox are quoted (util/quote) in every message of the way out. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/files.h"
#include "sandbox/files_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/inode_map.h"
#include "util/quote.h"
#include "util/safe_path.h"

struct tree;

/* One entry of a tree copy: `name` in directory `src` (lstat'ed as *st),
 * shown as `path`, copied into directory `dst`. */
typedef int (*copy_entry_fn)(struct tree *t, int src, int dst, const char *name, const char *path,
                             const struct stat *st, int depth, an_error_t *err);

struct tree {
  const struct an_file_opts *o;
  copy_entry_fn entry;
  bool skip_vanished;      /* the sandbox may remove files while we copy out */
  int dst_root;            /* copy-out: the host directory, for hard links */
  size_t root_len;         /* bytes of a path that name the source root */
  struct an_inode_map links;
  uint64_t entries, bytes;
};

static uid_t owner_uid(const struct an_file_opts *o) { return o->set_owner ? o->uid : (uid_t) -1; }
static gid_t owner_gid(const struct an_file_opts *o) { return o->set_owner ? o->gid : (gid_t) -1; }

static int symlink_at(int parent, const char *name, const char *target, const char *display,
                      const struct an_file_opts *o, an_error_t *err) {
  cleanup_free char *tmp = an_random_name(".an-lnk");
  if (!tmp) return an_error_set(err, ENOMEM, "symlink %s", display);
  if (symlinkat(target, parent, tmp) < 0) return an_error_set(err, errno, "symlink %s", display);
  if (o->set_owner && fchownat(parent, tmp, o->uid, o->gid, AT_SYMLINK_NOFOLLOW) < 0) {
    int e = errno;
    unlinkat(parent, tmp, 0);
    return an_error_set(err, e, "chown symlink %s", display);
  }
  if (renameat(parent, tmp, parent, name) < 0) {
    int e = errno;
    unlinkat(parent, tmp, 0);
    return an_error_set(err, e, "rename symlink %s into place", display);
  }
  return 0;
}

/* mkdir `name` in `parent` if missing and open it beneath (no symlink). */
static int mkdir_open(int parent, const char *name, mode_t mode, const char *display,
                      const struct an_file_opts *o, an_error_t *err) {
  bool created = mkdirat(parent, name, mode) == 0;
  if (!created && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", display);
  cleanup_error an_error_t why = NULL;
  int fd = an_openat_beneath(parent, name, O_RDONLY | O_DIRECTORY, 0, &why);
  if (fd < 0) return an_error_set(err, -fd, "directory %s", display);
  if (created && (fchmod(fd, mode & 0777) < 0 || (o->set_owner && fchown(fd, o->uid, o->gid) < 0))) {
    int e = errno;
    close(fd);
    return an_error_set(err, e, "chown %s", display);
  }
  return fd;
}

/* Messages naming a path the sandbox chose, quoted; out of line so that
 * the quoting buffers are not in the frames of the recursive walk (256
 * levels must fit any stack, ASan's too). */
static __attribute__((noinline, cold)) int path_err(an_error_t *err, int e, const char *what, const char *path,
                                                     const char *after) {
  return an_error_set(err, e, "%s\"%s\"%s", what, AN_QUOTED(path), after);
}

static __attribute__((noinline, cold)) void path_warn(const struct tree *t, const char *a, const char *b,
                                                       const char *why) {
  an_warnf(t->o->warn, t->o->warn_data, "\"%s%s%s\": skipped, %s", AN_QUOTED(a), b ? "/" : "",
           b ? AN_QUOTED(b) : "", why);
}

static __attribute__((noinline, cold)) int too_many(const struct tree *t, const char *display, an_error_t *err) {
  return an_error_set(err, E2BIG, "\"%s\": more than %llu entries (the cap of one copy)", AN_QUOTED(display),
                      (unsigned long long) t->o->max_entries);
}

#define STR2(x) #x
#define STR(x) STR2(x)

/* Walk one directory level: every entry of `src` but "." and ".." goes to
 * t->entry.  `display` is the raw path of `src` (quoted when shown). */
static int copy_tree(struct tree *t, int src, int dst, const char *display, int depth, an_error_t *err) {
  int dfd = dup(src);
  if (dfd < 0) return path_err(err, errno, "dup ", display, "");
  cleanup_closedir DIR *d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return path_err(err, errno, "opendir ", display, "");
  }
  cleanup_free char *path = malloc(PATH_MAX);
  if (!path) return an_error_set(err, ENOMEM, "copy");
  struct dirent *de;
  while ((errno = 0, de = readdir(d))) {
    const char *name = de->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    if (++t->entries > t->o->max_entries) return too_many(t, display, err);
    int w = snprintf(path, PATH_MAX, "%s/%s", display, name);
    if (w < 0 || w >= PATH_MAX) {
      path_warn(t, display, name, "path longer than PATH_MAX");
      continue;
    }
    struct stat st;
    if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno == ENOENT && t->skip_vanished) continue;
      return path_err(err, errno, "stat ", path, "");
    }
    if (S_ISDIR(st.st_mode) && depth + 1 > AN_TREE_MAX_DEPTH_SKIP) {
      path_warn(t, path, NULL, "nested deeper than " STR(AN_TREE_MAX_DEPTH_SKIP) " directories");
      continue;
    }
    int r = t->entry(t, src, dst, name, path, &st, depth, err);
    if (r < 0) return r;
  }
  if (errno) return path_err(err, errno, "readdir ", display, "");
  return 0;
}

static int run_tree(struct tree *t, int src, int dst, const char *display, an_error_t *err) {
  int r = copy_tree(t, src, dst, display, 0, err);
  an_inode_map_free(&t->links);
  return r;
}

static void tree_opts(const struct an_file_opts *in, struct an_file_opts *o) {
  an_files_resolve_opts(in, o);
  if (!o->max_total_bytes) o->max_total_bytes = AN_TREE_DEFAULT_MAX_BYTES;
  if (!o->max_entries) o->max_entries = AN_TREE_DEFAULT_MAX_ENTRIES;
}

static __attribute__((noinline)) int copy_link_in(int src, int dst, const char *name, const char *path,
                                                  const struct an_file_opts *o, an_error_t *err) {
  char target[PATH_MAX];
  ssize_t n = readlinkat(src, name, target, sizeof target - 1);
  if (n < 0) return an_error_set(err, errno, "readlink %s", path);
  target[n] = '\0';
  return symlink_at(dst, name, target, path, o, err);
}

/* host -> workspace: directories, regular files and symlinks (as links). */
static int copy_entry_in(struct tree *t, int src, int dst, const char *name, const char *path,
                         const struct stat *st, int depth, an_error_t *err) {
  const struct an_file_opts *o = t->o;
  if (S_ISDIR(st->st_mode)) {
    cleanup_close int s2 = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s2 < 0) return an_error_set(err, errno, "open %s", path);
    cleanup_close int d2 = mkdir_open(dst, name, o->dir_mode, path, o, err);
    if (d2 < 0) return d2;
    return copy_tree(t, s2, d2, path, depth + 1, err);
  }
  if (S_ISREG(st->st_mode)) {
    if (t->bytes + (uint64_t) st->st_size > o->max_total_bytes)
      return an_error_set(err, EFBIG, "%s: more than %llu bytes in all (the cap of one copy)", path,
                          (unsigned long long) o->max_total_bytes);
    cleanup_close int s2 = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (s2 < 0) return an_error_set(err, errno, "open %s", path);
    uint64_t n = 0;
    int r = an_files_copy_hashed_at(dst, name, path, s2, o->max_total_bytes - t->bytes, st->st_mode & 0777, o,
                                    &n, NULL, err);
    t->bytes += n;
    return r;
  }
  if (S_ISLNK(st->st_mode)) return copy_link_in(src, dst, name, path, o, err);
  an_warnf(o->warn, o->warn_data, "%s: skipped, not a regular file, directory or symlink", path);
  return 0;
}

int an_dir_put(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err) {
  struct an_file_opts o;
  tree_opts(opts, &o);
  /* the host's own data: no byte cap unless asked (the workspace's disk
   * quota bounds it); the entry cap stays */
  if (!opts || !opts->max_total_bytes) o.max_total_bytes = UINT64_MAX;
  cleanup_close int src = open(host_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (src < 0) return an_error_set(err, errno, "put directory: open %s", host_dir);
  cleanup_close int dst = -1;
  if (o.mkdir_parents) {
    dst = an_mkdir_p_beneath_owned(ws_dirfd, relpath, o.dir_mode, owner_uid(&o), owner_gid(&o), err);
  } else {
    cleanup_free char *name = NULL;
    cleanup_close int parent =
        an_open_parent_beneath(ws_dirfd, relpath, false, 0, (uid_t) -1, (gid_t) -1, &name, err);
    if (parent < 0) return an_error_prefix(err, "put directory %s", relpath);
    dst = mkdir_open(parent, name, o.dir_mode, relpath, &o, err);
  }
  if (dst < 0) return an_error_prefix(err, "put directory %s", relpath);
  struct tree t = {.o = &o, .entry = copy_entry_in, .dst_root = -1};
  int r = run_tree(&t, src, dst, relpath, err);
  if (r < 0) return an_error_prefix(err, "put directory %s", host_dir);
  /* one syncfs(2) for the tree instead of an fsync per file */
  if (syncfs(dst) < 0) return an_error_set(err, errno, "put directory %s: sync", relpath);
  return 0;
}

/* Another name of a file already copied out: a hard link to that copy
 * (fresh temporary name, then renameat over `name`).  Returns 1 when
 * linked, 0 when the caller should copy instead (e.g. EMLINK). */
static int link_copy(struct tree *t, const struct an_inode_ent *first, int dst, const char *name,
                     const char *path, an_error_t *err) {
  cleanup_free char *tmp = an_random_name(".an-lnk");
  if (!tmp) return an_error_set(err, ENOMEM, "get \"%s\"", AN_QUOTED(path));
  if (linkat(t->dst_root, first->path, dst, tmp, 0) < 0) return 0;
  if (renameat(dst, tmp, dst, name) < 0) {
    int e = errno;
    unlinkat(dst, tmp, 0);
    return an_error_set(err, e, "get \"%s\": rename into place", AN_QUOTED(path));
  }
  return 1;
}

static __attribute__((noinline)) int copy_file_out(struct tree *t, int src, int dst, const char *name, const char *path,
                         const struct stat *st, an_error_t *err) {
  const struct an_file_opts *o = t->o;
  if (st->st_nlink > 1) {
    const struct an_inode_ent *first = an_inode_map_find(&t->links, st->st_dev, st->st_ino);
    if (first) {
      int r = link_copy(t, first, dst, name, path, err);
      if (r != 0) return r < 0 ? r : 0;
    }
  }
  if (t->bytes + (uint64_t) st->st_size > o->max_total_bytes)
    return an_error_set(err, EFBIG, "get \"%s\": more than %llu bytes in all (the cap of one copy)",
                        AN_QUOTED(path), (unsigned long long) o->max_total_bytes);
  cleanup_error an_error_t why = NULL;
  struct stat fst;
  cleanup_close int s2 = an_files_open_capped(src, name, path, o->max_bytes, &fst, &why);
  if (s2 == -ENOENT) return 0; /* removed meanwhile */
  if (s2 == -EFBIG)
    return an_error_set(err, EFBIG, "get \"%s\": file too large (%lld bytes, cap %llu)", AN_QUOTED(path),
                        (long long) st->st_size, (unsigned long long) o->max_bytes);
  if (s2 == -EINVAL) return an_error_set(err, EINVAL, "get \"%s\": not a regular file", AN_QUOTED(path));
  if (s2 < 0) return an_error_set(err, -s2, "get \"%s\"", AN_QUOTED(path));
  uint64_t left = o->max_total_bytes - t->bytes, cap = o->max_bytes < left ? o->max_bytes : left, n = 0;
  char shown[AN_QUOTE_NAME_SIZE + 2];
  snprintf(shown, sizeof shown, "\"%s\"", AN_QUOTED(path));
  int r = an_files_copy_hashed_at(dst, name, shown, s2, cap, AN_HOST_COPY_MODE(fst.st_mode), o, &n, NULL, err);
  if (r < 0) return an_error_prefix(err, "get");
  t->bytes += n;
  if (fst.st_nlink > 1 && an_inode_map_add(&t->links, fst.st_dev, fst.st_ino, path + t->root_len, n, NULL) < 0)
    return an_error_set(err, ENOMEM, "get \"%s\"", AN_QUOTED(path));
  return 0;
}

/* mkdir_open for the way out: the sandbox's name quoted in its errors. */
static __attribute__((noinline)) int mkdir_out(int dst, const char *name, mode_t mode, const char *path,
                                               const struct an_file_opts *o, an_error_t *err) {
  char shown[AN_QUOTE_NAME_SIZE + 2];
  snprintf(shown, sizeof shown, "\"%s\"", AN_QUOTED(path));
  return mkdir_open(dst, name, mode, shown, o, err);
}

/* workspace -> host: directories and regular files (capped); symlinks
 * are never followed nor copied. */
static int copy_entry_out(struct tree *t, int src, int dst, const char *name, const char *path,
                          const struct stat *st, int depth, an_error_t *err) {
  const struct an_file_opts *o = t->o;
  if (S_ISDIR(st->st_mode)) {
    /* The type check is only a hint: the open refuses a symlink swapped in
     * meanwhile. */
    cleanup_close int s2 = an_openat_beneath(src, name, O_RDONLY | O_DIRECTORY, 0, NULL);
    if (s2 == -ENOENT) return 0;
    if (s2 < 0) return path_err(err, -s2, "get ", path, "");
    cleanup_close int d2 = mkdir_out(dst, name, AN_HOST_COPY_MODE(st->st_mode) | 0700, path, o, err);
    if (d2 < 0) return d2;
    return copy_tree(t, s2, d2, path, depth + 1, err);
  }
  if (S_ISREG(st->st_mode)) return copy_file_out(t, src, dst, name, path, st, err);
  if (S_ISLNK(st->st_mode)) path_warn(t, path, NULL, "a symlink (symlinks are never followed)");
  else path_warn(t, path, NULL, "not a regular file");
  (void) o;
  return 0;
}

int an_dir_get(int ws_dirfd, const char *relpath, const char *host_dir,
               const struct an_file_opts *opts, an_error_t *err) {
  struct an_file_opts o;
  tree_opts(opts, &o);
  cleanup_close int src = an_openat_beneath(ws_dirfd, relpath, O_RDONLY | O_DIRECTORY, 0, err);
  if (src < 0) return an_error_prefix(err, "get directory");
  if (mkdir(host_dir, 0755) < 0 && errno != EEXIST)
    return an_error_set(err, errno, "get directory %s: mkdir %s", relpath, host_dir);
  cleanup_close int dst = open(host_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dst < 0) return an_error_set(err, errno, "get directory %s: open %s", relpath, host_dir);
  /* paths are "<relpath>/<rest>": the host copy is <host_dir>/<rest> */
  struct tree t = {.o = &o, .entry = copy_entry_out, .skip_vanished = true, .dst_root = dst,
                   .root_len = strlen(relpath) + 1};
  int r = run_tree(&t, src, dst, relpath, err);
  if (r < 0) return an_error_prefix(err, "get directory %s", relpath);
  if (syncfs(dst) < 0) return an_error_set(err, errno, "get directory %s: sync %s", relpath, host_dir);
  return 0;
}
