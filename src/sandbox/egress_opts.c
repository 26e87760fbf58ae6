/* sandbox/egress_opts.c — the sandbox options for egress (--allow,
 * --dns-upstream; the profile/record keys "allow" and "dns_upstream"; the mode
 * itself is the "network" option in opts.c) and the check at create that turns
 * them into a net/policy.h policy.  The entries are kept as the text the user
 * gave, syntax-checked when added, and re-parsed from the sandbox's record, so
 * fork and restore get exactly the same policy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "agentnest/sandbox_opts.h"
#include "net/policy.h"
#include "sandbox/opts_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/lazylib.h"

static int strv_add(char ***list, const char *s, size_t max, const char *what, an_error_t *err) {
  size_t n = 0;
  while (*list && (*list)[n]) n++;
  for (size_t i = 0; i < n; i++)
    if (strcmp((*list)[i], s) == 0) return 0;
  if (n >= max) return an_error_set(err, E2BIG, "%s \"%s\": more than %zu entries", what, s, max);
  char **grown = realloc(*list, (n + 2) * sizeof *grown);
  if (!grown) return an_error_set(err, ENOMEM, "%s", what);
  *list = grown;
  grown[n + 1] = NULL;
  if (!(grown[n] = strdup(s))) return an_error_set(err, ENOMEM, "%s", what);
  return 0;
}

int an_sandbox_opts_add_allow(struct an_sandbox_opts *o, const char *entry, an_error_t *err) {
  struct an_egress_entry e;
  int r = an_egress_entry_parse(entry, &e, err);
  if (r < 0) return r;
  an_egress_entry_clear(&e);
  return strv_add(&o->egress_allow, entry, AN_EGRESS_MAX_ENTRIES, "--allow", err);
}

int an_sandbox_opts_add_dns_upstream(struct an_sandbox_opts *o, const char *addr, an_error_t *err) {
  struct an_egress_policy *p = NULL;
  int r = an_egress_policy_new(AN_EGRESS_NONE, &p, err);
  if (r < 0) return r;
  r = an_egress_policy_add_upstream(p, addr, err);
  an_egress_policy_free(p);
  return r < 0 ? r : strv_add(&o->dns_upstream, addr, AN_EGRESS_MAX_UPSTREAMS, "--dns-upstream", err);
}

char *const *an_sandbox_opts_allow(const struct an_sandbox_opts *o) {
  static char *const none[] = {NULL};
  return o->egress_allow ? o->egress_allow : none;
}

char *const *an_sandbox_opts_dns_upstreams(const struct an_sandbox_opts *o) {
  static char *const none[] = {NULL};
  return o->dns_upstream ? o->dns_upstream : none;
}

int an_sb_egress_policy(const struct an_sandbox_opts *o, struct an_egress_policy **out, an_error_t *err) {
  enum an_egress_mode mode;
  int r = an_egress_mode_parse(o->network, &mode, err);
  if (r < 0) return r;
  struct an_egress_policy *p = NULL;
  if ((r = an_egress_policy_new(mode, &p, err)) < 0) return r;
  for (char **a = o->egress_allow; r >= 0 && a && *a; a++) r = an_egress_policy_add(p, *a, err);
  if (r >= 0 && mode == AN_EGRESS_NONE && o->dns_upstream && o->dns_upstream[0])
    r = an_error_set(err, EINVAL, "--dns-upstream \"%s\": needs --network allowlist or full", o->dns_upstream[0]);
  for (char **u = o->dns_upstream; r >= 0 && u && *u; u++) r = an_egress_policy_add_upstream(p, *u, err);
  if (r < 0) {
    an_egress_policy_free(p);
    return r;
  }
  *out = p;
  return 0;
}

/* The libraries the egress enforcement calls into (the netns and veth:
 * libnl; the ruleset: libnftables; the DNS filter: ldns), loaded lazily
 * (util/lazylib.c). */
static const char *const egress_libs[] = {"libnl-3.so", "libnl-route-3.so", "libnftables.so", "libldns.so"};

int an_sb_egress_check(const struct an_sandbox_opts *o, an_error_t *err) {
  struct an_egress_policy *p = NULL;
  int r = an_sb_egress_policy(o, &p, err);
  bool filtered = r >= 0 && p->mode != AN_EGRESS_NONE;
  an_egress_policy_free(p);
  /* fail closed, before anything is made: a library missing at run time
   * refuses the sandbox here; its first call half-way through the create
   * aborted the process and left the sandbox's state behind */
  for (size_t i = 0; filtered && r >= 0 && i < sizeof egress_libs / sizeof *egress_libs; i++) {
    char why[512];
    if (an_lazylib_require(egress_libs[i], why, sizeof why) < 0)
      r = an_error_set(err, ELIBACC, "network %s: egress cannot be enforced on this host: %s",
                       an_sandbox_opts_network(o), why);
  }
  return r;
}

bool an_sb_egress_set_option(struct an_sandbox_opts *o, const char *option, const char *text, int *r,
                             an_error_t *err) {
  if (strcmp(option, "allow") == 0) *r = an_sandbox_opts_add_allow(o, text, err);
  else if (strcmp(option, "dns_upstream") == 0) *r = an_sandbox_opts_add_dns_upstream(o, text, err);
  else return false;
  return true;
}

bool an_sb_egress_profile_key(struct an_sandbox_opts *o, const char *key, yajl_val v, int *r,
                              an_error_t *err) {
  int (*add)(struct an_sandbox_opts *, const char *, an_error_t *);
  if (strcmp(key, "allow") == 0) add = an_sandbox_opts_add_allow;
  else if (strcmp(key, "dns_upstream") == 0) add = an_sandbox_opts_add_dns_upstream;
  else return false;
  if (!YAJL_IS_ARRAY(v)) {
    *r = an_error_set(err, EINVAL, "key \"%s\": expected an array of strings", key);
    return true;
  }
  *r = 0;
  for (size_t i = 0; *r >= 0 && i < v->u.array.len; i++) {
    yajl_val s = v->u.array.values[i];
    if (!YAJL_IS_STRING(s)) *r = an_error_set(err, EINVAL, "key \"%s\": item %zu: expected a string", key, i);
    else if ((*r = add(o, YAJL_GET_STRING(s), err)) < 0) *r = an_error_prefix(err, "key \"%s\"", key);
  }
  return true;
}

static void gen_strv(struct an_jgen *j, const char *key, char **v) {
  if (!v || !v[0]) return;
  an_jgen_key(j, key);
  an_jgen_array_open(j);
  for (; *v; v++) an_jgen_str(j, *v);
  an_jgen_array_close(j);
}

void an_sb_egress_opts_gen(struct an_jgen *j, const struct an_sandbox_opts *o) {
  gen_strv(j, "allow", o->egress_allow);
  gen_strv(j, "dns_upstream", o->dns_upstream);
}

void an_sb_egress_opts_free(struct an_sandbox_opts *o) {
  an_strv_free(o->egress_allow);
  an_strv_free(o->dns_upstream);
  o->egress_allow = o->dns_upstream = NULL;
}
