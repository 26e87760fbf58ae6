/* util/dir_list.c — bounded, sorted directory listing (see util/dir_list.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/cleanup.h"
#include "util/dir_list.h"

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *) a, *(char *const *) b);
}

void an_dir_list_free(struct an_dir_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->n; i++) free(l->names[i]);
  free(l->names);
  l->names = NULL;
  l->n = 0;
}

int an_dir_list_read(int dfd, const char *display, uint64_t *budget, uint64_t cap,
                     struct an_dir_list *out, an_error_t *err) {
  out->names = NULL;
  out->n = 0;
  int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return an_error_set(err, errno, "read directory %s: dup", display);
  cleanup_closedir DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return an_error_set(err, errno, "read directory %s", display);
  }
  rewinddir(d);
  size_t alloc = 0;
  struct dirent *de;
  int r = 0;
  while ((errno = 0, de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    if (*budget == 0) {
      r = an_error_set(err, E2BIG, "%s: more than %llu entries (the cap of one walk)", display,
                       (unsigned long long) cap);
      break;
    }
    (*budget)--;
    if (out->n == alloc) {
      size_t na = alloc ? alloc * 2 : 32;
      char **nn = realloc(out->names, na * sizeof *nn);
      if (!nn) { r = an_error_set(err, ENOMEM, "read directory %s", display); break; }
      out->names = nn;
      alloc = na;
    }
    if (!(out->names[out->n] = strdup(de->d_name))) {
      r = an_error_set(err, ENOMEM, "read directory %s", display);
      break;
    }
    out->n++;
  }
  if (r == 0 && errno) r = an_error_set(err, errno, "read directory %s", display);
  if (r < 0) {
    an_dir_list_free(out);
    return r;
  }
  if (out->n) qsort(out->names, out->n, sizeof *out->names, by_name);
  return 0;
}
