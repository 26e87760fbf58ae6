/* net/egress.c — policy hooks for the DNS filter and the proxy, egress
 * events as JSON, and the egress host probe (see egress.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "net/egress.h"
#include "net/netns.h"
#include "net/ruleset.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/json_gen.h"

static bool hook_name_allowed(void *c, const char *name, uint16_t port) {
  struct an_egress_ctx *ctx = c;
  return an_egress_name_allowed(ctx->policy, name, port, NULL);
}

static size_t addr_len(int family) { return family == AF_INET ? 4 : 16; }

/* Remember that addr answered name until its TTL ends: the same pair's
 * slot, else a free or expired one, else the one that ends first. */
static void admitted_note(struct an_egress_ctx *ctx, const char *name, int family, const void *addr,
                          uint32_t ttl_s) {
  if (!name || strlen(name) >= AN_NET_NAME_BUF) return;
  uint64_t now = an_mono_ms();
  struct an_egress_admitted *slot = NULL;
  for (size_t i = 0; i < AN_EGRESS_ADMITTED_MAX && !slot; i++) {
    struct an_egress_admitted *a = &ctx->admitted[i];
    if (a->family == family && !memcmp(a->addr, addr, addr_len(family)) && !strcmp(a->name, name)) slot = a;
  }
  for (size_t i = 0; i < AN_EGRESS_ADMITTED_MAX && !slot; i++)
    if (!ctx->admitted[i].family || ctx->admitted[i].expires_ms <= now) slot = &ctx->admitted[i];
  if (!slot) {                       /* all live: the one that ends first */
    slot = &ctx->admitted[0];
    for (size_t i = 1; i < AN_EGRESS_ADMITTED_MAX; i++)
      if (ctx->admitted[i].expires_ms < slot->expires_ms) slot = &ctx->admitted[i];
  }
  slot->family = family;
  memset(slot->addr, 0, sizeof slot->addr);
  memcpy(slot->addr, addr, addr_len(family));
  snprintf(slot->name, sizeof slot->name, "%s", name);
  uint64_t ttl_ms = (uint64_t) (ttl_s > AN_RULESET_TTL_CAP_S ? AN_RULESET_TTL_CAP_S : ttl_s) * 1000;
  slot->expires_ms = now + ttl_ms;
}

static int hook_add_addr(void *c, const char *name, int family, const void *addr, uint32_t ttl_s) {
  struct an_egress_ctx *ctx = c;
  if (an_egress_addr_denied(ctx->policy, family, addr, 0, NULL)) return -EACCES;
  an_error_t err = NULL;
  int r = an_ruleset_add_addr(ctx->netns_path, family, addr, ttl_s, &err);
  an_error_free(&err);
  if (r < 0) return r;
  admitted_note(ctx, name, family, addr, ttl_s);
  return 0;
}

static int hook_dest_allowed(void *c, int family, const void *addr, uint16_t port, const char *name,
                             const char **rule) {
  struct an_egress_ctx *ctx = c;
  int r = an_egress_dest_allowed(ctx->policy, family, addr, port, name, rule);
  if (r != 0 || name || port == 80 || port == 443 || ctx->policy->mode != AN_EGRESS_ALLOWLIST ||
      (family != AF_INET && family != AF_INET6) || an_egress_addr_denied(ctx->policy, family, addr, port, NULL))
    return r;
  uint64_t now = an_mono_ms();
  for (size_t i = 0; i < AN_EGRESS_ADMITTED_MAX; i++) {
    const struct an_egress_admitted *a = &ctx->admitted[i];
    if (a->family != family || a->expires_ms <= now || memcmp(a->addr, addr, addr_len(family))) continue;
    const char *why = NULL;
    if (an_egress_name_allowed(ctx->policy, a->name, port, &why)) {
      *rule = why;
      return 1;
    }
  }
  return 0;
}

static void hook_event(void *c, const struct an_net_event *ev) {
  struct an_egress_ctx *ctx = c;
  if (ctx->sink) ctx->sink(ctx->sink_ctx, ev);
}

void an_egress_hooks(struct an_egress_ctx *ctx, struct an_net_hooks *hooks) {
  *hooks = (struct an_net_hooks){.ctx = ctx, .name_allowed = hook_name_allowed,
                                 .add_addr = hook_add_addr, .dest_allowed = hook_dest_allowed,
                                 .event = hook_event};
}

int an_egress_event_fields(const struct an_net_event *ev, char **out, an_error_t *err) {
  static const char *const kinds[] = {"?", "dns", "connect", "close"};
  static const char *const verdicts[] = {"?", "allow", "deny", "error"};
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return an_error_set(err, ENOMEM, "egress event");
  an_jgen_validate_utf8(&j);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "kind", kinds[ev->kind <= AN_NET_EV_CLOSE ? ev->kind : 0]);
  an_jgen_kv_str(&j, "verdict", verdicts[ev->verdict <= AN_NET_ERROR ? ev->verdict : 0]);
  if (ev->name) an_jgen_kv_str(&j, "name", ev->name);
  if (ev->kind == AN_NET_EV_DNS) {
    an_jgen_kv_u64(&j, "qtype", ev->qtype);
    an_jgen_kv_i64(&j, "rcode", ev->rcode);
    an_jgen_kv_u64(&j, "addresses", ev->naddrs);
  }
  if (ev->family == AF_INET || ev->family == AF_INET6) {
    char a[INET6_ADDRSTRLEN] = "";
    if (ev->addr) inet_ntop(ev->family, ev->addr, a, sizeof a);
    an_jgen_kv_str(&j, "address", a);
    an_jgen_kv_u64(&j, "port", ev->port);
  }
  if (ev->rule) an_jgen_kv_str(&j, "rule", ev->rule);
  an_jgen_kv_str(&j, "reason", ev->reason ? ev->reason : "");
  if (ev->kind == AN_NET_EV_CLOSE) {
    an_jgen_kv_u64(&j, "bytes_out", ev->bytes_out);
    an_jgen_kv_u64(&j, "bytes_in", ev->bytes_in);
  }
  an_jgen_map_close(&j);
  char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(&j, &doc, &len);
  if (r < 0) return an_error_set(err, -r, "egress event: JSON");
  /* "{...}" -> ",..." : the members only */
  doc[0] = ',';
  if (len > 1) doc[len - 1] = 0;
  *out = doc;
  return 0;
}

int an_egress_probe(const char *scratch_dir, const char **step, an_error_t *err) {
  const char *dummy;
  if (!step) step = &dummy;
  *step = NULL;
  char path[4096];
  snprintf(path, sizeof path, "%s/.egress-probe-%d", scratch_dir, (int) getpid());
  int r = an_netns_create(path, err);
  if (r < 0) {
    *step = err && *err && strstr((*err)->msg, "veth") ? "veth" : "netns";
    return an_error_prefix(err, "egress: %s", *step);
  }
  struct an_egress_policy *p = NULL;
  if ((r = an_egress_policy_new(AN_EGRESS_FULL, &p, err)) >= 0) {
    r = an_ruleset_load(path, p, 15001, err);
    an_egress_policy_free(p);
    if (r < 0) {
      *step = "nftables";
      an_error_prefix(err, "egress: nftables");
    }
  }
  an_error_t e = NULL;
  an_netns_remove(path, &e);
  an_error_free(&e);
  return r;
}
