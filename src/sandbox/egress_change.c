/* sandbox/egress_change.c — a live sandbox's egress policy: read it (with the
 * ruleset's counters) and change it (`agentnest network ID --allow/--deny/
 * --mode`).  A change is checked as a whole (the same grammar and refusals
 * as at create), then the ruleset is replaced in ONE nft transaction, the
 * options record is rewritten (rename: fork and restore read it), and the
 * egress process is told (SIGHUP) to reload its policy from the record. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "agentnest/sandbox.h"
#include "engine/process.h"
#include "net/policy.h"
#include "net/ruleset.h"
#include "sandbox/audit_internal.h"
#include "sandbox/egress_run.h"
#include "sandbox/opts_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

static int remove_entry(struct an_sandbox_opts *o, const char *text, an_error_t *err) {
  for (size_t i = 0; o->egress_allow && o->egress_allow[i]; i++)
    if (strcmp(o->egress_allow[i], text) == 0) {
      free(o->egress_allow[i]);
      for (size_t k = i; o->egress_allow[k]; k++) o->egress_allow[k] = o->egress_allow[k + 1];
      return 0;
    }
  return an_error_set(err, ENOENT, "--deny \"%s\": not an entry of the allowlist", text);
}

static int write_options(const char *dir, const struct an_sandbox_opts *o, an_error_t *err) {
  cleanup_free char *json = NULL;
  int r = an_sandbox_opts_to_json(o, &json, err);
  if (r < 0) return r;
  char tmp[4096], path[4096];
  snprintf(tmp, sizeof tmp, "%s/.%s.new", dir, AN_SB_OPTIONS_FILE);
  snprintf(path, sizeof path, "%s/%s", dir, AN_SB_OPTIONS_FILE);
  FILE *f = fopen(tmp, "we");
  if (!f || fputs(json, f) < 0 || fclose(f) != 0) {
    int e = errno ? errno : EIO;
    unlink(tmp);
    return an_error_set(err, e, "write %s", tmp);
  }
  if (rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return an_error_set(err, e, "rename %s to %s", tmp, path);
  }
  return 0;
}

static int network_change_impl(struct an_sandbox *sb, const char *mode, const char *const *allow,
                               size_t nallow, const char *const *deny, size_t ndeny, an_error_t *err) {
  if (!sb->opts) return an_error_set(err, EINVAL, "sandbox %s: no options record", sb->rec.id);
  if (strcmp(an_sandbox_opts_network(sb->opts), "none") == 0)
    return an_error_set(err, EINVAL, "sandbox %s: made with --network none, it has no egress to change "
                        "(make a new one with --network allowlist or full)", sb->rec.id);
  if (mode && strcmp(mode, "none") == 0)
    return an_error_set(err, EINVAL, "sandbox %s: --mode none: not a live change (use an allowlist "
                        "with no entries to allow nothing)", sb->rec.id);
  cleanup_close int lock = an_sb_lock(sb->dir, err);
  if (lock < 0) return lock;
  struct an_sandbox_opts *o = NULL;
  int r = an_sandbox_opts_dup(sb->opts, &o, err);
  if (r < 0) return r;
  struct an_egress_policy *p = NULL;
  if (mode) r = an_sandbox_opts_set_network(o, mode, err);
  for (size_t i = 0; r >= 0 && i < ndeny; i++) r = remove_entry(o, deny[i], err);
  for (size_t i = 0; r >= 0 && i < nallow; i++) r = an_sandbox_opts_add_allow(o, allow[i], err);
  if (r >= 0) r = an_sb_egress_policy(o, &p, err);
  if (r >= 0) r = an_egress_policy_load_host_addrs(p, err);
  char ns[4096];
  snprintf(ns, sizeof ns, "%s/netns", sb->dir);
  if (r >= 0) r = an_ruleset_update(ns, p, AN_SB_EGRESS_PROXY_PORT, err);
  if (r >= 0) r = write_options(sb->dir, o, err);
  if (r >= 0) {
    an_sb_egress_reload(sb->dir);
    an_sb_event(sb->dir, "network_changed", ",\"mode\":\"%s\",\"entries\":%zu", an_egress_mode_name(p->mode),
                p->n_entries);
    an_sandbox_opts_free(sb->opts);
    sb->opts = an_steal(&o);
  }
  an_egress_policy_free(p);
  an_sandbox_opts_free(o);
  return r < 0 ? an_error_prefix(err, "network %s", sb->rec.id) : 0;
}

/* A NULL-terminated copy of n strings (the pointers, borrowed); NULL on ENOMEM. */
static const char **strv_of(const char *const *v, size_t n) {
  const char **c = calloc(n + 1, sizeof *c);
  for (size_t i = 0; c && i < n; i++) c[i] = v[i];
  return c;
}

/* The public call: asked of the sandbox's approval hook, recorded in the audit log. */
int an_sandbox_network_change(struct an_sandbox *sb, const char *mode, const char *const *allow,
                              size_t nallow, const char *const *deny, size_t ndeny, an_error_t *err) {
  cleanup_free const char **a = strv_of(allow, nallow);
  cleanup_free const char **d = strv_of(deny, ndeny);
  if (!a || !d) return an_error_set(err, ENOMEM, "network %s", sb->rec.id);
  struct an_audit_field af[] = {AN_AUDIT_STR("mode", mode), AN_AUDIT_STRV("allow", (char *const *) a),
                                AN_AUDIT_STRV("deny", (char *const *) d)};
  int r = an_approval_checkv(sb, "network_change", af, 3, err);
  if (r < 0) return r;
  r = network_change_impl(sb, mode, allow, nallow, deny, ndeny, err);
  an_sb_audit(sb, NULL, NULL, "network_change", r, err, af, 3);
  return r;
}

void an_sb_egress_counters_gen(struct an_sandbox *sb, struct an_jgen *g) {
  struct an_ruleset_counters c = {0};
  bool have = false;
  if (sb->opts && strcmp(an_sandbox_opts_network(sb->opts), "none") != 0) {
    char ns[4096];
    snprintf(ns, sizeof ns, "%s/netns", sb->dir);
    an_error_t e = NULL;
    have = an_ruleset_counters(ns, &c, &e) == 0;
    an_error_free(&e);
  }
  if (!have) {
    an_jgen_null(g);
    return;
  }
  an_jgen_map_open(g);
  an_jgen_kv_u64(g, "redirected_packets", c.redirected_packets);
  an_jgen_kv_u64(g, "dropped_packets", c.dropped_packets);
  an_jgen_kv_u64(g, "dropped_bytes", c.dropped_bytes);
  an_jgen_kv_u64(g, "dns_packets", c.dns_packets);
  an_jgen_map_close(g);
}

int an_sandbox_network_json(struct an_sandbox *sb, char **json, an_error_t *err) {
  if (!sb->opts) return an_error_set(err, EINVAL, "sandbox %s: no options record", sb->rec.id);
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, true) < 0) return an_error_set(err, ENOMEM, "network JSON");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "id", sb->rec.id);
  an_jgen_kv_str(&j, "mode", an_sandbox_opts_network(sb->opts));
  an_jgen_kv_strv(&j, "allow", (const char *const *) an_sandbox_opts_allow(sb->opts));
  an_jgen_kv_strv(&j, "dns_upstream", (const char *const *) an_sandbox_opts_dns_upstreams(sb->opts));
  an_jgen_key(&j, "counters");
  an_sb_egress_counters_gen(sb, &j);
  an_jgen_map_close(&j);
  int r = an_jgen_finish(&j, json, NULL);
  return r < 0 ? an_error_set(err, -r, "network JSON") : 0;
}
