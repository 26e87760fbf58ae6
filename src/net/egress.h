/* net/egress.h — the glue between a sandbox's egress policy and the
 * components that enforce it (internal): the net_hooks.h callbacks the DNS
 * filter and the proxy call (decided by net/policy.h, DNS answers admitted
 * into the ruleset's sets by net/ruleset.h), the audit-event JSON, and the
 * host probe `doctor` reports.  What does NOT live here: the components
 * themselves (dnsfilter.c, proxy.c), the netns (netns.c), the monitor loop.
 *
 * Thread-safety: a context is used from one thread (the monitor's poll
 * loop); the probe may run concurrently with anything. */
#ifndef AN_NET_EGRESS_H
#define AN_NET_EGRESS_H

#include <stdbool.h>
#include "agentnest/error.h"
#include "net/net_hooks.h"
#include "net/policy.h"

#define AN_EGRESS_ADMITTED_MAX 128

/* An address the DNS filter admitted, and for which name (add_addr). */
struct an_egress_admitted {
  int family;                             /* 0: a free slot */
  uint8_t addr[16];
  char name[AN_NET_NAME_BUF];
  uint64_t expires_ms;                    /* CLOCK_MONOTONIC */
};

struct an_egress_ctx {
  const struct an_egress_policy *policy;  /* borrowed; may be replaced between dispatches */
  const char *netns_path;                 /* the sandbox's netns (its ruleset's sets) */
  void (*sink)(void *sink_ctx, const struct an_net_event *ev);  /* events, or NULL */
  void *sink_ctx;
  /* the hooks' own: which name each admitted address was an answer for,
   * the newest AN_EGRESS_ADMITTED_MAX with their TTL (zero-initialise) */
  struct an_egress_admitted admitted[AN_EGRESS_ADMITTED_MAX];
};

/* Fill *hooks so that every call goes to ctx (borrowed: it must outlive the
 * components):
 *   name_allowed  an_egress_name_allowed(policy, name, port);
 *   add_addr      an address of the deny set (an allowed name pointing at
 *                 169.254.169.254, 10/8, the host, ...: DNS rebinding) is
 *                 refused with -EACCES, so the client gets SERVFAIL; else
 *                 an_ruleset_add_addr (its errno on failure);
 *   dest_allowed  an_egress_dest_allowed; and on a port other than 80 and
 *                 443 (the proxy names no site there), a destination that
 *                 one of the newest AN_EGRESS_ADMITTED_MAX answers admitted,
 *                 within its TTL, for a name whose entry lists the port
 *                 (agentnest(1): "there the address and port decide" --
 *                 an address admitted for a.example is not reachable on
 *                 the ports of b.example's entry);
 *   event         ctx->sink. */
void an_egress_hooks(struct an_egress_ctx *ctx, struct an_net_hooks *hooks);

/* One event as the members of a sandbox event (",\"kind\":\"dns\",..."
 * without braces, for sandbox/events.c): kind (dns|connect|close), verdict
 * (allow|deny|error), name, qtype, rcode, addresses, address, port, rule,
 * reason, bytes_out, bytes_in — those that apply.  *out is heap.
 * Errors: -ENOMEM; -EINVAL a string that is not UTF-8. */
int an_egress_event_fields(const struct an_net_event *ev, char **out, an_error_t *err);

/* What egress needs on this host, tried for real in a scratch netns that is
 * removed again (under `scratch_dir`, which must exist): netns creation,
 * the veth pair (libnl), the nftables ruleset (libnftables, table inet with
 * nat).  Returns 0 when all work; else the first failure's errno with
 * *err naming the step ("egress: veth: ...").  *step (optional) gets a
 * static name of the step that failed ("netns", "veth", "nftables") or NULL. */
int an_egress_probe(const char *scratch_dir, const char **step, an_error_t *err);

#endif
