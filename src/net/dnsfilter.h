/* net/dnsfilter.h — the sandbox's DNS filter: answers only names the egress
 * policy allows, resolves them upstream, and admits their addresses into the
 * sandbox's nft sets before it answers (internal).
 *
 * DNS messages are parsed and built with libldns (RFC 1035; EDNS(0) RFC 6891),
 * never by hand.  The filter runs in the sandbox's monitor (host netns) on
 * its poll loop: it exposes ONE epoll fd (an_dnsfilter_fd()) and does its
 * work in an_dnsfilter_dispatch() when that fd is readable.  Its LISTENING
 * sockets are given by the caller, who creates and binds them inside the
 * sandbox's netns (e.g. on the filter's address, port 53); its UPSTREAM
 * sockets are created by the filter itself in the netns of the thread that
 * calls dispatch (the monitor's, i.e. the host's), so queries leave as the
 * monitor's own.
 *
 * What a query gets (each one is an AN_NET_EV_DNS event):
 *  - not a well-formed standard query (QR=0, OPCODE QUERY, exactly one
 *    question, no answer/authority records), class not IN: FORMERR /
 *    NOTIMP / REFUSED, answered locally (datagrams shorter than a DNS
 *    header, and responses (QR=1), are dropped unanswered);
 *  - name_allowed(name) false: REFUSED, answered locally; NOTHING is sent
 *    upstream for it, whatever its type (BL-37: no exfiltration in labels);
 *  - an allowed name with QTYPE A, AAAA, CNAME, TXT, MX, SRV, CAA, NS, SOA,
 *    PTR, DS, DNSKEY: a NEW query (name lower-cased, RD=1, EDNS(0) with the
 *    client's DO bit, nothing else of the client's message) goes upstream;
 *  - an allowed name with QTYPE HTTPS (65) or SVCB (64): NOERROR with no
 *    answer, locally (their ipv4hint/ipv6hint/ECH parameters would name
 *    addresses and keys the sets never admitted; clients fall back to A/AAAA);
 *  - any other QTYPE (ANY, AXFR, IXFR, NULL, ...): REFUSED, locally.
 * An upstream answer is accepted only when its ID, source and question
 * match the query sent.  For A/AAAA, the answer section is reduced to the
 * CNAME chain that starts at the query name (at most 8 links) and the A/AAAA
 * records owned by names on it; every such address is passed to add_addr
 * (with the allowed QUERY name, never a CNAME target) BEFORE the answer is
 * sent, and any add_addr failure turns the answer into SERVFAIL.  TTLs in
 * every answer are capped to limits.ttl_cap_s, so no client caches an
 * address longer than its set element lives; the additional section is
 * dropped except for OPT.  Upstream timeout: the next upstream is tried,
 * then SERVFAIL.  An answer larger than the client's UDP size (512, or its
 * EDNS size up to 1232) is sent truncated (TC=1, question only) so the client
 * retries over TCP, where it is sent whole.  Upstream queries go over UDP
 * (EDNS size 1232); a truncated upstream answer is asked again over TCP of
 * the same upstream (RFC 7766), once.
 *
 * Bounds (struct an_dnsfilter_limits; 0 picks the default): pending upstream
 * queries, TCP clients, per-query timeout, TCP idle timeout, TTL cap/floor.
 * When the pending bound is reached new queries get SERVFAIL at once.
 *
 * Thread-safety: one filter is used by one thread at a time (its dispatch,
 * fd and free must not race); distinct filters are independent.  No global
 * state; hooks are called only from dispatch.
 */
#ifndef AN_NET_DNSFILTER_H
#define AN_NET_DNSFILTER_H

#include <stdint.h>
#include <sys/socket.h>
#include "agentnest/error.h"
#include "net/net_hooks.h"

struct an_dnsfilter;

struct an_dnsfilter_limits {
  unsigned max_pending;     /* queries waiting for upstream at once (default 256) */
  unsigned max_tcp_clients; /* TCP connections at once; more are closed (default 32) */
  unsigned timeout_ms;      /* per upstream try (default 2000; 2 tries at most) */
  unsigned tcp_idle_ms;     /* a TCP client silent this long is closed (default 10000) */
  uint32_t ttl_cap_s;       /* TTL cap for answers and set elements (default 300) */
  uint32_t ttl_floor_s;     /* minimum set-element timeout (default 30); answers keep
                               their (capped) TTL, the element lives at least this long */
};

struct an_dnsfilter_config {
  int udp_fd;               /* bound UDP socket (made in the sandbox netns), or -1 */
  int tcp_fd;               /* bound, LISTENING TCP socket (same), or -1 */
                            /* at least one of the two; the filter takes OWNERSHIP
                               of both (closes them in free, and on a failed new) */
  const struct sockaddr_storage *upstreams; /* upstream servers (port included;
                               AF_INET/AF_INET6), or NULL: the nameservers of
                               resolv_conf, port 53 */
  size_t n_upstreams;       /* entries in upstreams (at most 8 are used) */
  const char *resolv_conf;  /* used when upstreams is NULL; NULL = "/etc/resolv.conf" */
  struct an_dnsfilter_limits limits;
};

/* Make a filter.  cfg and hooks are copied (hooks->ctx is borrowed and must
 * outlive the filter).  Errors: -EINVAL (no listening fd, a bad upstream
 * family, a fd that is not a socket of the right type), -ENOENT (no
 * nameserver in resolv_conf), -errno of epoll_create1/timerfd_create;
 * the message names the object.  On error the listening fds are closed too.
 * *out is owned by the caller: release with an_dnsfilter_free(). */
int an_dnsfilter_new(const struct an_dnsfilter_config *cfg, const struct an_net_hooks *hooks,
                     struct an_dnsfilter **out, an_error_t *err);

/* The epoll fd to poll for POLLIN (owned by the filter; do not close). */
int an_dnsfilter_fd(const struct an_dnsfilter *f);

/* Do all work that is ready (never blocks): read queries, answer them, read
 * upstream answers, expire timeouts.  Call when an_dnsfilter_fd() is
 * readable (calling it spuriously is harmless).  Returns 0, or a negative
 * errno with *err set only for a failure of the filter itself (epoll);
 * per-query failures are events, never errors. */
int an_dnsfilter_dispatch(struct an_dnsfilter *f, an_error_t *err);

/* Counters since creation (for `inspect`). */
struct an_dnsfilter_stats {
  uint64_t queries, allowed, refused, servfail, malformed, addrs_added;
};
void an_dnsfilter_stats(const struct an_dnsfilter *f, struct an_dnsfilter_stats *out);

/* Close every socket (listening, upstream, TCP clients) and free.  Pending
 * queries are dropped without an answer.  NULL allowed. */
void an_dnsfilter_free(struct an_dnsfilter *f);

#endif
