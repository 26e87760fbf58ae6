/* sandbox/audit_ops.c — the sandbox layer's audit records: one call per
 * operation with its outcome ("result", "error") and the sandbox's secrets
 * always redacted (sandbox/audit_internal.h).  The records are written by
 * the operations themselves (sandbox.c, exec.c, workspace_ops.c, fork.c,
 * teardown.c, monitor.c, prune.c, run_once.c). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/audit_internal.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

void an_sb_audit(const struct an_sandbox *sb, const char *root, const char *id, const char *op,
                 int r, const an_error_t *err, const struct an_audit_field *f, size_t n) {
  cleanup_free struct an_secret *sec = NULL;
  size_t nsec = 0;
  if (sb) {
    root = sb->root;
    id = sb->rec.id;
    if (an_sb_known_secrets(sb, &sec, &nsec) < 0) return;   /* never unredacted */
  }
  cleanup_free struct an_audit_field *all = calloc(n + 3, sizeof *all);
  if (!all) return;
  memcpy(all, f, n * sizeof *all);
  size_t k = n;
  all[k++] = AN_AUDIT_STR("result", r >= 0 ? "ok" : "error");
  if (r < 0) all[k++] = AN_AUDIT_STR("error", err && *err && (*err)->msg ? (*err)->msg : "unknown error");
  /* a caller's own AN_AUDIT_SECRETS in f wins over the sandbox's (it
   * comes later: audit.c takes the last) only when it is given; the
   * sandbox's go first */
  bool caller_secrets = false;
  for (size_t i = 0; i < n; i++)
    if (f[i].type == AN_AUDIT_T_SECRETS) caller_secrets = true;
  if (!caller_secrets) all[k++] = AN_AUDIT_SECRETS(sec, nsec);
  an_error_t e = NULL;
  an_audit_recordv(root, op, id, all, k, &e);
  an_error_free(&e);
}

int an_sb_opts_secrets(const struct an_sandbox_opts *opts, struct an_secret **out, size_t *n) {
  size_t c = 0;
  while (opts->secret_names && opts->secret_names[c]) c++;
  *n = 0;
  if (!(*out = calloc(c + 1, sizeof **out))) return -ENOMEM;
  for (size_t i = 0; i < c; i++)
    if (opts->secret_values && opts->secret_values[i] && *opts->secret_values[i] && *opts->secret_names[i])
      (*out)[(*n)++] = (struct an_secret){opts->secret_names[i], opts->secret_values[i]};
  return 0;
}

void an_sb_audit_create(const char *root, const char *id, const struct an_sandbox_opts *opts,
                        bool oneshot, int r, const an_error_t *err) {
  struct an_audit_field f[] = {
    AN_AUDIT_STR("image", opts->image),
    AN_AUDIT_STR("name", opts->name),
    AN_AUDIT_STR("profile", opts->profile),
    AN_AUDIT_STR("network", opts->network),
    AN_AUDIT_INT("lifetime_ms", opts->lifetime_ms),
    AN_AUDIT_ENV_NAMES("env", opts->env),
    AN_AUDIT_STRV("secrets", opts->secret_names),
    AN_AUDIT_STR("approve_with", opts->approve_with),
    AN_AUDIT_BOOL("oneshot", oneshot),
  };
  /* the values to redact: from the options (the handle may not exist) */
  cleanup_free struct an_secret *sec = NULL;
  size_t k = 0;
  if (an_sb_opts_secrets(opts, &sec, &k) < 0) return;
  cleanup_free struct an_audit_field *all = calloc(sizeof f / sizeof *f + 1, sizeof *all);
  if (!all) return;
  memcpy(all, f, sizeof f);
  all[sizeof f / sizeof *f] = AN_AUDIT_SECRETS(sec, k);
  an_sb_audit(NULL, root, id, "create", r, err, all, sizeof f / sizeof *f + 1);
}

void an_audit_sandbox(const struct an_sandbox *sb, const char *op, int result, const an_error_t *err,
                      ...) {
  if (!sb) return;
  struct an_audit_field f[AN_AUDIT_MAX_FIELDS];
  size_t n = 0;
  va_list ap;
  va_start(ap, err);
  an_sb_audit_fields_va(ap, f, &n);   /* past the maximum: the first ones */
  va_end(ap);
  an_sb_audit(sb, NULL, NULL, op, result, err, f, n);
}
