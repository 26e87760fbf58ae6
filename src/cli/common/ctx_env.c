/* cli/common/ctx_env.c — see ctx_env.h. */
#include "cli/common/ctx_env.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* The variable's value, made absolute against the cwd when it is relative
 * (the library takes absolute paths only); NULL when unset or empty. */
static const char *env_path(const char *name, char buf[PATH_MAX]) {
  const char *v = getenv(name);
  if (!v || !*v) return NULL;
  if (v[0] == '/' || !realpath(v, buf)) return v;
  return buf;
}

static const char *secret_from_env(void *data, const char *name) {
  (void) data;
  return getenv(name);
}

/* A variable that is set must name what it is for: refused here, naming
 * the variable (the library only sees a path). */
static int check_env(const char *name, const char *path, bool want_dir, an_error_t *err) {
  struct stat st;
  if (!path) return 0;
  if (stat(path, &st) < 0) return an_error_set(err, errno, "$%s=%s", name, path);
  if (want_dir && !S_ISDIR(st.st_mode)) return an_error_set(err, ENOTDIR, "$%s=%s: not a directory", name, path);
  if (!want_dir && (!S_ISREG(st.st_mode) || access(path, X_OK) < 0))
    return an_error_set(err, EACCES, "$%s=%s: not an executable file", name, path);
  return 0;
}

int an_cli_ctx_from_env(const char *root, bool secret_env, struct an_ctx **out, an_error_t *err) {
  char init[PATH_MAX], prof[PATH_MAX], ids[PATH_MAX];
  const char *init_path = env_path("AGENTNEST_INIT", init), *profiles = env_path("AGENTNEST_PROFILES", prof);
  int r = check_env("AGENTNEST_INIT", init_path, false, err);
  if (r == 0) r = check_env("AGENTNEST_PROFILES", profiles, true, err);
  if (r < 0) return r;
  struct an_ctx_config c = {
    .store_root = root,
    .init_path = init_path,
    .profiles_dir = profiles,
    .idrange_root = env_path("AGENTNEST_IDRANGE_ROOT", ids),
    .secret_env = secret_env ? secret_from_env : NULL,
  };
  r = an_ctx_new(&c, out, err);
  if (r < 0) an_error_prefix(err, "environment ($AGENTNEST_INIT, $AGENTNEST_PROFILES, $AGENTNEST_IDRANGE_ROOT)");
  return r;
}
