/* util/inode_map.h — the (st_dev, st_ino) of files already copied, mapped to
 * where their first copy went, so that the other names of a hard-linked
 * file become hard links of that copy instead of more copies (internal).
 * Used by the workspace copy-out (sandbox/files.c) and artifacts --to
 * (sandbox/artifacts.c).  A map owns its entries; not thread-safe (one per
 * copy). */
#ifndef AN_UTIL_INODE_MAP_H
#define AN_UTIL_INODE_MAP_H

#include <stdint.h>
#include <sys/types.h>

struct an_inode_ent {
  dev_t dev;
  ino_t ino;
  uint64_t size;     /* bytes copied (logical) */
  char sha256[65];   /* lowercase hex, "" when not hashed */
  char path[];       /* where the first copy went (relative to the copy's root) */
};

struct an_inode_map {
  void *root;        /* tsearch(3) tree of struct an_inode_ent */
  uint64_t n;
};

/* The entry of (dev, ino), or NULL.  Borrowed: valid until an_inode_map_free. */
const struct an_inode_ent *an_inode_map_find(const struct an_inode_map *m, dev_t dev, ino_t ino);

/* Remember (dev, ino) -> path, size, sha256 (may be NULL).  Returns 0, or
 * -ENOMEM; an inode already there keeps its first entry. */
int an_inode_map_add(struct an_inode_map *m, dev_t dev, ino_t ino, const char *path, uint64_t size,
                     const char *sha256);

/* Free every entry (the map is then empty and reusable). */
void an_inode_map_free(struct an_inode_map *m);

#endif
