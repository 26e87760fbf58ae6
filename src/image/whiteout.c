/* image/whiteout.c — OCI image-spec layer.md "Whiteouts": ".wh.NAME" hides
 * NAME of the lower layers, ".wh..wh..opq" hides every lower-layer entry of
 * its directory.  Also the set of paths written by the current layer (a
 * whiteout never removes what its own layer created, whatever the order).
 * Whiteout parents are opened with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS so
 * that deletion never follows a symlink. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "image/image_internal.h"
#include "util/cleanup.h"
#include "util/quote.h"

/* ---- a string hash set (open addressing, FNV-1a) ---- */
struct an_path_set {
  char **slots;
  size_t cap, n;
};

static size_t fnv(const char *s) {
  size_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char) *s) * 1099511628211ULL;
  return h;
}

struct an_path_set *an_path_set_new(void) {
  struct an_path_set *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cap = 1024;
  s->slots = calloc(s->cap, sizeof *s->slots);
  if (!s->slots) { free(s); return NULL; }
  return s;
}

void an_path_set_free(struct an_path_set *s) {
  if (!s) return;
  for (size_t i = 0; i < s->cap; i++) free(s->slots[i]);
  free(s->slots);
  free(s);
}

static void insert_slot(char **slots, size_t cap, char *p) {
  size_t i = fnv(p) & (cap - 1);
  while (slots[i]) i = (i + 1) & (cap - 1);
  slots[i] = p;
}

int an_path_set_add(struct an_path_set *s, const char *path) {
  if (an_path_set_has(s, path)) return 0;
  if ((s->n + 1) * 2 > s->cap) {
    size_t nc = s->cap * 2;
    char **ns = calloc(nc, sizeof *ns);
    if (!ns) return -ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
      if (s->slots[i]) insert_slot(ns, nc, s->slots[i]);
    free(s->slots);
    s->slots = ns;
    s->cap = nc;
  }
  char *p = strdup(path);
  if (!p) return -ENOMEM;
  insert_slot(s->slots, s->cap, p);
  s->n++;
  return 0;
}

bool an_path_set_has(const struct an_path_set *s, const char *path) {
  if (!s) return false;
  size_t i = fnv(path) & (s->cap - 1);
  while (s->slots[i]) {
    if (!strcmp(s->slots[i], path)) return true;
    i = (i + 1) & (s->cap - 1);
  }
  return false;
}

/* ---- whiteouts ---- */
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"

bool an_whiteout_is(const char *base) { return !strncmp(base, WH_PREFIX, 4); }

struct opaque_keep {
  const struct an_path_set *same_layer;
  const char *parent;
};

static bool keep_same_layer(const char *name, void *data) {
  struct opaque_keep *k = data;
  char buf[8192];
  if (snprintf(buf, sizeof buf, "%s%s%s", k->parent, *k->parent ? "/" : "", name) >= (int) sizeof buf)
    return false;
  return an_path_set_has(k->same_layer, buf);
}

static int refuse(an_error_t *err, const char *path, const char *why) {
  return an_error_set(err, EINVAL, "entry \"%s\": %s", AN_QUOTED(path), why);
}

int an_whiteout_apply(int rootfd, const char *path, const struct an_path_set *same_layer,
                      const struct an_unpack_opts *o, an_error_t *err) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  cleanup_free char *parent = slash ? strndup(path, (size_t) (slash - path)) : strdup("");
  if (!parent) return an_error_set(err, ENOMEM, "whiteout");
  const char *target = base + strlen(WH_PREFIX);
  bool opaque = !strcmp(base, WH_OPAQUE);

  if (!opaque && !strncmp(target, WH_PREFIX, 4)) {
    if (o->progress) {
      char msg[AN_QUOTE_NAME_SIZE + 128];
      snprintf(msg, sizeof msg, "%s: entry \"%s\": unknown .wh..wh. entry skipped",
               o->label ? o->label : "layer", AN_QUOTED(path));
      struct an_image_progress p = {.event = AN_IMAGE_EVENT_WARNING, .message = msg};
      o->progress(&p, o->userdata);
    }
    return 0;
  }
  if (!opaque && (!*target || !strcmp(target, ".") || !strcmp(target, "..")))
    return refuse(err, path, *target ? "whiteout of \".\" or \"..\" refused"
                                     : "bare whiteout \".wh.\" names no file");

  int pfd = an_openat2(rootfd, *parent ? parent : ".", O_PATH | O_DIRECTORY, 0,
                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (pfd == -ENOENT || pfd == -ENOTDIR) return 0;   /* nothing below to hide */
  if (pfd == -ELOOP || pfd == -EXDEV)
    return refuse(err, path, "whiteout under a symlinked directory refused");
  if (pfd < 0) return an_error_set(err, -pfd, "entry \"%s\": open whiteout parent", path);
  cleanup_close int dirfd = pfd;

  if (opaque) {
    struct opaque_keep k = {same_layer, parent};
    int r = an_empty_dir_beneath(dirfd, keep_same_layer, &k, err);
    return r < 0 ? an_error_prefix(err, "entry \"%s\": opaque whiteout", path) : 0;
  }
  char full[8192];
  snprintf(full, sizeof full, "%s%s%s", parent, *parent ? "/" : "", target);
  if (an_path_set_has(same_layer, full)) return 0;
  int r = an_remove_tree_beneath(dirfd, target, err);
  return r < 0 ? an_error_prefix(err, "entry \"%s\": whiteout", path) : 0;
}
