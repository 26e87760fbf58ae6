/* net/dns_msg.h — the DNS filter's message policy, over libldns (internal to
 * net/dnsfilter.c): classify a client query, build the fresh upstream query,
 * reduce an upstream answer to what may reach the sandbox, build local
 * answers.  No sockets here (those are dnsfilter.c's); pure apart from the
 * add_addr callback.  Thread-safe (no shared state). */
#ifndef AN_NET_DNS_MSG_H
#define AN_NET_DNS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ldns/ldns.h>
#include "net/net_hooks.h"

/* A client's query, parsed. */
struct an_dns_q {
  ldns_pkt *pkt;                 /* the client's message (owned), NULL if unparseable */
  uint16_t id;                   /* the client's ID */
  uint16_t qtype;
  char name[AN_NET_NAME_BUF];    /* lower case, no trailing dot; "" for the root */
  bool edns, do_bit;             /* the client sent EDNS(0) / the DO bit */
  uint16_t udp_max;              /* largest answer the client takes (UDP: 512 or its EDNS
                                    size up to 1232; the caller sets 65535 for TCP) */
};

/* What to do with a query's type (see dnsfilter.h for the list). */
enum an_dns_type_action { AN_DNS_FORWARD, AN_DNS_NODATA, AN_DNS_REFUSE };
enum an_dns_type_action an_dns_type_action(uint16_t qtype);

/* Parse a client message into *q (q->pkt owned by q; an_dns_q_clear frees).
 * Returns 0 for a standard query to pass on to policy, -1 to drop silently
 * (shorter than a header, or a response: never answer answers), or an
 * RCODE to answer locally (LDNS_RCODE_FORMERR, _NOTIMP, _REFUSED). */
int an_dns_q_parse(const uint8_t *wire, size_t len, struct an_dns_q *q);
void an_dns_q_clear(struct an_dns_q *q);

/* A local answer to q with rcode and no records (wire malloc'd; *len).
 * Returns 0, or -ENOMEM. */
int an_dns_local_reply(const struct an_dns_q *q, uint8_t rcode, uint8_t **wire, size_t *len);

/* The upstream query for q: a NEW message with q's name (lower case), type,
 * class IN, RD, the given id, EDNS(0) size 1232 with the client's DO bit.
 * Returns 0, or -ENOMEM. */
int an_dns_upstream_query(const struct an_dns_q *q, uint16_t id, uint8_t **wire, size_t *len);

typedef int (*an_dns_add_addr_fn)(void *ctx, const char *name, int family, const void *addr,
                                  uint32_t ttl_s);

/* Turn an upstream message into the client's answer.  Returns
 *   0   the answer is in wire and len (add_addr was called, and succeeded, for
 *       every address it carries; *naddrs counts them);
 *   1   not the answer to our query (ID, QR or question differ): ignore it;
 *  -EIO add_addr failed (answer SERVFAIL);   -ENOMEM.
 * TTLs are capped to ttl_cap; add_addr gets max(ttl_floor, capped TTL). */
int an_dns_answer(const struct an_dns_q *q, const uint8_t *up, size_t up_len, uint16_t up_id,
                  uint32_t ttl_cap, uint32_t ttl_floor, an_dns_add_addr_fn add_addr, void *ctx,
                  uint8_t **wire, size_t *len, unsigned *naddrs);

#endif
