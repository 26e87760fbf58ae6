/* cli/agentnest/cli_pool.c — see cli_pool.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "agentnest/pool.h"
#include "cli.h"
#include "cli_pool.h"
#include "util/cleanup.h"

const char cli_pool_opts_help[] =
    "Pool options:\n"
    "  --pool NAME             take a ready sandbox of warm pool NAME (agentnest pool start); its\n"
    "                          options are the pool's (sandbox options are then refused); an empty\n"
    "                          pool, or one whose keeper is dead, falls back to a fresh sandbox\n"
    "                          with the pool's options (with a warning on stderr)\n"
    "  --pool-only             with --pool: fail (125) instead of falling back\n";

int cli_pool_check_flags(const char *cmd, const char *pool, size_t nflags, const char *profile) {
  if (!pool) return 0;
  if (profile || nflags)
    return cli_usage_error(cmd, "--pool %s: the sandbox options are the pool's; %s cannot be given too "
                           "(start a pool with those options)", pool, profile ? "--profile" : "a sandbox option");
  return 0;
}

int cli_pool_take(const char *cmd, const char *root, const char *pool, bool pool_only, bool owned,
                  struct an_sandbox **out, bool *pooled) {
  an_error_t err = NULL;
  *pooled = false;
  int r = an_pool_claim(root, pool, owned, out, &err);
  if (r == 0) {
    *pooled = true;
    return 0;
  }
  /* empty, or its keeper dead (-ESRCH): a fresh sandbox with the pool's
   * options, said on stderr; --pool-only: the error */
  if ((r != -EAGAIN && r != -ESRCH) || pool_only) return cli_fail(cmd, &err);
  cleanup_free char *why = strdup(err->msg);
  an_error_free(&err);
  struct an_sandbox_opts *opts = NULL;
  if (an_pool_options(root, pool, &opts, NULL, &err) < 0 || an_sandbox_opts_set_ctx(opts, cli_ctx(), &err) < 0) {
    an_sandbox_opts_free(opts);
    return cli_fail(cmd, &err);
  }
  fprintf(stderr, "agentnest %s: warning: a fresh sandbox with the pool's options instead: %s\n", cmd,
          why ? why : "pool is empty");
  r = owned ? an_sandbox_create_owned(root, opts, out, &err) : an_sandbox_create(root, opts, out, &err);
  an_sandbox_opts_free(opts);
  return r < 0 ? cli_fail(cmd, &err) : 0;
}

int cli_print_result_json_pooled(const char *cmd, const char *id, const struct an_exec_result *res,
                                 const struct an_artifact_list *arts, bool pooled) {
  char what[128];
  snprintf(what, sizeof what, "exec result of sandbox %s", id ? id : "(none)");
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return cli_print_json(cmd, &j, what);
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "id", id);
  an_jgen_kv_bool(g, "pooled", pooled);
  if (g->g && g->st == yajl_gen_status_ok) an_jgen_check(g, an_exec_result_json_fields(g->g, res, arts));
  an_jgen_map_close(g);
  return cli_print_json(cmd, g, what);
}
