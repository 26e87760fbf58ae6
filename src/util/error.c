/* util/error.c — an_error_t construction and release (see agentnest/error.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/error.h"

static struct an_error oom_error = {ENOMEM, (char *) "out of memory"};

const char *an_errno_name(int e) {
  const char *n = strerrorname_np(e);
  return n ? n : "E?";
}

int an_error_setv(an_error_t *err, int errnum, const char *fmt, va_list ap) {
  int ret = errnum ? -errnum : -EIO;
  if (!err || *err) return ret;
  char *body = NULL, *msg = NULL;
  if (vasprintf(&body, fmt, ap) < 0) { *err = &oom_error; return ret; }
  if (errnum) {
    if (asprintf(&msg, "%s: %s", body, an_errno_name(errnum)) < 0) msg = NULL;
    free(body);
  } else
    msg = body;
  struct an_error *e = msg ? malloc(sizeof *e) : NULL;
  if (!e) { free(msg); *err = &oom_error; return ret; }
  e->errnum = errnum;
  e->msg = msg;
  *err = e;
  return ret;
}

int an_error_set(an_error_t *err, int errnum, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = an_error_setv(err, errnum, fmt, ap);
  va_end(ap);
  return r;
}

int an_error_prefix(an_error_t *err, const char *fmt, ...) {
  if (!err) return -EIO;
  char *ctx = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&ctx, fmt, ap);
  va_end(ap);
  if (n < 0) return *err ? -(*err)->errnum : -ENOMEM;
  if (!*err) {
    an_error_set(err, 0, "%s", ctx);
    free(ctx);
    return -EIO;
  }
  int ret = (*err)->errnum ? -(*err)->errnum : -EIO;
  if (*err == &oom_error) { free(ctx); return ret; }
  char *msg = NULL;
  if (asprintf(&msg, "%s: %s", ctx, (*err)->msg) >= 0) {
    free((*err)->msg);
    (*err)->msg = msg;
  }
  free(ctx);
  return ret;
}

void an_error_free(an_error_t *err) {
  if (!err || !*err) return;
  if (*err != &oom_error) {
    free((*err)->msg);
    free(*err);
  }
  *err = NULL;
}
