/* util/cleanup.h — cleanup attributes for resources (internal).
 * Every resource-owning local is declared with one of these so that early
 * returns cannot leak; hand ownership on with an_steal()/an_steal_fd(). */
#ifndef AN_UTIL_CLEANUP_H
#define AN_UTIL_CLEANUP_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <dirent.h>
#include <errno.h>
#include "agentnest/error.h"

static inline void an_cleanup_freep(void *p) { free(*(void **)p); }
static inline void an_cleanup_closep(int *fd) {
  if (*fd >= 0) { int saved = errno; close(*fd); errno = saved; }
}
static inline void an_cleanup_fclosep(FILE **f) { if (*f) fclose(*f); }
static inline void an_cleanup_closedirp(DIR **d) { if (*d) closedir(*d); }
static inline void an_cleanup_errorp(an_error_t *e) { an_error_free(e); }
/* Free a NULL-terminated vector of malloc'd strings (NULL allowed). */
static inline void an_strv_free(char **v) {
  if (v) { for (char **s = v; *s; s++) free(*s); free(v); }
}
static inline void an_cleanup_strvp(char ***v) { an_strv_free(*v); }

#define cleanup_free     __attribute__((cleanup(an_cleanup_freep)))
#define cleanup_close    __attribute__((cleanup(an_cleanup_closep)))
#define cleanup_fclose   __attribute__((cleanup(an_cleanup_fclosep)))
#define cleanup_closedir __attribute__((cleanup(an_cleanup_closedirp)))
#define cleanup_error    __attribute__((cleanup(an_cleanup_errorp)))
#define cleanup_strv     __attribute__((cleanup(an_cleanup_strvp)))

/* Take ownership of a pointer: returns it and NULLs the source. */
#define an_steal(pp) ({ __typeof__(*(pp)) an__t = *(pp); *(pp) = NULL; an__t; })
/* Take ownership of an fd: returns it and sets the source to -1. */
static inline int an_steal_fd(int *fd) { int t = *fd; *fd = -1; return t; }

#endif
