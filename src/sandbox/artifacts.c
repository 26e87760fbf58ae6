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
#include "util/fdcopy.h"
#include "util/safe_path.h"

#define MAX_COMPONENTS 128

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

/* Hash (and copy out) one regular file; the fd is the host's own. */
static int add_file(struct collect *c, int dfd, const char *name, const char *path, an_error_t *err) {
  struct stat st;
  cleanup_error an_error_t why = NULL;
  cleanup_close int fd = an_files_open_capped(dfd, name, path, c->o.max_bytes, &st, &why);
  if (fd < 0) {
    if (fd == -EFBIG || fd == -ENOENT || fd == -EINVAL || fd == -EXDEV) {
      /* too large, removed, or swapped for something else while walking */
      an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: %s", AN_QUOTED(path), why->msg);
      return 0;
    }
    return an_error_set(err, -fd, "artifacts: %s", why->msg);
  }
  char sha[AN_SHA256_HEX_LEN];
  uint64_t size = 0;
  bool copied = false;
  if (c->to_fd >= 0) {
    cleanup_free char *last = NULL;
    cleanup_close int parent = an_open_parent_beneath(c->to_fd, path, true, 0755, (uid_t) -1,
                                                      (gid_t) -1, &last, err);
    if (parent < 0) return an_error_prefix(err, "artifacts: copy %s", path);
    int r = an_files_copy_hashed_at(parent, last, path, fd, c->o.max_bytes, AN_HOST_COPY_MODE(st.st_mode), &c->fo,
                                    &size, sha, &why);
    if (r == -EFBIG) {
      an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: %s", AN_QUOTED(path), why->msg);
      return 0;
    }
    if (r < 0) return an_error_set(err, -r, "artifacts: %s", why->msg);
    copied = true;
  } else {
    int r = an_copy_fd_capped(fd, -1, c->o.max_bytes, path, &size, sha, &why);
    if (r == -EFBIG) {
      an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: %s", AN_QUOTED(path), why->msg);
      return 0;
    }
    if (r < 0) return an_error_set(err, -r, "artifacts: %s", why->msg);
  }
  struct an_artifact *a = push(c);
  if (!a) return an_error_set(err, ENOMEM, "artifacts");
  a->path = strdup(path);
  if (!a->path) return an_error_set(err, ENOMEM, "artifacts");
  a->kind = AN_ARTIFACT_FILE;
  a->size = size;
  memcpy(a->sha256, sha, sizeof a->sha256);
  a->mode = st.st_mode & 0777;
  a->copied = copied;
  return 0;
}

static int add_symlink(struct collect *c, int dfd, const char *name, const char *path,
                       const struct stat *st, an_error_t *err) {
  char target[PATH_MAX];
  ssize_t k = readlinkat(dfd, name, target, sizeof target - 1);
  if (k < 0) return errno == ENOENT || errno == EINVAL ? 0 : an_error_set(err, errno, "artifacts: readlink %s", path);
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
 * `prefix`, "" for the workspace root). */
static int walk(struct collect *c, int dfd, const char *prefix, char **comp, size_t depth, an_error_t *err) {
  if (depth >= MAX_COMPONENTS - 1 || depth > AN_TREE_MAX_DEPTH)
    return an_error_set(err, ELOOP, "artifacts: %s: nesting too deep", prefix);
  struct dirent **names = NULL;
  int n = scandirat(dfd, ".", &names, NULL, alphasort);
  if (n < 0) return an_error_set(err, errno, "artifacts: read directory %s", *prefix ? prefix : ".");
  int r = 0;
  for (int i = 0; i < n && r == 0; i++) {
    char *name = names[i]->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "/" : "", name) >= (int) sizeof path) {
      r = an_error_set(err, ENAMETOOLONG, "artifacts: %s/%s", prefix, name);
      break;
    }
    comp[depth] = name;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      if (errno != ENOENT) r = an_error_set(err, errno, "artifacts: stat %s", path);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      if (!any_prefix(c, comp, depth + 1)) continue;
      cleanup_error an_error_t why = NULL;
      cleanup_close int sub = an_openat_beneath(dfd, name, O_RDONLY | O_DIRECTORY, 0, &why);
      if (sub < 0) { /* swapped for a symlink or removed meanwhile: not followed */
        an_warnf(c->fo.warn, c->fo.warn_data, "artifacts: directory \"%s\" skipped: %s", AN_QUOTED(path),
               why->msg);
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
      an_warnf(c->fo.warn, c->fo.warn_data, "artifact \"%s\" skipped: not a regular file", AN_QUOTED(path));
    }
  }
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
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
  if (r == 0 && to_fd >= 0 && syncfs(to_fd) < 0) r = an_error_set(err, errno, "artifacts: sync %s", c.o.to_dir);
  if (r < 0) {
    an_artifact_list_free(out);
    return r;
  }
  return 0;
}
