/* net/dns_msg.c — the DNS filter's message policy over libldns (see
 * net/dns_msg.h and, for the behaviour, net/dnsfilter.h).  Messages are
 * parsed with ldns_wire2pkt and built with ldns_pkt_* / ldns_pkt2wire
 * (RFC 1035 4; EDNS(0): RFC 6891); nothing of the wire format is handled
 * here by hand except reading the ID of a message ldns could not parse, to
 * answer it FORMERR (RFC 1035 4.1.1). */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include "net/dns_msg.h"

#define CHAIN_MAX 8            /* CNAME links followed from the query name */
#define EDNS_SIZE 1232         /* the DNS flag day 2020 UDP size */

enum an_dns_type_action an_dns_type_action(uint16_t t) {
  switch (t) {
  case LDNS_RR_TYPE_A: case LDNS_RR_TYPE_AAAA: case LDNS_RR_TYPE_CNAME: case LDNS_RR_TYPE_TXT:
  case LDNS_RR_TYPE_MX: case LDNS_RR_TYPE_SRV: case LDNS_RR_TYPE_CAA: case LDNS_RR_TYPE_NS:
  case LDNS_RR_TYPE_SOA: case LDNS_RR_TYPE_PTR: case LDNS_RR_TYPE_DS: case LDNS_RR_TYPE_DNSKEY:
    return AN_DNS_FORWARD;
  case LDNS_RR_TYPE_HTTPS: case LDNS_RR_TYPE_SVCB:
    return AN_DNS_NODATA;
  default:
    return AN_DNS_REFUSE;
  }
}

void an_dns_q_clear(struct an_dns_q *q) {
  if (q->pkt) ldns_pkt_free(q->pkt);
  memset(q, 0, sizeof *q);
}

/* "Example.COM." -> "example.com"; false if it does not fit. */
static bool dname_to_name(const ldns_rdf *d, char *out, size_t cap) {
  char *s = ldns_rdf2str(d);
  if (!s) return false;
  size_t n = strlen(s);
  if (n > 0 && s[n - 1] == '.') s[--n] = '\0';
  bool ok = n < cap;
  if (ok) {
    for (size_t i = 0; i <= n; i++) out[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char) (s[i] + 32) : s[i];
  }
  free(s);
  return ok;
}

int an_dns_q_parse(const uint8_t *wire, size_t len, struct an_dns_q *q) {
  memset(q, 0, sizeof *q);
  q->udp_max = 512;
  if (len < LDNS_HEADER_SIZE) return -1;
  q->id = (uint16_t) (wire[0] << 8 | wire[1]);
  if (wire[2] & 0x80) return -1;                               /* QR: a response */
  ldns_pkt *p = NULL;
  if (ldns_wire2pkt(&p, wire, len) != LDNS_STATUS_OK || !p) return LDNS_RCODE_FORMERR;
  q->pkt = p;
  if (ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY) return LDNS_RCODE_NOTIMPL;
  if (ldns_pkt_qdcount(p) != 1 || ldns_pkt_ancount(p) || ldns_pkt_nscount(p))
    return LDNS_RCODE_FORMERR;
  ldns_rr *question = ldns_rr_list_rr(ldns_pkt_question(p), 0);
  if (!question) return LDNS_RCODE_FORMERR;
  q->edns = ldns_pkt_edns(p);
  q->do_bit = ldns_pkt_edns_do(p);
  if (q->edns) {
    uint16_t s = ldns_pkt_edns_udp_size(p);
    q->udp_max = s < 512 ? 512 : s > EDNS_SIZE ? EDNS_SIZE : s;
  }
  q->qtype = (uint16_t) ldns_rr_get_type(question);
  if (ldns_rr_get_class(question) != LDNS_RR_CLASS_IN) return LDNS_RCODE_REFUSED;
  if (!dname_to_name(ldns_rr_owner(question), q->name, sizeof q->name)) return LDNS_RCODE_FORMERR;
  return 0;
}

/* A reply skeleton: the client's ID, question and RD/CD, QR and RA set. */
static ldns_pkt *reply_new(const struct an_dns_q *q, uint8_t rcode) {
  ldns_pkt *r = ldns_pkt_new();
  if (!r) return NULL;
  ldns_pkt_set_id(r, q->id);
  ldns_pkt_set_qr(r, true);
  ldns_pkt_set_ra(r, true);
  ldns_pkt_set_opcode(r, LDNS_PACKET_QUERY);
  ldns_pkt_set_rcode(r, rcode);
  if (q->pkt) {
    ldns_pkt_set_opcode(r, ldns_pkt_get_opcode(q->pkt));
    ldns_pkt_set_rd(r, ldns_pkt_rd(q->pkt));
    ldns_pkt_set_cd(r, ldns_pkt_cd(q->pkt));
    ldns_rr *question = ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0);
    if (question && ldns_pkt_qdcount(q->pkt) == 1) {
      ldns_rr *c = ldns_rr_clone(question);
      if (!c || !ldns_pkt_push_rr(r, LDNS_SECTION_QUESTION, c)) {
        if (c) ldns_rr_free(c);
        ldns_pkt_free(r);
        return NULL;
      }
    }
  }
  if (q->edns) {
    ldns_pkt_set_edns_udp_size(r, EDNS_SIZE);
    ldns_pkt_set_edns_do(r, q->do_bit);
  }
  return r;
}

/* Serialize r (freed), truncated to the question when over max (TC=1). */
static int finish(ldns_pkt *r, size_t max, uint8_t **wire, size_t *len) {
  ldns_status st = ldns_pkt2wire(wire, r, len);
  if (st == LDNS_STATUS_OK && *len > max) {
    free(*wire);
    *wire = NULL;
    ldns_rr_list_deep_free(ldns_pkt_answer(r));
    ldns_rr_list_deep_free(ldns_pkt_authority(r));
    ldns_pkt_set_answer(r, ldns_rr_list_new());
    ldns_pkt_set_authority(r, ldns_rr_list_new());
    ldns_pkt_set_ancount(r, 0);
    ldns_pkt_set_nscount(r, 0);
    ldns_pkt_set_tc(r, true);
    st = ldns_pkt2wire(wire, r, len);
  }
  ldns_pkt_free(r);
  return st == LDNS_STATUS_OK ? 0 : -ENOMEM;
}

int an_dns_local_reply(const struct an_dns_q *q, uint8_t rcode, uint8_t **wire, size_t *len) {
  ldns_pkt *r = reply_new(q, rcode);
  if (!r) return -ENOMEM;
  return finish(r, 65535, wire, len);
}

int an_dns_upstream_query(const struct an_dns_q *q, uint16_t id, uint8_t **wire, size_t *len) {
  ldns_rr *question = ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0);
  ldns_rdf *name = ldns_rdf_clone(ldns_rr_owner(question));
  if (!name) return -ENOMEM;
  ldns_dname2canonical(name);                                  /* lower case */
  ldns_pkt *up = ldns_pkt_query_new(name, (ldns_rr_type) q->qtype, LDNS_RR_CLASS_IN, LDNS_RD);
  if (!up) { ldns_rdf_deep_free(name); return -ENOMEM; }
  ldns_pkt_set_id(up, id);
  ldns_pkt_set_edns_udp_size(up, EDNS_SIZE);
  ldns_pkt_set_edns_do(up, q->do_bit);
  ldns_status st = ldns_pkt2wire(wire, up, len);
  ldns_pkt_free(up);
  return st == LDNS_STATUS_OK ? 0 : -ENOMEM;
}

static bool in_chain(ldns_rdf *const *chain, size_t n, const ldns_rdf *d) {
  for (size_t i = 0; i < n; i++)
    if (ldns_dname_compare(chain[i], d) == 0) return true;
  return false;
}

static int push_capped(ldns_pkt *r, ldns_pkt_section sec, const ldns_rr *rr, uint32_t cap) {
  ldns_rr *c = ldns_rr_clone(rr);
  if (!c) return -ENOMEM;
  if (ldns_rr_ttl(c) > cap) ldns_rr_set_ttl(c, cap);
  if (!ldns_pkt_push_rr(r, sec, c)) { ldns_rr_free(c); return -ENOMEM; }
  return 0;
}

int an_dns_answer(const struct an_dns_q *q, const uint8_t *upw, size_t up_len, uint16_t up_id,
                  uint32_t ttl_cap, uint32_t ttl_floor, an_dns_add_addr_fn add_addr, void *ctx,
                  uint8_t **wire, size_t *len, unsigned *naddrs) {
  *naddrs = 0;
  ldns_pkt *up = NULL;
  if (ldns_wire2pkt(&up, upw, up_len) != LDNS_STATUS_OK || !up) return 1;
  int ret = 1;
  ldns_pkt *r = NULL;
  ldns_rr *uq = ldns_rr_list_rr(ldns_pkt_question(up), 0);
  ldns_rr *cq = ldns_rr_list_rr(ldns_pkt_question(q->pkt), 0);
  if (ldns_pkt_id(up) != up_id || !ldns_pkt_qr(up) || ldns_pkt_qdcount(up) != 1 || !uq ||
      ldns_rr_get_type(uq) != ldns_rr_get_type(cq) || ldns_rr_get_class(uq) != LDNS_RR_CLASS_IN ||
      ldns_dname_compare(ldns_rr_owner(uq), ldns_rr_owner(cq)) != 0)
    goto out;
  ret = -ENOMEM;
  uint8_t rcode = ldns_pkt_get_rcode(up);
  r = reply_new(q, rcode);
  if (!r) goto out;
  if (ldns_pkt_tc(up)) {                 /* only an upstream TCP answer gets here truncated (dnsfilter.c retries UDP over TCP): passed on */
    ldns_pkt_set_tc(r, true);
  } else if (rcode == LDNS_RCODE_NOERROR || rcode == LDNS_RCODE_NXDOMAIN) {
    /* The CNAME chain from the query name, in whatever order the records come. */
    ldns_rdf *chain[CHAIN_MAX + 1];
    size_t n = 0;
    chain[n++] = ldns_rr_owner(cq);
    ldns_rr_list *ans = ldns_pkt_answer(up);
    size_t count = ldns_rr_list_rr_count(ans);
    for (bool grew = true; grew && n <= CHAIN_MAX;) {
      grew = false;
      for (size_t i = 0; i < count && n <= CHAIN_MAX; i++) {
        ldns_rr *rr = ldns_rr_list_rr(ans, i);
        if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME || ldns_rr_rd_count(rr) < 1) continue;
        ldns_rdf *target = ldns_rr_rdf(rr, 0);
        if (in_chain(chain, n, ldns_rr_owner(rr)) && !in_chain(chain, n, target)) {
          chain[n++] = target;
          grew = true;
        }
      }
    }
    for (size_t i = 0; i < count; i++) {
      ldns_rr *rr = ldns_rr_list_rr(ans, i);
      uint16_t t = (uint16_t) ldns_rr_get_type(rr);
      if (ldns_rr_get_class(rr) != LDNS_RR_CLASS_IN || !in_chain(chain, n, ldns_rr_owner(rr)))
        continue;
      if (t != LDNS_RR_TYPE_CNAME && t != q->qtype) continue;   /* RRSIG, DNAME, strays */
      if (t == LDNS_RR_TYPE_A || t == LDNS_RR_TYPE_AAAA) {
        ldns_rdf *a = ldns_rr_rd_count(rr) == 1 ? ldns_rr_rdf(rr, 0) : NULL;
        size_t want = t == LDNS_RR_TYPE_A ? 4 : 16;
        if (!a || ldns_rdf_size(a) != want) continue;
        uint32_t ttl = ldns_rr_ttl(rr) > ttl_cap ? ttl_cap : ldns_rr_ttl(rr);
        if (ttl < ttl_floor) ttl = ttl_floor;
        if (ttl < 1) ttl = 1;
        if (!add_addr || add_addr(ctx, q->name, t == LDNS_RR_TYPE_A ? AF_INET : AF_INET6,
                                  ldns_rdf_data(a), ttl) < 0) {
          ret = -EIO;
          goto out;
        }
        (*naddrs)++;
      }
      if (push_capped(r, LDNS_SECTION_ANSWER, rr, ttl_cap) < 0) goto out;
    }
    /* Authority: only the SOA of a negative answer (RFC 2308 caching). */
    ldns_rr_list *auth = ldns_pkt_authority(up);
    for (size_t i = 0; i < ldns_rr_list_rr_count(auth); i++) {
      ldns_rr *rr = ldns_rr_list_rr(auth, i);
      if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_SOA &&
          push_capped(r, LDNS_SECTION_AUTHORITY, rr, ttl_cap) < 0)
        goto out;
    }
  }
  ret = finish(r, q->udp_max, wire, len);
  r = NULL;
out:
  if (r) ldns_pkt_free(r);
  ldns_pkt_free(up);
  return ret;
}
