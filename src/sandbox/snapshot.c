/* sandbox/snapshot.c — workspace -> pax tar (libarchive writer, numeric
 * owners, symlinks as symlinks, O_NOFOLLOW walk) and the atomic restore
 * swap (verify sha256, extract into a private sibling via
 * sandbox/tar_extract.c, renameat2 RENAME_EXCHANGE, remove the old tree).
 * See agentnest/snapshot.h. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/snapshot.h"
#include "util/cleanup.h"
#include "util/quote.h"
#include "util/dir_list.h"
#include "util/fdcopy.h"
#include "util/safe_path.h"
#include "sandbox/files_internal.h"
#include "util/sha256.h"

static const struct an_snapshot_opts no_opts;

struct tar_sink {
  int fd;
  EVP_MD_CTX *md;
  uint64_t size;
  int error;  /* errno of a failed write */
};

static la_ssize_t sink_write(struct archive *a, void *data, const void *buf, size_t len) {
  struct tar_sink *s = data;
  const char *p = buf;
  size_t left = len;
  while (left > 0) {
    ssize_t n = write(s->fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      s->error = errno;
      archive_set_error(a, errno, "write snapshot");
      return -1;
    }
    p += n;
    left -= (size_t) n;
  }
  EVP_DigestUpdate(s->md, buf, len);
  s->size += len;
  return (la_ssize_t) len;
}

struct walk {
  struct archive *a;
  struct archive_entry_linkresolver *links;  /* hard links: data once, then link entries */
  const struct an_snapshot_opts *o;
  uint64_t content;   /* file bytes archived so far */
  uint64_t entries;
  uint64_t budget;    /* names the walk may still read */
  uint64_t max_entries;
  char *buf;          /* 64 KiB copy buffer */
  const char *zeros;  /* ZEROS bytes of zeros: what holes are fed as */
};

#define ZEROS (1u << 20)
/* Data extents kept in a sparse map; past this the rest of the file is one
 * extent (its holes archived as zeros, still under max_bytes). */
#define MAX_EXTENTS 4096

/* The data extents of `fd` within [0, size) (SEEK_DATA/SEEK_HOLE) as sparse
 * map entries of `e`; *data gets the bytes they cover.  A file without holes
 * gets no map (a plain entry). */
static int map_extents(int fd, uint64_t size, struct archive_entry *e, uint64_t *data,
                       const char *path, an_error_t *err) {
  *data = size;
  if (size == 0) return 0;
  off_t first = lseek(fd, 0, SEEK_DATA);
  if (first < 0 && errno != ENXIO) return 0; /* no SEEK_DATA here: archive all */
  off_t hole0 = first < 0 ? 0 : lseek(fd, first, SEEK_HOLE);
  if (first == 0 && hole0 >= (off_t) size) return 0; /* no hole */
  uint64_t sum = 0;
  off_t pos = 0;
  for (unsigned n = 0; pos < (off_t) size; n++) {
    off_t d = lseek(fd, pos, SEEK_DATA);
    if (d < 0 || d >= (off_t) size) break;
    off_t h = n + 1 >= MAX_EXTENTS ? (off_t) size : lseek(fd, d, SEEK_HOLE);
    if (h < 0) return an_error_set(err, errno, "snapshot \"%s\": seek", AN_QUOTED(path));
    if (h > (off_t) size) h = (off_t) size;
    archive_entry_sparse_add_entry(e, d, h - d);
    sum += (uint64_t) (h - d);
    pos = h;
  }
  /* the map must end at the file's size (an empty extent there) */
  archive_entry_sparse_add_entry(e, (la_int64_t) size, 0);
  *data = sum;
  return 0;
}

static void entry_freep(struct archive_entry **e) { if (*e) archive_entry_free(*e); }

static __attribute__((noinline, cold)) int arch_error(struct walk *w, an_error_t *err, const char *path) {
  int e = archive_errno(w->a);
  return an_error_set(err, e > 0 ? e : EIO, "snapshot \"%s\": %s", AN_QUOTED(path),
                      archive_error_string(w->a));
}

/* An owner id as the tar records it (an_snapshot_opts.id_base/id_count). */
static la_int64_t tar_id(const struct an_snapshot_opts *o, uint32_t id) {
  if (!o->id_count) return id;
  return id >= o->id_base && id - o->id_base < o->id_count ? id - o->id_base : 65534;
}

/* Header common to all entry types: name, type, permission bits, numeric
 * owner, mtime.  uname/gname are never set (BL-24: no NSS lookups). */
static struct archive_entry *make_entry(const struct an_snapshot_opts *o, const char *path,
                                        const struct stat *st, mode_t type) {
  struct archive_entry *e = archive_entry_new();
  if (!e) return NULL;
  archive_entry_set_pathname(e, path);
  archive_entry_set_filetype(e, type);
  archive_entry_set_perm(e, st->st_mode & 0777);
  archive_entry_set_uid(e, tar_id(o, st->st_uid));
  archive_entry_set_gid(e, tar_id(o, st->st_gid));
  archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
  return e;
}

/* Feed `len` bytes of the file at `off` (data) or zeros (a hole, which a
 * sparse entry skips) to the archive. */
static int feed(struct walk *w, int fd, uint64_t off, uint64_t len, bool hole, const char *path,
                an_error_t *err) {
  while (len > 0) {
    size_t want = hole ? (len < ZEROS ? (size_t) len : ZEROS) : (len < 65536 ? (size_t) len : 65536);
    const char *src = w->zeros;
    ssize_t n = (ssize_t) want;
    if (!hole) {
      n = pread(fd, w->buf, want, (off_t) off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return an_error_set(err, errno, "snapshot \"%s\": read", AN_QUOTED(path));
      }
      /* Exactly the header's size: a file cut meanwhile is zero-padded. */
      if (n == 0) memset(w->buf, 0, want), n = (ssize_t) want;
      src = w->buf;
    }
    if (archive_write_data(w->a, src, (size_t) n) < 0) return arch_error(w, err, path);
    off += (uint64_t) n;
    len -= (uint64_t) n;
  }
  return 0;
}

static __attribute__((noinline)) int add_file(struct walk *w, int dfd, const char *name, const char *path,
                                              an_error_t *err) {
  struct stat st;
  cleanup_error an_error_t why = NULL;
  cleanup_close int fd = an_open_regular_beneath(dfd, name, &st, &why);
  if (fd == -ENOENT) return 1; /* removed meanwhile: not counted */
  if (fd < 0) return an_error_set(err, -fd, "snapshot \"%s\"", AN_QUOTED(path));
  uint64_t size = (uint64_t) st.st_size;
  __attribute__((cleanup(entry_freep))) struct archive_entry *e = make_entry(w->o, path, &st, AE_IFREG);
  if (!e) return an_error_set(err, ENOMEM, "snapshot \"%s\"", AN_QUOTED(path));
  archive_entry_set_size(e, (la_int64_t) size);
  /* A file with more links is archived once; its other names become hard
   * link entries without data (libarchive's link resolver, tar strategy),
   * so N links of a file cost its size once, here and on restore. */
  if (st.st_nlink > 1) {
    archive_entry_set_dev(e, st.st_dev);
    archive_entry_set_ino64(e, (la_int64_t) st.st_ino);
    archive_entry_set_nlink(e, (unsigned int) st.st_nlink);
    struct archive_entry *spare = NULL;
    archive_entry_linkify(w->links, &e, &spare);
    if (spare) archive_entry_free(spare);
    if (!e) return an_error_set(err, ENOMEM, "snapshot \"%s\"", AN_QUOTED(path));
    if (archive_entry_hardlink(e)) {
      if (archive_write_header(w->a, e) != ARCHIVE_OK) return arch_error(w, err, path);
      return 0;
    }
  }
  uint64_t data = size;
  int r = map_extents(fd, size, e, &data, path, err);
  if (r < 0) return r;
  if (w->o->max_bytes && w->content + data > w->o->max_bytes)
    return an_error_set(err, EFBIG, "snapshot \"%s\": workspace too large (cap %llu bytes)", AN_QUOTED(path),
                        (unsigned long long) w->o->max_bytes);
  if (archive_write_header(w->a, e) != ARCHIVE_OK) return arch_error(w, err, path);
  /* The whole logical content in order: extents read, holes as zeros
   * (which the pax writer does not store for a sparse entry). */
  uint64_t pos = 0;
  int ns = archive_entry_sparse_reset(e);
  for (int k = 0; k < ns && r == 0; k++) {
    la_int64_t off = 0, len = 0;
    archive_entry_sparse_next(e, &off, &len);
    if ((uint64_t) off > pos) r = feed(w, fd, pos, (uint64_t) off - pos, true, path, err);
    if (r == 0) r = feed(w, fd, (uint64_t) off, (uint64_t) len, false, path, err);
    pos = (uint64_t) (off + len);
  }
  if (r == 0 && pos < size) r = feed(w, fd, pos, size - pos, ns > 0, path, err);
  if (r < 0) return r;
  w->content += data;
  return 0;
}

#define STR2(x) #x
#define STR(x) STR2(x)

/* Messages naming a path the sandbox chose, quoted.  Out of line (as are
 * the leaf entry kinds), so that quoting buffers and PATH_MAX arrays are not
 * in the frames of the recursive walk: 256 levels must fit any stack. */
static __attribute__((noinline, cold)) int path_err(an_error_t *err, int e, const char *what, const char *path) {
  return an_error_set(err, e, "%s \"%s\"", what, AN_QUOTED(path));
}

static __attribute__((noinline, cold)) void path_warn(const struct walk *w, const char *a, const char *b,
                                                       const char *why) {
  an_warnf(w->o->warn, w->o->warn_data, "snapshot: \"%s%s\" skipped (%s)", AN_QUOTED(a), b ? AN_QUOTED(b) : "", why);
}

static __attribute__((noinline)) int list_dir(struct walk *w, int dfd, const char *prefix, struct an_dir_list *names,
                                              an_error_t *err) {
  char shown[AN_QUOTE_NAME_SIZE + 2];
  snprintf(shown, sizeof shown, "\"%s\"", prefix[0] ? AN_QUOTED(prefix) : ".");
  int r = an_dir_list_read(dfd, shown, &w->budget, w->max_entries, names, err);
  return r < 0 ? an_error_prefix(err, "snapshot") : 0;
}

static __attribute__((noinline)) int add_symlink(struct walk *w, int dfd, const char *name, const char *path,
                                                 const struct stat *st, an_error_t *err) {
  char target[PATH_MAX];
  ssize_t k = readlinkat(dfd, name, target, sizeof target - 1);
  if (k < 0) return errno == ENOENT ? 1 : path_err(err, errno, "snapshot: readlink", path);
  target[k] = '\0';
  __attribute__((cleanup(entry_freep))) struct archive_entry *e = make_entry(w->o, path, st, AE_IFLNK);
  if (!e) return path_err(err, ENOMEM, "snapshot", path);
  archive_entry_set_symlink(e, target);
  if (archive_write_header(w->a, e) != ARCHIVE_OK) return arch_error(w, err, path);
  return 0;
}

static int add_dir(struct walk *w, int dfd, const char *name, const char *path, int depth, an_error_t *err);

/* One directory level; returns 0 or a negative errno.  (r > 0 from a leaf:
 * the entry vanished, not counted.) */
static int walk_dir(struct walk *w, int dfd, const char *prefix, int depth, an_error_t *err) {
  struct an_dir_list names;
  int r = list_dir(w, dfd, prefix, &names, err);
  if (r < 0) return r;
  cleanup_free char *path = malloc(PATH_MAX);
  if (!path) r = an_error_set(err, ENOMEM, "snapshot");
  for (size_t i = 0; i < names.n && r >= 0; i++) {
    const char *name = names.names[i];
    r = 0;
    if (snprintf(path, PATH_MAX, "%s%s", prefix, name) >= PATH_MAX - 1) {
      path_warn(w, prefix, name, "path longer than PATH_MAX");
      continue;
    }
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) r = path_err(err, errno, "snapshot: stat", path);
      continue;
    }
    if (S_ISREG(st.st_mode)) {
      r = add_file(w, dfd, name, path, err);
    } else if (S_ISDIR(st.st_mode)) {
      if (depth + 1 > AN_TREE_MAX_DEPTH_SKIP) {
        path_warn(w, path, NULL, "nested deeper than " STR(AN_TREE_MAX_DEPTH_SKIP) " directories");
        continue;
      }
      r = add_dir(w, dfd, name, path, depth, err);
    } else if (S_ISLNK(st.st_mode)) {
      r = add_symlink(w, dfd, name, path, &st, err);
    } else {
      path_warn(w, path, NULL, "not a regular file, directory or symlink");
      continue;
    }
    if (r == 0) w->entries++;
  }
  an_dir_list_free(&names);
  return r < 0 ? r : 0;
}

static int add_dir(struct walk *w, int dfd, const char *name, const char *path, int depth, an_error_t *err) {
  cleanup_close int sub = an_openat_beneath(dfd, name, O_RDONLY | O_DIRECTORY, 0, NULL);
  if (sub == -ENOENT) return 1;
  if (sub < 0) return path_err(err, -sub, "snapshot", path);
  struct stat dst;
  if (fstat(sub, &dst) < 0) return path_err(err, errno, "snapshot: stat", path);
  cleanup_free char *dpath = NULL;
  if (asprintf(&dpath, "%s/", path) < 0) return an_error_set(err, ENOMEM, "snapshot");
  {
    __attribute__((cleanup(entry_freep))) struct archive_entry *e = make_entry(w->o, dpath, &dst, AE_IFDIR);
    if (!e) return path_err(err, ENOMEM, "snapshot", path);
    if (archive_write_header(w->a, e) != ARCHIVE_OK) return arch_error(w, err, path);
  }
  return walk_dir(w, sub, dpath, depth + 1, err);
}

static void archive_freep(struct archive **a) { if (*a) archive_write_free(*a); }
static void links_freep(struct archive_entry_linkresolver **l) {
  if (*l) archive_entry_linkresolver_free(*l);
}
static void md_freep(EVP_MD_CTX **m) { if (*m) EVP_MD_CTX_free(*m); }

int an_workspace_snapshot_fd(int ws_dirfd, int out_fd, const struct an_snapshot_opts *opts,
                             struct an_snapshot_info *info, an_error_t *err) {
  const struct an_snapshot_opts *o = opts ? opts : &no_opts;
  __attribute__((cleanup(md_freep))) EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!md || EVP_DigestInit_ex(md, an_sha256_md(), NULL) != 1) return an_error_set(err, ENOMEM, "snapshot");
  struct tar_sink sink = {.fd = out_fd, .md = md};
  __attribute__((cleanup(archive_freep))) struct archive *a = archive_write_new();
  cleanup_free char *buf = malloc(65536);
  cleanup_free char *zeros = calloc(1, ZEROS);
  if (!a || !buf || !zeros) return an_error_set(err, ENOMEM, "snapshot");
  __attribute__((cleanup(links_freep))) struct archive_entry_linkresolver *links =
    archive_entry_linkresolver_new();
  if (!links) return an_error_set(err, ENOMEM, "snapshot");
  archive_entry_linkresolver_set_strategy(links, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED);
  /* Names are the workspace's bytes, whatever the locale: pax
   * hdrcharset=BINARY stores them as they are (no conversion to UTF-8,
   * which fails in the C locale for any byte >= 0x80). */
  if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
      archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
      archive_write_add_filter_none(a) != ARCHIVE_OK ||
      archive_write_open(a, &sink, NULL, sink_write, NULL) != ARCHIVE_OK)
    return an_error_set(err, EIO, "snapshot: %s", archive_error_string(a));
  cleanup_close int root = an_openat_beneath(ws_dirfd, ".", O_RDONLY | O_DIRECTORY, 0, err);
  if (root < 0) return an_error_prefix(err, "snapshot");
  uint64_t max_entries = o->max_entries ? o->max_entries : AN_TREE_DEFAULT_MAX_ENTRIES;
  struct walk w = {.a = a, .links = links, .o = o, .buf = buf, .zeros = zeros, .budget = max_entries,
                   .max_entries = max_entries};
  int r = walk_dir(&w, root, "", 0, err);
  if (r < 0) return r;
  if (archive_write_close(a) != ARCHIVE_OK)
    return an_error_set(err, sink.error ? sink.error : EIO, "snapshot: finish tar: %s",
                        archive_error_string(a));
  unsigned char dig[EVP_MAX_MD_SIZE];
  unsigned int dlen = 0;
  if (EVP_DigestFinal_ex(md, dig, &dlen) != 1) return an_error_set(err, EIO, "snapshot: sha256");
  if (info) {
    info->size = sink.size;
    info->entries = w.entries;
    an_hex_encode(dig, dlen, info->sha256);
  }
  return 0;
}

int an_workspace_snapshot(int ws_dirfd, const char *tar_path, const struct an_snapshot_opts *opts,
                          struct an_snapshot_info *info, an_error_t *err) {
  cleanup_free char *copy = strdup(tar_path);
  cleanup_free char *base = strdup(tar_path);
  if (!copy || !base) return an_error_set(err, ENOMEM, "snapshot %s", tar_path);
  const char *dir = dirname(copy);
  cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return an_error_set(err, errno, "snapshot: open directory %s", dir);
  cleanup_free char *tmp = an_random_name(".an-snapshot");
  if (!tmp) return an_error_set(err, ENOMEM, "snapshot %s", tar_path);
  int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return an_error_set(err, errno, "snapshot: create temporary file in %s", dir);
  int r;
  {
    cleanup_close int wfd = fd;
    r = an_workspace_snapshot_fd(ws_dirfd, wfd, opts, info, err);
    if (r == 0 && fsync(wfd) < 0) r = an_error_set(err, errno, "snapshot: fsync %s", tar_path);
  }
  if (r == 0 && renameat(dfd, tmp, dfd, basename(base)) < 0)
    r = an_error_set(err, errno, "snapshot: rename into place %s", tar_path);
  if (r < 0) {
    unlinkat(dfd, tmp, 0);
    return r;
  }
  return 0;
}

/* ---- restore ---------------------------------------------------------------- */

static int check_sha256_arg(const char *hex, an_error_t *err) {
  if (strlen(hex) != 64 || strspn(hex, "0123456789abcdefABCDEF") != 64)
    return an_error_set(err, EINVAL, "restore: --sha256 must be 64 hex digits, got '%s'", hex);
  return 0;
}

int an_workspace_restore_as(int parent_dirfd, const char *workspace_name, const char *label,
                            const char *tar_path, const char *expected_sha256,
                            const struct an_snapshot_opts *opts, an_error_t *err) {
  const struct an_snapshot_opts *o = opts ? opts : &no_opts;
  if (!workspace_name || !*workspace_name || strchr(workspace_name, '/') ||
      !strcmp(workspace_name, ".") || !strcmp(workspace_name, ".."))
    return an_error_set(err, EINVAL, "restore: bad workspace name '%s'", workspace_name ? workspace_name : "");
  if (expected_sha256) {
    int r = check_sha256_arg(expected_sha256, err);
    if (r < 0) return r;
  }
  /* what messages call the workspace and the private sibling */
  cleanup_free char *ws_default = NULL;
  if (!label && asprintf(&ws_default, "workspace %s", workspace_name) < 0) ws_default = NULL;
  const char *ws = label ? label : ws_default ? ws_default : workspace_name;
  /* O_NONBLOCK, regular files only: a FIFO never hangs restore (BL-23) */
  cleanup_close int tfd = an_open_input(AT_FDCWD, tar_path, 0, false, NULL, err);
  if (tfd < 0) return an_error_prefix(err, "restore");
  /* Verify before extracting anything. */
  if (expected_sha256) {
    char got[AN_SHA256_HEX_LEN];
    int r = an_copy_fd_capped(tfd, -1, UINT64_MAX, tar_path, NULL, got, err);
    if (r < 0) return an_error_prefix(err, "restore");
    if (strcasecmp(got, expected_sha256) != 0)
      return an_error_set(err, EBADMSG, "restore: %s: sha256 mismatch: expected %s, got %s", tar_path,
                          expected_sha256, got);
    if (lseek(tfd, 0, SEEK_SET) < 0) return an_error_set(err, errno, "restore: rewind %s", tar_path);
  }
  struct stat wst;
  if (fstatat(parent_dirfd, workspace_name, &wst, AT_SYMLINK_NOFOLLOW) < 0)
    return an_error_set(err, errno, "restore: %s", ws);
  if (!S_ISDIR(wst.st_mode))
    return an_error_set(err, ENOTDIR, "restore: %s is not a directory", ws);

  char prefix[NAME_MAX + 1];
  if (snprintf(prefix, sizeof prefix, ".%.200s.restore", workspace_name) >= (int) sizeof prefix)
    return an_error_set(err, ENAMETOOLONG, "restore %s", ws);
  cleanup_free char *tmp = an_random_name(prefix);
  if (!tmp) return an_error_set(err, ENOMEM, "restore %s", ws);
  const char *staging = label ? "the staging directory" : tmp;
  if (mkdirat(parent_dirfd, tmp, 0700) < 0)
    return an_error_set(err, errno, "restore: mkdir %s", staging);
  int r;
  {
    cleanup_close int dfd = an_openat_beneath(parent_dirfd, tmp, O_RDONLY | O_DIRECTORY, 0, err);
    r = dfd < 0 ? dfd : an_tar_extract_safe(tfd, dfd, o, err);
    if (r == 0 && fchown(dfd, wst.st_uid, wst.st_gid) < 0)
      r = an_error_set(err, errno, "restore: chown %s", staging);
    if (r == 0 && fchmod(dfd, wst.st_mode & 07777) < 0)
      r = an_error_set(err, errno, "restore: chmod %s", staging);
    if (r == 0 && syncfs(dfd) < 0) r = an_error_set(err, errno, "restore: sync %s", staging);
  }
  if (r == 0 && renameat2(parent_dirfd, tmp, parent_dirfd, workspace_name, RENAME_EXCHANGE) < 0)
    r = an_error_set(err, errno, "restore: exchange %s with %s", staging, ws);
  /* On success `tmp` now names the old tree; on failure the partial new one. */
  an_error_t rm_err = NULL;
  if (an_remove_tree_beneath(parent_dirfd, tmp, &rm_err) < 0)
    an_warnf(o->warn, o->warn_data, "restore: could not remove %s: %s", staging, rm_err->msg);
  an_error_free(&rm_err);
  return r < 0 ? an_error_prefix(err, "restore %s from %s", label ? label : workspace_name, tar_path) : 0;
}

int an_workspace_restore_ex(int parent_dirfd, const char *workspace_name, const char *tar_path,
                            const char *expected_sha256, const struct an_snapshot_opts *opts,
                            an_error_t *err) {
  return an_workspace_restore_as(parent_dirfd, workspace_name, NULL, tar_path, expected_sha256, opts, err);
}

int an_workspace_restore(int parent_dirfd, const char *workspace_name, const char *tar_path,
                         const char *expected_sha256, an_error_t *err) {
  return an_workspace_restore_ex(parent_dirfd, workspace_name, tar_path, expected_sha256, NULL, err);
}
