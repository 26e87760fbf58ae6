/* sandbox/artifacts.c — glob selection of workspace files with `**`,
 * host-side size and sha256, optional atomic copy-out; never follows a
 * symlink (see agentnest/artifacts.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "agentnest/artifacts.h"
#include "sandbox/files_internal.h"
#include "util/cleanup.h"
#include "util/quote.h"
#include "util/dir_list.h"
#include "util/fdcopy.h"
#include "util/inode_map.h"
#include "util/safe_path.h"

/* components of a path the walk reaches (it skips deeper directories) */
#define MAX_COMPONENTS (AN_TREE_MAX_DEPTH_SKIP + 2)

/* Split a '/'-path into components (in place), dropping "" and ".". */
static size_t split(char *s, char **comp, size_t max) {
  size_t n = 0;
  char *save = NULL;
  for (char *c = strtok_r(s, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, ".")) continue;
    if (n == max) return SIZE_MAX;
    comp[n++] = c;
  }
  return n;
}

static bool match_full(char **p, size_t np, char **s, size_t ns) {
  if (np == 0) return ns == 0;
  if (!strcmp(p[0], "**")) {
    for (size_t k = 0; k <= ns; k++)
      if (match_full(p + 1, np - 1, s + k, ns - k)) return true;
    return false;
  }
  return ns > 0 && fnmatch(p[0], s[0], 0) == 0 && match_full(p + 1, np - 1, s + 1, ns - 1);
}

/* Can some path below directory `s` match `p`? */
static bool match_prefix(char **p, size_t np, char **s, size_t ns) {
  if (ns == 0) return np > 0;
  if (np == 0) return false;
  if (!strcmp(p[0], "**")) return true;
  return fnmatch(p[0], s[0], 0) == 0 && match_prefix(p + 1, np - 1, s + 1, ns - 1);
}

int an_glob_check(const char *pattern, an_error_t *err) {
  if (!pattern || !*pattern) return an_error_set(err, EINVAL, "empty artifact pattern");
  if (pattern[0] == '/')
    return an_error_set(err, EXDEV, "artifact pattern %s: pattern escapes workspace (absolute)", pattern);
  for (const char *p = pattern; *p;) {
    size_t n = strcspn(p, "/");
    if (n == 2 && p[0] == '.' && p[1] == '.')
      return an_error_set(err, EXDEV, "artifact pattern %s: pattern escapes workspace ('..')", pattern);
    p += n;
    while (*p == '/') p++;
  }
  if (strlen(pattern) >= PATH_MAX) return an_error_set(err, ENAMETOOLONG, "artifact pattern too long");
  return 0;
}

bool an_glob_match(const char *pattern, const char *path) {
  char pb[PATH_MAX], sb[PATH_MAX];
  if (strlen(pattern) >= sizeof pb || strlen(path) >= sizeof sb) return false;
  strcpy(pb, pattern);
  strcpy(sb, path);
  char *pc[MAX_COMPONENTS], *sc[MAX_COMPONENTS];
  size_t np = split(pb, pc, MAX_COMPONENTS), ns = split(sb, sc, MAX_COMPONENTS);
  if (np == SIZE_MAX || ns == SIZE_MAX) return false;
  return match_full(pc, np, sc, ns);
}

struct glob {
  char buf[PATH_MAX];
  char *comp[MAX_COMPONENTS];
  size_t n;
};

struct collect {
  struct glob *globs;
  size_t nglobs;
  struct an_artifact_opts o;
  struct an_file_opts fo;   /* for warnings and copy-out writes */
  int to_fd;                /* host copy-out root or -1 */
  struct an_artifact_list *out;
  size_t alloc;
  uint64_t budget;          /* entries the walk may still read */
  uint64_t bytes;           /* file bytes hashed so far (logical) */
  struct an_inode_map links;/* --to: files with more names, first copy */
};

static void artifact_clear(struct an_artifact *a) {
  free(a->path);
  free(a->link_target);
}

void an_artifact_list_free(struct an_artifact_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) artifact_clear(&l->items[i]);
  free(l->items);
  l->items = NULL;
  l->n = 0;
}

static struct an_artifact *push(struct collect *c) {
  if (c->out->n == c->alloc) {
    size_t na = c->alloc ? 2 * c->alloc : 16;
    struct an_artifact *ni = realloc(c->out->items, na * sizeof *ni);
    if (!ni) return NULL;
    c->out->items = ni;
    c->alloc = na;
  }
  struct an_artifact *a = &c->out->items[c->out->n++];
  memset(a, 0, sizeof *a);
  return a;
}

static bool any_full(struct collect *c, char **s, size_t ns) {
  for (size_t i = 0; i < c->nglobs; i++)
    if (match_full(c->globs[i].comp, c->globs[i].n, s, ns)) return true;
  return false;
}

static bool any_prefix(struct collect *c, char **s, size_t ns) {
  for (size_t i = 0; i < c->nglobs; i++)
    if (match_prefix(c->globs[i].comp, c->globs[i].n, s, ns)) return true;
  return false;
}

static int skip_warn(struct collect *c, const char *path, const char *why) {
  an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: %s", AN_QUOTED(path), why);
  return 0;
}

static struct an_artifact *push_file(struct collect *c, const char *path, uint64_t size,
                                     const char *sha, mode_t mode, bool copied) {
  struct an_artifact *a = push(c);
  if (!a || !(a->path = strdup(path))) return NULL;
  a->kind = AN_ARTIFACT_FILE;
  a->size = size;
  memcpy(a->sha256, sha, sizeof a->sha256);
  a->mode = mode & 0777;
  a->copied = copied;
  return a;
}

/* Another name of a file already copied to --to: a hard link to that copy
 * (no second copy of its bytes).  1 when done, 0 to copy instead. */
static int link_artifact(struct collect *c, const struct an_inode_ent *first, const char *path,
                         mode_t mode, an_error_t *err) {
  cleanup_free char *last = NULL;
  cleanup_error an_error_t why = NULL;
  cleanup_close int parent = an_open_parent_beneath(c->to_fd, path, true, 0755, (uid_t) -1, (gid_t) -1,
                                                    &last, &why);
  if (parent < 0) return an_error_set(err, -parent, "artifacts: copy \"%s\"", AN_QUOTED(path));
  cleanup_free char *tmp = an_random_name(".an-lnk");
  if (!tmp) return an_error_set(err, ENOMEM, "artifacts");
  if (linkat(c->to_fd, first->path, parent, tmp, 0) < 0) return 0;
  if (renameat(parent, tmp, parent, last) < 0) {
    int e = errno;
    unlinkat(parent, tmp, 0);
    return an_error_set(err, e, "artifacts: copy \"%s\": rename into place", AN_QUOTED(path));
  }
  if (!push_file(c, path, first->size, first->sha256, mode, true)) return an_error_set(err, ENOMEM, "artifacts");
  return 1;
}

/* Hash (and copy out) one regular file; the fd is the host's own. */
static __attribute__((noinline)) int add_file(struct collect *c, int dfd, const char *name, const char *path, an_error_t *err) {
  struct stat st;
  cleanup_error an_error_t why = NULL;
  cleanup_close int fd = an_files_open_capped(dfd, name, path, c->o.max_bytes, &st, &why);
  if (fd == -EFBIG) return skip_warn(c, path, "file too large");
  if (fd == -ENOENT || fd == -EINVAL || fd == -EXDEV) /* removed or swapped while walking */
    return skip_warn(c, path, fd == -ENOENT ? "removed" : "no longer a regular file");
  if (fd < 0) return an_error_set(err, -fd, "artifacts: \"%s\"", AN_QUOTED(path));
  if (st.st_nlink > 1 && c->to_fd >= 0) {
    const struct an_inode_ent *first = an_inode_map_find(&c->links, st.st_dev, st.st_ino);
    if (first) {
      int r = link_artifact(c, first, path, st.st_mode, err);
      if (r != 0) return r < 0 ? r : 0;
    }
  }
  if (c->bytes + (uint64_t) st.st_size > c->o.max_total_bytes)
    return an_error_set(err, EFBIG, "artifacts: \"%s\": more than %llu bytes in all (the cap of one call)",
                        AN_QUOTED(path), (unsigned long long) c->o.max_total_bytes);
  uint64_t left = c->o.max_total_bytes - c->bytes, cap = c->o.max_bytes < left ? c->o.max_bytes : left;
  char sha[AN_SHA256_HEX_LEN];
  uint64_t size = 0;
  char shown[AN_QUOTE_NAME_SIZE + 2];
  snprintf(shown, sizeof shown, "\"%s\"", AN_QUOTED(path));
  int r;
  if (c->to_fd >= 0) {
    cleanup_free char *last = NULL;
    cleanup_close int parent = an_open_parent_beneath(c->to_fd, path, true, 0755, (uid_t) -1,
                                                      (gid_t) -1, &last, &why);
    if (parent < 0)
      return an_error_set(err, -parent, "artifacts: copy %s", shown);
    an_error_free(&why);
    r = an_files_copy_hashed_at(parent, last, shown, fd, cap, AN_HOST_COPY_MODE(st.st_mode), &c->fo, &size,
                                sha, &why);
  } else {
    r = an_copy_fd_capped(fd, -1, cap, shown, &size, sha, &why);
  }
  if (r == -EFBIG && cap == c->o.max_bytes) return skip_warn(c, path, "file too large (grew while read)");
  if (r < 0) return an_error_set(err, -r, "artifacts: %s", why->msg);
  c->bytes += size;
  if (!push_file(c, path, size, sha, st.st_mode, c->to_fd >= 0)) return an_error_set(err, ENOMEM, "artifacts");
  if (st.st_nlink > 1 && c->to_fd >= 0 && an_inode_map_add(&c->links, st.st_dev, st.st_ino, path, size, sha) < 0)
    return an_error_set(err, ENOMEM, "artifacts");
  return 0;
}

static __attribute__((noinline)) int add_symlink(struct collect *c, int dfd, const char *name, const char *path,
                       const struct stat *st, an_error_t *err) {
  char target[PATH_MAX];
  ssize_t k = readlinkat(dfd, name, target, sizeof target - 1);
  if (k < 0)
    return errno == ENOENT || errno == EINVAL ? 0
                                              : an_error_set(err, errno, "artifacts: readlink \"%s\"", AN_QUOTED(path));
  target[k] = '\0';
  if (c->o.skip_symlinks) {
    an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: symlink to \"%s\" (never followed)",
           AN_QUOTED(path), AN_QUOTED(target));
    return 0;
  }
  struct an_artifact *a = push(c);
  if (!a) return an_error_set(err, ENOMEM, "artifacts");
  a->path = strdup(path);
  a->link_target = strdup(target);
  if (!a->path || !a->link_target) return an_error_set(err, ENOMEM, "artifacts");
  a->kind = AN_ARTIFACT_SYMLINK;
  a->mode = st->st_mode & 0777;
  return 0;
}

/* `comp[0..depth)` are the components of the directory `dfd` (its path is
 * `prefix`, "" for the workspace root).  Names are read sorted and bounded
 * (util/dir_list: the entry cap bounds memory); directories deeper than
 * AN_TREE_MAX_DEPTH_SKIP are skipped with a warning. */
/* Out of line, so that quoting buffers and PATH_MAX arrays are not in the
 * frames of the recursive walk (256 levels must fit any stack). */
static __attribute__((noinline, cold)) void path_warn(const struct collect *c, const char *what, const char *a,
                                                       const char *b, const char *why) {
  an_warnf(c->fo.warn, c->fo.warn_data, "%s \"%s%s%s\" skipped: %s", what, AN_QUOTED(a), b ? "/" : "",
           b ? AN_QUOTED(b) : "", why);
}

static __attribute__((noinline, cold)) int path_err(an_error_t *err, int e, const char *what, const char *path) {
  return an_error_set(err, e, "%s \"%s\"", what, AN_QUOTED(path));
}

static __attribute__((noinline)) int list_dir(struct collect *c, int dfd, const char *prefix,
                                              struct an_dir_list *names, an_error_t *err) {
  char shown[AN_QUOTE_NAME_SIZE + 2];
  snprintf(shown, sizeof shown, "\"%s\"", *prefix ? AN_QUOTED(prefix) : ".");
  int r = an_dir_list_read(dfd, shown, &c->budget, c->o.max_entries, names, err);
  return r < 0 ? an_error_prefix(err, "artifacts") : 0;
}

#define STR2(x) #x
#define STR(x) STR2(x)

static int walk(struct collect *c, int dfd, const char *prefix, char **comp, size_t depth, an_error_t *err) {
  struct an_dir_list names;
  int r = list_dir(c, dfd, prefix, &names, err);
  if (r < 0) return r;
  cleanup_free char *path = malloc(PATH_MAX);
  if (!path) r = an_error_set(err, ENOMEM, "artifacts");
  for (size_t i = 0; i < names.n && r == 0; i++) {
    char *name = names.names[i];
    if (snprintf(path, PATH_MAX, "%s%s%s", prefix, *prefix ? "/" : "", name) >= PATH_MAX) {
      path_warn(c, "artifacts:", prefix, name, "path longer than PATH_MAX");
      continue;
    }
    comp[depth] = name;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) r = path_err(err, errno, "artifacts: stat", path);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!any_prefix(c, comp, depth + 1)) continue;
      if (depth + 1 > AN_TREE_MAX_DEPTH_SKIP) {
        path_warn(c, "artifacts: directory", path, NULL,
                  "nested deeper than " STR(AN_TREE_MAX_DEPTH_SKIP) " directories");
        continue;
      }
      cleanup_close int sub = an_openat_beneath(dfd, name, O_RDONLY | O_DIRECTORY, 0, NULL);
      if (sub < 0) { /* swapped for a symlink or removed meanwhile: not followed */
        path_warn(c, "artifacts: directory", path, NULL,
                  sub == -EXDEV ? "a symlink (never followed)" : "gone or unreadable");
        continue;
      }
      r = walk(c, sub, path, comp, depth + 1, err);
    } else if (!any_full(c, comp, depth + 1)) {
      continue;
    } else if (S_ISREG(st.st_mode)) {
      r = add_file(c, dfd, name, path, err);
    } else if (S_ISLNK(st.st_mode)) {
      r = add_symlink(c, dfd, name, path, &st, err);
    } else {
      path_warn(c, "artifact", path, NULL, "not a regular file");
    }
  }
  an_dir_list_free(&names);
  return r;
}

int an_artifacts_collect(int ws_dirfd, const char *const *globs, size_t nglobs,
                         const struct an_artifact_opts *opts, struct an_artifact_list *out,
                         an_error_t *err) {
  static const struct an_artifact_opts none;
  static const char *const all[] = {"**"};
  memset(out, 0, sizeof *out);
  if (nglobs == 0) {
    globs = all;
    nglobs = 1;
  }
  cleanup_free struct glob *g = calloc(nglobs, sizeof *g);
  if (!g) return an_error_set(err, ENOMEM, "artifacts");
  for (size_t i = 0; i < nglobs; i++) {
    int r = an_glob_check(globs[i], err);
    if (r < 0) return r;
    strcpy(g[i].buf, globs[i]);
    g[i].n = split(g[i].buf, g[i].comp, MAX_COMPONENTS);
    if (g[i].n == SIZE_MAX) return an_error_set(err, EINVAL, "artifact pattern %s: too many components", globs[i]);
  }
  struct collect c = {.globs = g, .nglobs = nglobs, .o = opts ? *opts : none, .to_fd = -1, .out = out};
  if (!c.o.max_bytes) c.o.max_bytes = AN_FILE_DEFAULT_MAX_BYTES;
  if (!c.o.max_total_bytes) c.o.max_total_bytes = AN_TREE_DEFAULT_MAX_BYTES;
  if (!c.o.max_entries) c.o.max_entries = AN_TREE_DEFAULT_MAX_ENTRIES;
  c.budget = c.o.max_entries;
  c.fo.warn = c.o.warn;
  c.fo.warn_data = c.o.warn_data;
  cleanup_close int to_fd = -1;
  if (c.o.to_dir) {
    if (mkdir(c.o.to_dir, 0755) < 0 && errno != EEXIST)
      return an_error_set(err, errno, "artifacts: mkdir %s", c.o.to_dir);
    to_fd = open(c.o.to_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (to_fd < 0) return an_error_set(err, errno, "artifacts: open %s", c.o.to_dir);
    c.to_fd = to_fd;
  }
  cleanup_close int root = an_openat_beneath(ws_dirfd, ".", O_RDONLY | O_DIRECTORY, 0, err);
  if (root < 0) return an_error_prefix(err, "artifacts");
  char *comp[MAX_COMPONENTS];
  int r = walk(&c, root, "", comp, 0, err);
  an_inode_map_free(&c.links);
  if (r == 0 && to_fd >= 0 && syncfs(to_fd) < 0) r = an_error_set(err, errno, "artifacts: sync %s", c.o.to_dir);
  if (r < 0) {
    an_artifact_list_free(out);
    return r;
  }
  return 0;
}
