/* sandbox/run_once.c — an_sandbox_run_once: create a sandbox without a
 * monitor (the caller is its keeper: prune removes it if the caller dies),
 * run one command in it through the normal exec path, destroy it.  What
 * does NOT live here: create (sandbox.c), exec (exec.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/sandbox_internal.h"

int an_sandbox_run_once(const char *store_root, const struct an_sandbox_opts *opts,
                        char *const argv[], const struct an_exec_opts *eo,
                        struct an_exec_result *res, char **id_out, an_error_t *err) {
  if (!argv || !argv[0] || !argv[0][0]) return an_error_set(err, EINVAL, "run: empty command");
  struct an_sandbox *sb = NULL;
  int r = an_sb_create(store_root, opts, false, &sb, err);
  if (r < 0) return r;
  if (id_out && !(*id_out = strdup(sb->rec.id))) r = an_error_set(err, ENOMEM, "run");
  if (r >= 0) r = an_sandbox_exec(sb, argv, eo, res, err);
  an_error_t e = NULL;
  int d = an_sandbox_destroy(sb, 0, &e);
  if (d < 0 && r >= 0) {
    an_exec_result_release(res);
    *err = e;
    e = NULL;
    r = d;
  }
  an_error_free(&e);
  an_sandbox_close(sb);
  if (r < 0 && id_out) {
    free(*id_out);
    *id_out = NULL;
  }
  return r;
}
