/* sandbox/ctx.c — the explicit library context (agentnest/ctx.h): a copy of
 * the caller's paths and callbacks, immutable once made, and the defaults a
 * NULL context means.  Reads no environment variable (the front ends do). */
#include "agentnest/ctx.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/sandbox_opts.h"
#include "util/cleanup.h"

#ifndef AN_LIBEXECDIR
#define AN_LIBEXECDIR "/usr/local/libexec/agentnest"
#endif

static int search_init(char **path, an_error_t *err);

struct an_ctx {
  char *store_root, *init_path, *profiles_dir, *idrange_root;
  an_secret_env_fn secret_env;
  void *secret_env_data;
  an_warn_fn warn;
  void *warn_data;
  an_log_fn log;
  void *log_data;
};

static int copy_path(const char *field, const char *in, char **out, an_error_t *err) {
  if (!in) return 0;
  if (!*in || in[0] != '/')
    return an_error_set(err, EINVAL, "context: %s \"%s\" is not an absolute path", field, in);
  if (strlen(in) >= PATH_MAX)
    return an_error_set(err, EINVAL, "context: %s longer than %d bytes", field, PATH_MAX - 1);
  return (*out = strdup(in)) ? 0 : an_error_set(err, ENOMEM, "context: %s", field);
}

int an_ctx_new(const struct an_ctx_config *config, struct an_ctx **out, an_error_t *err) {
  static const struct an_ctx_config none;
  if (!config) config = &none;
  struct an_ctx *c = calloc(1, sizeof *c);
  if (!c) return an_error_set(err, ENOMEM, "context");
  int r;
  if ((r = copy_path("store root", config->store_root, &c->store_root, err)) < 0 ||
      (r = copy_path("init path", config->init_path, &c->init_path, err)) < 0 ||
      (r = copy_path("profiles directory", config->profiles_dir, &c->profiles_dir, err)) < 0 ||
      (r = copy_path("id range root", config->idrange_root, &c->idrange_root, err)) < 0) {
    an_ctx_free(c);
    return r;
  }
  c->secret_env = config->secret_env;
  c->secret_env_data = config->secret_env_data;
  c->warn = config->warn;
  c->warn_data = config->warn_data;
  c->log = config->log;
  c->log_data = config->log_data;
  *out = c;
  return 0;
}

void an_ctx_free(struct an_ctx *ctx) {
  if (!ctx) return;
  free(ctx->store_root);
  free(ctx->init_path);
  free(ctx->profiles_dir);
  free(ctx->idrange_root);
  free(ctx);
}

void an_ctx_freep(struct an_ctx **ctx) {
  if (ctx) an_ctx_free(*ctx);
}

const char *an_ctx_store_root(const struct an_ctx *ctx) {
  return ctx ? ctx->store_root : NULL;
}

const char *an_ctx_profiles_dir(const struct an_ctx *ctx) {
  return ctx && ctx->profiles_dir ? ctx->profiles_dir : AN_DATADIR "/profiles";
}

const char *an_ctx_idrange_root(const struct an_ctx *ctx) {
  return ctx && ctx->idrange_root ? ctx->idrange_root : AN_IDRANGE_ROOT_DEFAULT;
}

int an_ctx_init_path(const struct an_ctx *ctx, char **path, an_error_t *err) {
  if (ctx && ctx->init_path) {
    if (access(ctx->init_path, X_OK) < 0) return an_error_set(err, errno, "agentnest-init %s", ctx->init_path);
    return (*path = strdup(ctx->init_path)) ? 0 : an_error_set(err, ENOMEM, "agentnest-init path");
  }
  int r = search_init(path, err);
  if (r == 0) an_ctx_log(ctx, AN_LOG_DEBUG, "agentnest-init: %s (found; the context names none)", *path);
  return r;
}

static int search_init(char **path, an_error_t *err) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) {
      *slash = '\0';
      char cand[PATH_MAX + 32];
      snprintf(cand, sizeof cand, "%s/agentnest-init", exe);
      if (access(cand, X_OK) == 0) return (*path = strdup(cand)) ? 0 : an_error_set(err, ENOMEM, "path");
    }
  }
  if (access(AN_LIBEXECDIR "/agentnest-init", X_OK) == 0)
    return (*path = strdup(AN_LIBEXECDIR "/agentnest-init")) ? 0 : an_error_set(err, ENOMEM, "path");
  return an_error_set(err, ENOENT,
                      "agentnest-init not found (the context's init path, next to the program, "
                      AN_LIBEXECDIR ")");
}

const char *an_ctx_secret_env(const struct an_ctx *ctx, const char *name) {
  return ctx && ctx->secret_env ? ctx->secret_env(ctx->secret_env_data, name) : NULL;
}

bool an_ctx_has_secret_env(const struct an_ctx *ctx) {
  return ctx && ctx->secret_env;
}

/* fmt and ap as a malloc'ed string; NULL when out of memory */
static char *vformat(const char *fmt, va_list ap) {
  char *msg = NULL;
  return vasprintf(&msg, fmt, ap) < 0 ? NULL : msg;
}

void an_ctx_warn(const struct an_ctx *ctx, const char *fmt, ...) {
  if (!ctx || !ctx->warn) return;
  va_list ap;
  va_start(ap, fmt);
  cleanup_free char *msg = vformat(fmt, ap);
  va_end(ap);
  if (msg) ctx->warn(ctx->warn_data, msg);
}

void an_ctx_log(const struct an_ctx *ctx, int level, const char *fmt, ...) {
  if (!ctx || !ctx->log) return;
  va_list ap;
  va_start(ap, fmt);
  cleanup_free char *msg = vformat(fmt, ap);
  va_end(ap);
  if (msg) ctx->log(ctx->log_data, level, msg);
}
