/* net/policy.h — the egress policy model (internal): modes none|allowlist|full,
 * `--allow` entries (NAME[:PORTS], *.SUFFIX[:PORTS], CIDR[:PORTS]), the deny
 * set, and the two questions the DNS filter, the transparent proxy and the
 * ruleset ask of it: "may this name be resolved / reached on this port?" and
 * "may this address+port be connected to?".
 *
 * Pure code: no system calls except an_egress_policy_load_host_addrs()
 * (getifaddrs(3)).  What does NOT live here: the netns (netns.c), the nftables
 * ruleset built from a policy (ruleset.c), option storage (sandbox/opts.c keeps
 * the entries' text and re-parses it with an_egress_policy_add()).
 *
 * Deny set (applies in every mode above the allowlist): loopback, the host's
 * own addresses, "this network", link-local (169.254.0.0/16 incl. cloud
 * metadata, fe80::/10), RFC 1918, shared address space (RFC 6598), IETF
 * protocol assignments, benchmarking, multicast, reserved/broadcast, ULA,
 * site-local, NAT64/6to4/Teredo (they embed IPv4 addresses), and TCP port 25.
 * An address in a deny range is allowed only by an `--allow CIDR` entry that
 * names that range or a part of it (its prefix is at least as long as the deny
 * range's) and lists the port; port 25 only by a CIDR entry that lists port 25
 * explicitly.  The documentation ranges (192.0.2.0/24, 198.51.100.0/24,
 * 203.0.113.0/24, 2001:db8::/32) are not in the deny set: they are never routed
 * on the internet, and the tests' fake internet uses them.
 *
 * Thread-safety: a policy is not locked; concurrent readers are fine, a writer
 * needs exclusive access. */
#ifndef AN_NET_POLICY_H
#define AN_NET_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "agentnest/error.h"

enum an_egress_mode { AN_EGRESS_NONE, AN_EGRESS_ALLOWLIST, AN_EGRESS_FULL };

enum an_egress_kind {
  AN_EGRESS_NAME,    /* "pkg.example": that name only */
  AN_EGRESS_SUFFIX,  /* "*.example.com": strict subdomains of example.com only */
  AN_EGRESS_CIDR,    /* "192.0.2.0/24", "2001:db8::/32", "192.0.2.7" (= /32) */
};

#define AN_EGRESS_MAX_PORT_RANGES 16
#define AN_EGRESS_MAX_ENTRIES 256
#define AN_EGRESS_MAX_UPSTREAMS 4

struct an_port_range { uint16_t lo, hi; };   /* inclusive, 1..65535 */

struct an_egress_entry {
  enum an_egress_kind kind;
  char *text;                 /* the entry as given (messages, JSON records, events) */
  char *name;                 /* NAME: the name, lower case, no trailing dot;
                                 SUFFIX: the zone after "*." */
  int family;                 /* CIDR: AF_INET or AF_INET6 */
  uint8_t addr[16];           /* CIDR: network address (host bits zero) */
  unsigned prefix;            /* CIDR: prefix length */
  bool ports_given;           /* false: the default 80,443 */
  size_t n_ports;
  struct an_port_range ports[AN_EGRESS_MAX_PORT_RANGES];
};

struct an_egress_upstream {
  char *text;                 /* as given */
  struct sockaddr_storage sa; /* address and port (53 when not given) */
  socklen_t sa_len;
};

struct an_egress_policy {
  enum an_egress_mode mode;
  size_t n_entries;
  struct an_egress_entry *entries;
  size_t n_upstreams;
  struct an_egress_upstream *upstreams;
  size_t n_host_addrs;        /* the host's own addresses: denied like loopback */
  struct { int family; uint8_t addr[16]; } *host_addrs;
};

/* "none" | "allowlist" | "full" -> mode.  Errors: -EINVAL unknown mode (named). */
int an_egress_mode_parse(const char *text, enum an_egress_mode *mode, an_error_t *err);
/* The mode's name ("none", ...), static storage. */
const char *an_egress_mode_name(enum an_egress_mode mode);

/* Parse one `--allow` entry into *e (caller frees with an_egress_entry_clear).
 * Forms: NAME[:PORTS], *.ZONE[:PORTS], ADDR, ADDR/LEN[:PORTS], [ADDR6]:PORTS,
 * [ADDR6/LEN]:PORTS; PORTS is a comma list of N or N-M (1..65535), default
 * 80,443.  Refused (-EINVAL, message quotes the entry and says why): empty,
 * bad names (label syntax, length, single label, all-numeric top label),
 * "*." over a single label, host bits set, a prefix shorter than /8 (IPv4) or
 * /16 (IPv6) — "use --network full" —, bad or empty ports. */
int an_egress_entry_parse(const char *text, struct an_egress_entry *e, an_error_t *err);
void an_egress_entry_clear(struct an_egress_entry *e);

/* An empty policy of the given mode.  Free with an_egress_policy_free (NULL ok).
 * Errors: -ENOMEM. */
int an_egress_policy_new(enum an_egress_mode mode, struct an_egress_policy **out, an_error_t *err);
void an_egress_policy_free(struct an_egress_policy *p);

/* Add an `--allow` entry (parsed as above).  Errors: parse errors; -EINVAL in
 * mode none ("--allow needs --network allowlist or full"), a NAME/SUFFIX entry
 * in mode full (names mean nothing there: everything public is allowed), more
 * than AN_EGRESS_MAX_ENTRIES; a duplicate entry text is accepted once. */
int an_egress_policy_add(struct an_egress_policy *p, const char *text, an_error_t *err);
/* Remove the entry whose text equals `text` (the `network ID --deny` form).
 * Errors: -ENOENT no such entry. */
int an_egress_policy_remove(struct an_egress_policy *p, const char *text, an_error_t *err);

/* Parse a DNS upstream "ADDR", "ADDR:PORT" (IPv4) or "ADDR6", "[ADDR6]:PORT"
 * and add it.  Any address is accepted, loopback included: it is the
 * operator's resolver, queried by the monitor from the host netns, never by
 * the sandbox.  Errors: -EINVAL not an address or a bad port (entry named);
 * -E2BIG more than AN_EGRESS_MAX_UPSTREAMS. */
int an_egress_policy_add_upstream(struct an_egress_policy *p, const char *text, an_error_t *err);

/* Record the host's own addresses (getifaddrs(3) of the caller's netns) so that
 * they are denied like loopback.  Errors: errno of getifaddrs; -ENOMEM. */
int an_egress_policy_load_host_addrs(struct an_egress_policy *p, an_error_t *err);

/* Is `port` (0: any port) in the entry's ports? */
bool an_egress_entry_has_port(const struct an_egress_entry *e, uint16_t port);

/* May `name` be resolved (port 0) or reached on `port`?  Mode none: never;
 * full: every well-formed name; allowlist: a NAME entry equal to it or a SUFFIX
 * entry it is a strict subdomain of (case-insensitive, trailing dot ignored),
 * with the port.  *rule (optional) gets the matching entry's text or a static
 * reason ("mode none", "not in the allowlist"); valid while the policy lives. */
bool an_egress_name_allowed(const struct an_egress_policy *p, const char *name, uint16_t port,
                            const char **rule);

/* Is `addr` (4 or 16 bytes of `family`, network order) in the deny set?  An
 * IPv4-mapped IPv6 address is judged as its IPv4 address.  *rule (optional)
 * gets the deny range's description (static). */
bool an_egress_addr_denied(const struct an_egress_policy *p, int family, const void *addr,
                           uint16_t port, const char **rule);

/* May a TCP connection go to addr:port?  1 allow, 0 deny; *rule (optional)
 * the entry text or the deny/static reason.  Order: the deny set (overridable
 * only by a CIDR entry inside the deny range that lists the port); mode full:
 * allow; allowlist: a CIDR entry containing addr with the port, or, when
 * name_or_null is given (SNI / Host seen by the proxy, or the name the DNS
 * filter resolved to this address), a name entry allowing it on the port. */
int an_egress_dest_allowed(const struct an_egress_policy *p, int family, const void *addr,
                           uint16_t port, const char *name_or_null, const char **rule);

/* The static deny set, for the ruleset (ruleset.c) and doctor: entry i's
 * family, network, prefix and description; returns false past the end. */
bool an_egress_deny_range(size_t i, int *family, const uint8_t **addr, unsigned *prefix,
                          const char **what);

#endif
