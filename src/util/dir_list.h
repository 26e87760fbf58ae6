/* util/dir_list.h — the names of one directory, sorted, with a bound on how
 * many a whole walk may read (internal).  Used by the walks whose output
 * order must not depend on the filesystem (snapshot tar, artifact list):
 * scandir(3) would hold every name of a directory of a million entries. */
#ifndef AN_UTIL_DIR_LIST_H
#define AN_UTIL_DIR_LIST_H

#include <stddef.h>
#include <stdint.h>
#include "agentnest/error.h"

struct an_dir_list {
  char **names;   /* malloc'd names, sorted by strcmp (bytes, not locale) */
  size_t n;
};

/* Read every entry of the directory fd `dfd` but "." and ".." (dfd itself
 * is not moved: a dup is read).  Each name read takes one from *budget;
 * when it would go below zero the read stops with -E2BIG "<display>: more
 * than <cap> entries" (cap = the budget the walk started with, `cap`).
 * So memory stays bounded by the walk's entry cap.  Returns 0 (fill *out;
 * free with an_dir_list_free) or a negative errno (readdir/dup errors,
 * -ENOMEM); `display` names the directory in messages (caller quotes it). */
int an_dir_list_read(int dfd, const char *display, uint64_t *budget, uint64_t cap,
                     struct an_dir_list *out, an_error_t *err);

/* Free the names (NULL-safe; the list is then empty). */
void an_dir_list_free(struct an_dir_list *l);

#endif
