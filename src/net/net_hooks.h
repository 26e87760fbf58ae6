/* net/net_hooks.h — the callbacks and events shared by the DNS filter
 * (net/dnsfilter.h) and the transparent proxy (net/proxy.h) (internal).
 *
 * The two components decide nothing about policy themselves: every decision
 * is a call into these hooks, which the monitor fills in from the sandbox's
 * egress policy (net/policy.c) and its nft sets (the ruleset code).  What
 * lives here: the hook table and the event record.  What does not: policy
 * matching, nftables, netns creation.
 *
 * Threading: a component calls its hooks only from inside its own
 * ..._dispatch() (never from another thread, never after ..._free()), so a
 * single-threaded monitor needs no locking.  Hooks must not block for long
 * (they run on the monitor's poll loop) and must not call back into the
 * component that called them (no ..._free() from inside a hook).
 */
#ifndef AN_NET_NET_HOOKS_H
#define AN_NET_NET_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest DNS name in presentation form without the trailing dot
 * (RFC 1035 3.1: 255 octets on the wire = 253 characters), and the buffer
 * size that holds one with its NUL. */
#define AN_NET_NAME_MAX 253
#define AN_NET_NAME_BUF (AN_NET_NAME_MAX + 1)

enum an_net_event_kind {
  AN_NET_EV_DNS = 1,      /* one DNS query answered (or dropped) by the filter */
  AN_NET_EV_CONNECT,      /* one TCP connection accepted by the proxy: the decision */
  AN_NET_EV_CLOSE,        /* an allowed proxied connection ended: byte counts */
};

enum an_net_verdict {
  AN_NET_ALLOW = 1,       /* answered from upstream / connection spliced */
  AN_NET_DENY,            /* refused by policy (DNS REFUSED, connection closed) */
  AN_NET_ERROR,           /* allowed by policy but failed (SERVFAIL, connect error,
                             malformed input, limit reached, timeout) */
};

/* One event.  Every pointer in it is borrowed and valid only during the
 * event() call; copy what you keep.  Fields that do not apply are 0/NULL. */
struct an_net_event {
  enum an_net_event_kind kind;
  enum an_net_verdict verdict;
  const char *name;       /* DNS: the query name (lower case, no trailing dot);
                             CONNECT/CLOSE: the TLS SNI or HTTP Host, or NULL */
  uint16_t qtype;         /* DNS: the query type (RFC 1035 3.2.2; 1 A, 28 AAAA) */
  int rcode;              /* DNS: the response code sent (0 NOERROR, 2 SERVFAIL,
                             5 REFUSED, 1 FORMERR), -1 when nothing was sent */
  unsigned naddrs;        /* DNS: addresses passed to add_addr for this answer */
  int family;             /* CONNECT/CLOSE: AF_INET or AF_INET6 of the original
                             destination; 0 when it could not be learnt */
  const void *addr;       /* CONNECT/CLOSE: struct in_addr / struct in6_addr */
  uint16_t port;          /* CONNECT/CLOSE: original destination port (host order) */
  const char *rule;       /* the rule dest_allowed named, or NULL */
  const char *reason;     /* short fixed text: why (e.g. "name not allowed",
                             "no original destination", "SNI not allowed",
                             "add_addr failed", "upstream timeout"); never NULL */
  uint64_t bytes_out;     /* CLOSE: bytes sandbox -> destination (incl. the sniffed ones) */
  uint64_t bytes_in;      /* CLOSE: bytes destination -> sandbox */
};

/* The policy hooks.  ctx is passed back unchanged to every hook.  A hook
 * left NULL means: name_allowed -> nothing allowed; add_addr -> failure
 * (so every A/AAAA answer becomes SERVFAIL); dest_allowed -> nothing
 * allowed; event -> events dropped.  Fail closed by construction. */
struct an_net_hooks {
  void *ctx;

  /* DNS filter: may `name` be resolved?  name: lower case, no trailing dot,
   * at most AN_NET_NAME_MAX characters.  port_or_0: always 0 from the DNS
   * filter (a name allowed on any port is resolvable).  Return true to
   * forward the query upstream; false answers REFUSED locally and nothing
   * leaves the host (BL-37). */
  bool (*name_allowed)(void *ctx, const char *name, uint16_t port_or_0);

  /* DNS filter: admit `addr` (struct in_addr for AF_INET, struct in6_addr for
   * AF_INET6, network byte order) for `name` (the ALLOWED query name, not a
   * CNAME target) for ttl_s seconds (already capped and floored by the
   * filter's limits; >= 1).  Called for every address of an A/AAAA answer
   * BEFORE the answer is sent.  Return 0 when the address is in the sandbox's
   * set (the element added or its timeout refreshed), a negative errno
   * otherwise: the client then gets SERVFAIL, not the answer. */
  int (*add_addr)(void *ctx, const char *name, int family, const void *addr, uint32_t ttl_s);

  /* Proxy: may the sandbox connect to addr:port?  family/addr as above
   * (the ORIGINAL destination from SO_ORIGINAL_DST), port in host order.
   * name_or_null: on a name-checked port (the proxy's limits.name_ports,
   * default 80 and 443) the TLS SNI or HTTP Host read from the connection's
   * first bytes (lower case, no port, no trailing dot), or NULL when those
   * bytes are well formed but carry no name (a ClientHello without the
   * server_name extension, an HTTP/1.0 request without Host); on other
   * ports always NULL.  Malformed first bytes, neither TLS nor HTTP/1.x,
   * more than limits.sniff_max_bytes without a complete ClientHello or
   * header block, or a sniff timeout close the connection without calling
   * this hook (a DENY event says which).  The hook must apply the
   * deny set itself (loopback, the HOST's own addresses — the proxy
   * connects from the host netns — link-local, private ranges, TCP 25) and
   * the allowlist by address, port and (when the port is name-checked) name.
   * *rule may be set to a string naming the matching rule; it need only
   * live until the hook returns (the proxy copies it, for the events of the
   * connection's whole life).  Return 1 allow, 0 deny. */
  int (*dest_allowed)(void *ctx, int family, const void *addr, uint16_t port,
                      const char *name_or_null, const char **rule);

  /* Both: one audit event (see struct an_net_event).  Optional. */
  void (*event)(void *ctx, const struct an_net_event *ev);
};

#endif
