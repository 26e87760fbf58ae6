/* agentnest/error.h — the one error type every fallible libagentnest call uses.
 *
 * Convention (after crun's libcrun_error_t): a fallible function takes a last
 * parameter `an_error_t *err`, returns a negative errno value (-EINVAL, -ENOENT,
 * ...) on failure and fills *err with a heap-allocated error that carries that
 * errno and a message naming the object and the cause, e.g.
 *   "mount proc on /run/x/rootfs/proc: EPERM".
 * On success it returns >= 0 and leaves *err untouched (NULL).
 * The caller owns *err and releases it with an_error_free().
 *
 * Thread-safety: no global state but the constant out-of-memory error;
 * every function may be called from any thread, each on its own an_error_t.
 * Standard: errno values are Linux's (errno(3)); their names are glibc's
 * strerrorname_np(3).
 */
#ifndef AGENTNEST_ERROR_H
#define AGENTNEST_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

struct an_error {
  int errnum;   /* positive errno value (EINVAL, ENOENT, ...) or 0 if none applies */
  char *msg;    /* NUL-terminated message, owned by the error */
};
typedef struct an_error *an_error_t;

/* Make a new error with a printf-style message.  If errnum != 0, ": <ERRNAME>"
 * (the symbolic errno name, e.g. "EPERM") is appended to the message.
 * Stores it in *err (if err is non-NULL and *err is NULL; an existing error is
 * kept, so the first cause wins) and returns -errnum (or -EIO when errnum is 0).
 * Never fails: on allocation failure *err points to a static "out of memory"
 * error that an_error_free() knows not to free. */
int an_error_set(an_error_t *err, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same, with a va_list (returns as an_error_set). */
int an_error_setv(an_error_t *err, int errnum, const char *fmt, va_list ap);

/* Prepend context to an existing error: "<context>: <old message>".
 * Returns -errnum of the error (or -EIO if *err is NULL, in which case an
 * error with just the context is made). */
int an_error_prefix(an_error_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Release an error (NULL allowed) and set *err to NULL. */
void an_error_free(an_error_t *err);

/* Symbolic name of an errno value ("EPERM"); "E?" for unknown values.
 * Returns a pointer to static storage (thread-safe: never written). */
const char *an_errno_name(int errnum);

#ifdef __cplusplus
}
#endif
#endif
