/* tests/unit/ctx_test.c — the explicit library context (agentnest/ctx.h):
 * what an_ctx_new accepts, that the library follows the context and not the
 * environment variables the front ends read (set here to bogus values
 * in-process), that a secret named without a value needs the context's
 * secret_env (the servers give none), and that no getenv(3) is left in the
 * library's sources (src/ outside src/cli/). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/ctx.h"
#include "agentnest/sandbox.h"
#include "agentnest/sandbox_opts.h"
#include "util.h"

static void bogus_env(void) {
  setenv("AGENTNEST_INIT", "/nonexistent/bogus-init", 1);
  setenv("AGENTNEST_PROFILES", "/nonexistent/bogus-profiles", 1);
  setenv("AGENTNEST_IDRANGE_ROOT", "/nonexistent/bogus-idranges", 1);
}

TestSuite(ctx, .init = bogus_env);

Test(ctx, new_copies_paths_and_refuses_relative_or_empty_ones) {
  an_error_t err = NULL;
  struct an_ctx *c = NULL;
  char dir[] = "/tmp/an-ctx-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char *copy = strdup(dir);
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.profiles_dir = copy, .store_root = copy}, &c, &err), 0);
  memset(copy, 'x', strlen(copy));   /* the context owns its copy */
  free(copy);
  cr_assert_str_eq(an_ctx_profiles_dir(c), dir);
  cr_assert_str_eq(an_ctx_store_root(c), dir);
  cr_assert_str_eq(an_ctx_idrange_root(c), AN_IDRANGE_ROOT_DEFAULT);
  an_ctx_free(c);
  c = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.init_path = "build/agentnest-init"}, &c, &err), -EINVAL);
  cr_assert_null(c);
  cr_assert_not_null(strstr(err->msg, "init path"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.idrange_root = ""}, &c, &err), -EINVAL);
  an_error_free(&err);
  rmdir(dir);
}

Test(ctx, null_context_means_the_built_in_defaults_not_the_environment) {
  cr_assert_null(an_ctx_store_root(NULL));
  cr_assert_str_eq(an_ctx_profiles_dir(NULL), AN_DATADIR "/profiles");
  cr_assert_str_eq(an_ctx_idrange_root(NULL), AN_IDRANGE_ROOT_DEFAULT);
  cr_assert_str_eq(an_sandbox_profiles_dir(), AN_DATADIR "/profiles");
  cr_assert_str_eq(an_idrange_root(), AN_IDRANGE_ROOT_DEFAULT);
  char *p = NULL;
  an_error_t err = NULL;
  int r = an_sandbox_init_path(&p, &err);
  /* found next to the test binary or installed, or not at all: never $AGENTNEST_INIT */
  if (r == 0) cr_assert_str_neq(p, "/nonexistent/bogus-init");
  else cr_assert_eq(r, -ENOENT, "%s", err->msg);
  free(p);
  an_error_free(&err);
}

Test(ctx, init_path_comes_from_the_context) {
  struct an_ctx *c = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.init_path = "/bin/true"}, &c, &err), 0);
  char *p = NULL;
  cr_assert_eq(an_ctx_init_path(c, &p, &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(p, "/bin/true");
  free(p);
  an_ctx_free(c);
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.init_path = "/nonexistent/x"}, &c, &err), 0);
  cr_assert_eq(an_ctx_init_path(c, &p, &err), -ENOENT);
  cr_assert_not_null(strstr(err->msg, "/nonexistent/x"), "%s", err->msg);
  an_error_free(&err);
  an_ctx_free(c);
}

Test(ctx, options_take_the_seccomp_default_of_the_context) {
  struct an_ctx *c = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.profiles_dir = "/opt/p"}, &c, &err), 0);
  struct an_sandbox_opts *o = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(c, &o, &err), 0);
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), "/opt/p/seccomp/default.json");
  cr_assert_eq(an_sandbox_opts_set_ctx(o, NULL, &err), 0);
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), AN_DATADIR "/profiles/seccomp/default.json");
  cr_assert_eq(an_sandbox_opts_set_ctx(o, c, &err), 0);
  cr_assert_str_eq(an_sandbox_opts_seccomp_profile(o), "/opt/p/seccomp/default.json");
  an_sandbox_opts_free(o);
  an_ctx_free(c);
}

static const char *fake_env(void *data, const char *name) {
  return !strcmp(name, "AN_CTX_TOKEN") ? (const char *) data : NULL;
}

/* `--secret NAME` reads the front end's environment through the context;
 * a context with no secret_env (the servers') refuses it even when the
 * process has the variable, so a client cannot pull the server's secrets
 * into a sandbox through a profile's "secret": "NAME". */
Test(ctx, a_secret_named_without_value_needs_the_contexts_secret_env) {
  setenv("AN_CTX_TOKEN", "from-the-process-env", 1);
  an_error_t err = NULL;
  struct an_ctx *server = NULL, *cli = NULL;
  cr_assert_eq(an_ctx_new(NULL, &server, &err), 0);
  cr_assert_eq(an_ctx_new(&(struct an_ctx_config){.secret_env = fake_env, .secret_env_data = "from-the-ctx"},
                          &cli, &err), 0);
  struct an_sandbox_opts *o = NULL;
  cr_assert_eq(an_sandbox_opts_new_ctx(server, &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret_arg(o, "AN_CTX_TOKEN", &err), -ENOENT);
  cr_assert_not_null(strstr(err->msg, "reads none"), "%s", err->msg);
  cr_assert_null(strstr(err->msg, "from-the"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_null(an_sandbox_opts_secret_values(o)[0]);
  an_sandbox_opts_free(o);
  cr_assert_eq(an_sandbox_opts_new_ctx(cli, &o, &err), 0);
  cr_assert_eq(an_sandbox_opts_add_secret_arg(o, "AN_CTX_TOKEN", &err), 0, "%s", err ? err->msg : "");
  cr_assert_str_eq(an_sandbox_opts_secret_values(o)[0], "from-the-ctx");
  an_sandbox_opts_free(o);
  an_ctx_free(server);
  an_ctx_free(cli);
  unsetenv("AN_CTX_TOKEN");
}

Test(ctx, no_getenv_in_the_library_sources) {
  const char *src = getenv("AN_TEST_SRC");
  int r = an_test_sh("cd '%s' && ! grep -rn --include='*.c' --include='*.h' -E '\\b(secure_)?getenv *\\(' src "
                     "| grep -v '^src/cli/' >&2", src && *src ? src : ".");
  cr_assert_eq(r, 0, "getenv( found in the library (src/ outside src/cli/): see stderr");
}
