/* sandbox/tar_extract.c — extraction of an untrusted tar into a private
 * directory fd, refusing every entry that could write outside it
 * (case BL-27; rules in agentnest/snapshot.h).  Every path is resolved with
 * util/safe_path (openat2 beneath, no symlinks); libarchive only parses,
 * it never touches the filesystem (no archive_write_disk). */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/snapshot.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/quote.h"
#include "util/safe_path.h"

struct extract {
  struct archive *a;
  int dest;
  const struct an_snapshot_opts *o;
  uint64_t content;   /* logical bytes declared by the file entries so far */
  uint64_t entries;
  /* directories' mtimes, set once everything is extracted (creating an
   * entry inside a directory changes its mtime, as tar(1) knows) */
  struct dir_time { char *name; struct timespec mtime; } *dirs;
  size_t ndirs, cap;
};

static void read_freep(struct archive **a) { if (*a) archive_read_free(*a); }

/* Owner for an extracted entry: the requested one, or the tar's numeric ids. */
static void owner_of(const struct extract *x, struct archive_entry *e, uid_t *uid, gid_t *gid) {
  if (x->o->set_owner) {
    *uid = x->o->uid;
    *gid = x->o->gid;
  } else {
    *uid = (uid_t) archive_entry_uid(e);
    *gid = (gid_t) archive_entry_gid(e);
  }
}

/* Why a name was refused by an_path_check_relative, without echoing it. */
static const char *reason(int r) {
  return r == -EXDEV          ? "path escapes workspace (absolute or '..')"
         : r == -ENAMETOOLONG ? "name too long"
                              : "empty name";
}

static int write_file(struct extract *x, struct archive_entry *e, int parent, const char *last,
                      const char *name, an_error_t *err) {
  /* The logical size (for a pax sparse entry GNU.sparse.realsize): a tar
   * of a few bytes may declare a 1 TiB file of holes; it counts in full. */
  la_int64_t size = archive_entry_size(e);
  if (size < 0) size = 0;
  if (x->o->max_bytes && x->content + (uint64_t) size > x->o->max_bytes)
    return an_error_set(err, EFBIG, "entry \"%s\": archive too large (cap %llu bytes)", name,
                        (unsigned long long) x->o->max_bytes);
  x->content += (uint64_t) size;
  cleanup_close int fd = openat(parent, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return an_error_set(err, errno, "entry \"%s\": create", name);
  const void *buf;
  size_t len;
  la_int64_t off;
  int ar;
  while ((ar = archive_read_data_block(x->a, &buf, &len, &off)) == ARCHIVE_OK) {
    if (off < 0 || off + (la_int64_t) len > size)
      return an_error_set(err, EINVAL, "entry \"%s\": data beyond its size", name);
    const char *p = buf;
    while (len > 0) {
      ssize_t n = pwrite(fd, p, len, off);
      if (n < 0) {
        if (errno == EINTR) continue;
        return an_error_set(err, errno, "entry \"%s\": write", name);
      }
      p += n;
      len -= (size_t) n;
      off += n;
    }
  }
  if (ar != ARCHIVE_EOF)
    return an_error_set(err, EINVAL, "entry \"%s\": read data: %s", name, archive_error_string(x->a));
  if (ftruncate(fd, size) < 0) return an_error_set(err, errno, "entry \"%s\": truncate", name);
  uid_t uid;
  gid_t gid;
  owner_of(x, e, &uid, &gid);
  if (fchown(fd, uid, gid) < 0) return an_error_set(err, errno, "entry \"%s\": chown", name);
  if (fchmod(fd, archive_entry_perm(e) & 0777) < 0) return an_error_set(err, errno, "entry \"%s\": chmod", name);
  struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                           {.tv_sec = archive_entry_mtime(e), .tv_nsec = archive_entry_mtime_nsec(e)}};
  futimens(fd, ts);
  return 0;
}

static int make_hardlink(struct extract *x, const char *target, const char *qtarget, int parent,
                         const char *last, const char *name, an_error_t *err) {
  cleanup_error an_error_t why = NULL;
  cleanup_free char *tlast = NULL;
  cleanup_close int tparent = an_open_parent_beneath(x->dest, target, false, 0, (uid_t) -1, (gid_t) -1,
                                                     &tlast, &why);
  if (tparent < 0)
    return an_error_set(err, -tparent, "entry \"%s\": hard link target \"%s\" refused (%s)", name, qtarget,
                        why ? why->msg : "");
  struct stat st;
  if (fstatat(tparent, tlast, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
    return an_error_set(err, EPERM, "entry \"%s\": hard link target \"%s\" is not an extracted regular file",
                        name, qtarget);
  if (linkat(tparent, tlast, parent, last, 0) < 0)
    return an_error_set(err, errno, "entry \"%s\": link to \"%s\"", name, qtarget);
  return 0;
}

static int remember_dir(struct extract *x, const char *name, struct archive_entry *e, an_error_t *err) {
  if (x->ndirs == x->cap) {
    size_t cap = x->cap ? x->cap * 2 : 64;
    struct dir_time *d = realloc(x->dirs, cap * sizeof *d);
    if (!d) return an_error_set(err, ENOMEM, "read tar");
    x->dirs = d;
    x->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) return an_error_set(err, ENOMEM, "read tar");
  x->dirs[x->ndirs++] = (struct dir_time){copy, {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
  return 0;
}

/* Deepest first (the reverse of the tar's order, where parents come first),
 * each opened beneath the destination again (no symlink followed). */
static void set_dir_times(struct extract *x) {
  for (size_t i = x->ndirs; i-- > 0;) {
    cleanup_error an_error_t why = NULL;
    cleanup_close int d = an_openat_beneath(x->dest, x->dirs[i].name, O_RDONLY | O_DIRECTORY, 0, &why);
    struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, x->dirs[i].mtime};
    if (d >= 0) futimens(d, ts);
  }
}

static void extract_free(struct extract *x) {
  for (size_t i = 0; i < x->ndirs; i++) free(x->dirs[i].name);
  free(x->dirs);
}

static int extract_entry(struct extract *x, struct archive_entry *e, an_error_t *err) {
  const char *rawname = archive_entry_pathname(e);
  if (!rawname || !*rawname) return an_error_set(err, EINVAL, "entry with an empty name");
  char raw[AN_QUOTE_NAME_SIZE];
  an_quote_name(rawname, raw);
  const char *name = rawname;
  while (name[0] == '.' && name[1] == '/') name += 2;
  if (!*name || !strcmp(name, ".")) return 0; /* the root itself */
  {
    cleanup_error an_error_t why = NULL;
    int r = an_path_check_relative(name, &why);
    if (r < 0) return an_error_set(err, -r, "entry \"%s\": %s", raw, reason(r));
  }
  const char *hardlink = archive_entry_hardlink(e);
  mode_t type = archive_entry_filetype(e);
  if (!hardlink && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)
    return an_error_set(err, EPERM, "entry \"%s\": %s not allowed in a workspace", raw,
                        type == AE_IFCHR || type == AE_IFBLK ? "device nodes are"
                        : type == AE_IFIFO                   ? "FIFOs are"
                        : type == AE_IFSOCK                  ? "sockets are"
                                                             : "this entry type is");
  if (hardlink) {
    cleanup_error an_error_t why = NULL;
    int r = an_path_check_relative(hardlink, &why);
    if (r < 0) return an_error_set(err, -r, "entry \"%s\": hard link target %s", raw, reason(r));
  }
  uid_t uid;
  gid_t gid;
  owner_of(x, e, &uid, &gid);
  /* Missing parents are created; a symlink at any parent component
   * (an earlier symlink entry) is refused, never written through. */
  cleanup_free char *last = NULL;
  cleanup_close int parent = -1;
  {
    cleanup_error an_error_t why = NULL;
    parent = an_open_parent_beneath(x->dest, name, true, 0755, uid, gid, &last, &why);
    if (parent < 0)
      return an_error_set(err, -parent, "entry \"%s\": %s", raw,
                          parent == -EXDEV ? "path escapes workspace (a parent is a symlink)"
                                           : why ? why->msg : "cannot create parent");
  }
  struct stat old;
  bool exists = fstatat(parent, last, &old, AT_SYMLINK_NOFOLLOW) == 0;
  if (exists) {
    bool same_dir = S_ISDIR(old.st_mode) && type == AE_IFDIR && !hardlink;
    bool file_over_file = S_ISREG(old.st_mode) && (type == AE_IFREG || hardlink);
    if (!same_dir && !file_over_file)
      return an_error_set(err, EEXIST, "entry \"%s\": would replace an existing %s with a %s", raw,
                          S_ISDIR(old.st_mode) ? "directory" : S_ISLNK(old.st_mode) ? "symlink" : "file",
                          hardlink ? "hard link" : type == AE_IFDIR ? "directory"
                                                 : type == AE_IFLNK ? "symlink" : "file");
    if (file_over_file && unlinkat(parent, last, 0) < 0)
      return an_error_set(err, errno, "entry \"%s\": replace", raw);
  }
  if (hardlink) {
    char qtarget[AN_QUOTE_NAME_SIZE];
    an_quote_name(hardlink, qtarget);
    return make_hardlink(x, hardlink, qtarget, parent, last, raw, err);
  }
  switch (type) {
  case AE_IFREG:
    return write_file(x, e, parent, last, raw, err);
  case AE_IFDIR: {
    if (!exists && mkdirat(parent, last, 0700) < 0) return an_error_set(err, errno, "entry \"%s\": mkdir", raw);
    cleanup_error an_error_t why = NULL;
    cleanup_close int d = an_openat_beneath(parent, last, O_RDONLY | O_DIRECTORY, 0, &why);
    if (d < 0) return an_error_set(err, -d, "entry \"%s\": %s", raw, why->msg);
    if (fchown(d, uid, gid) < 0) return an_error_set(err, errno, "entry \"%s\": chown", raw);
    if (fchmod(d, archive_entry_perm(e) & 0777) < 0) return an_error_set(err, errno, "entry \"%s\": chmod", raw);
    return remember_dir(x, name, e, err);
  }
  case AE_IFLNK: {
    const char *target = archive_entry_symlink(e);
    if (!target || !*target) return an_error_set(err, EINVAL, "entry \"%s\": symlink without a target", raw);
    if (symlinkat(target, parent, last) < 0) return an_error_set(err, errno, "entry \"%s\": symlink", raw);
    if (fchownat(parent, last, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
      return an_error_set(err, errno, "entry \"%s\": chown", raw);
    return 0;
  }
  }
  return an_error_set(err, EPERM, "entry \"%s\": unsupported type", raw);
}

int an_tar_extract_safe(int tar_fd, int dest_dirfd, const struct an_snapshot_opts *opts, an_error_t *err) {
  static const struct an_snapshot_opts none;
  __attribute__((cleanup(read_freep))) struct archive *a = archive_read_new();
  if (!a) return an_error_set(err, ENOMEM, "read tar");
  /* Plain tar only: no filter, so no external decompressor can be run. */
  if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
      archive_read_support_filter_none(a) != ARCHIVE_OK ||
      archive_read_open_fd(a, tar_fd, 65536) != ARCHIVE_OK)
    return an_error_set(err, EINVAL, "read tar: %s", archive_error_string(a));
  __attribute__((cleanup(extract_free))) struct extract x = {.a = a, .dest = dest_dirfd,
                                                             .o = opts ? opts : &none};
  uint64_t max_entries = x.o->max_entries ? x.o->max_entries : AN_TREE_DEFAULT_MAX_ENTRIES;
  struct archive_entry *e;
  int ar;
  while ((ar = archive_read_next_header(a, &e)) == ARCHIVE_OK || ar == ARCHIVE_WARN) {
    if (++x.entries > max_entries)
      return an_error_set(err, E2BIG, "read tar: more than %llu entries (cap)", (unsigned long long) max_entries);
    int r = extract_entry(&x, e, err);
    if (r < 0) return r;
  }
  if (ar != ARCHIVE_EOF) return an_error_set(err, EINVAL, "read tar: %s", archive_error_string(a));
  set_dir_times(&x);
  return 0;
}
