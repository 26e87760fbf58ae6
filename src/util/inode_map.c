/* util/inode_map.c — (dev, ino) -> first copy, a tsearch(3) tree (see
 * util/inode_map.h). */
#include <errno.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include "util/inode_map.h"

static int cmp(const void *a, const void *b) {
  const struct an_inode_ent *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
  return 0;
}

const struct an_inode_ent *an_inode_map_find(const struct an_inode_map *m, dev_t dev, ino_t ino) {
  struct an_inode_ent key = {.dev = dev, .ino = ino};
  void *const *hit = tfind(&key, &m->root, cmp);
  return hit ? *(const struct an_inode_ent *const *) hit : NULL;
}

int an_inode_map_add(struct an_inode_map *m, dev_t dev, ino_t ino, const char *path, uint64_t size,
                     const char *sha256) {
  size_t len = strlen(path);
  struct an_inode_ent *e = calloc(1, sizeof *e + len + 1);
  if (!e) return -ENOMEM;
  e->dev = dev;
  e->ino = ino;
  e->size = size;
  if (sha256) memcpy(e->sha256, sha256, sizeof e->sha256 - 1);
  memcpy(e->path, path, len + 1);
  void *slot = tsearch(e, &m->root, cmp);
  if (!slot) {
    free(e);
    return -ENOMEM;
  }
  if (*(struct an_inode_ent **) slot != e) free(e); /* already there */
  else m->n++;
  return 0;
}

void an_inode_map_free(struct an_inode_map *m) {
  tdestroy(m->root, free);
  m->root = NULL;
  m->n = 0;
}
