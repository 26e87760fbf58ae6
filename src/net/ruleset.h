/* net/ruleset.h — the sandbox's nftables ruleset (internal), loaded with
 * libnftables into the sandbox's own netns (net/netns.h) from a thread that
 * joined it; the host's ruleset is never read or written.
 *
 * One table, `inet agentnest` (IPv4 and IPv6 alike: BL-38):
 *   sets    deny4/deny6   the deny set (net/policy.h) + the host's own
 *                         addresses (interval, auto-merge)
 *           dyn4/dyn6     addresses the DNS filter admitted for allowed names
 *                         (flags timeout: the answer's TTL, capped)
 *   counters redirected (connections sent to the proxy), dropped (packets
 *           refused), dns (DNS packets to the filter)
 *   chain nat_out (nat, output): loopback stays local; only TCP; explicit
 *           CIDR entries on their ports (inside a deny range only when the
 *           entry names it); TCP 25 stops here; dyn4/dyn6 (not in the deny
 *           set) on the ports of the name entries; in mode full every
 *           destination not in the deny set — each `redirect`ed to the
 *           transparent proxy's port on 127.0.0.1 / ::1, which checks the
 *           address, port and TLS SNI / HTTP Host again before connecting.
 *   chain filter_out (filter, output, policy drop): lo accepted (the proxy
 *           and the DNS filter listen on local addresses), and what nat_out
 *           redirected (ct status dnat); everything else —
 *           UDP other than DNS to the filter, ICMP, DNS or DoT to any other
 *           address, TCP not redirected — counted, logged at most 10/s, and
 *           dropped.  (Logging from a non-initial netns reaches the host log
 *           only where the host set net.netfilter.nf_log_all_netns.)  Refused
 *           TCP gets a reset (connect: ECONNREFUSED at once), the rest is
 *           dropped (sendto: EPERM).
 * Raw and packet sockets need CAP_NET_RAW over this netns, which no sandbox
 * process has (its owner is the initial user namespace): BL-39.
 *
 * Thread-safety: functions may run concurrently on different netns; each
 * call makes its own libnftables context in a thread of its own. */
#ifndef AN_NET_RULESET_H
#define AN_NET_RULESET_H

#include <stdbool.h>
#include <stdint.h>
#include "agentnest/error.h"
#include "net/policy.h"

#define AN_RULESET_TABLE "agentnest"
#define AN_RULESET_TTL_CAP_S 3600

/* The nft script for policy p with the proxy on proxy_port (1..65535):
 * with `create` the table, sets and chains are declared (the first load);
 * otherwise the chains are flushed and refilled, and dyn4/dyn6 emptied (a
 * policy change: names no longer allowed lose their addresses at once).
 * Pure (no system call).  *out is heap (free it).  Errors: -EINVAL mode none
 * (a sandbox without egress gets no ruleset: its netns has no route out) or
 * port 0; -ENOMEM. */
int an_ruleset_text(const struct an_egress_policy *p, uint16_t proxy_port, bool create, char **out,
                    an_error_t *err);

/* Load the ruleset into the netns at netns_path (one transaction).  Errors:
 * -EIO with libnftables' message (the netns is left without the table: the
 * transaction is atomic); errors of an_netns_run_in. */
int an_ruleset_load(const char *netns_path, const struct an_egress_policy *p, uint16_t proxy_port,
                    an_error_t *err);

/* an_ruleset_load into the netns of the CALLING thread (one that joined or
 * made the sandbox's netns, see an_netns_enter_new).  Errors: as
 * an_ruleset_load less an_netns_run_in's. */
int an_ruleset_load_here(const struct an_egress_policy *p, uint16_t proxy_port, an_error_t *err);

/* Replace the rules of a loaded ruleset with those of p in ONE transaction
 * (`agentnest network ID ...`): no packet ever sees a mix of old and new.
 * Errors: as an_ruleset_load; on error the old rules stay. */
int an_ruleset_update(const char *netns_path, const struct an_egress_policy *p, uint16_t proxy_port,
                      an_error_t *err);

/* Admit addr (4 or 16 bytes) into dyn4/dyn6 for ttl_s seconds (1..cap;
 * larger values are capped); an element already there gets the new timeout
 * (delete + add in one transaction).  Returns 0 once the element is in the
 * kernel's set.  Errors: -EINVAL bad family/ttl; -EIO libnftables' message. */
int an_ruleset_add_addr(const char *netns_path, int family, const void *addr, uint32_t ttl_s,
                        an_error_t *err);

struct an_ruleset_counters {
  uint64_t redirected_packets, redirected_bytes;
  uint64_t dropped_packets, dropped_bytes;
  uint64_t dns_packets, dns_bytes;
};

/* Read the named counters.  Errors: -EIO libnftables' message (no table). */
int an_ruleset_counters(const char *netns_path, struct an_ruleset_counters *out, an_error_t *err);

#endif
