/* tests/fuzz/dns_msg_fuzz.c — libFuzzer harness for the DNS filter's
 * message policy (net/dns_msg.c, over libldns): client queries a sandbox
 * sends, and upstream answers the filter reduces before they reach it.
 *
 * Input: first byte even -> the rest is a client message; odd -> the rest is
 * an upstream answer to the query "allowed.example A" with the ID taken
 * from its own first two bytes.  Properties: no crash, leak or sanitizer
 * report; a parsed query has a lower-case name; local replies and upstream
 * queries always serialize; an accepted answer parses, carries only A
 * records that were passed to add_addr (the count matches), no TTL above
 * the cap, and the client's ID.  Built and run by tests/fuzz/run-fuzz.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/dns_msg.h"

#define CAP 300

static unsigned added;
static int add_addr(void *ctx, const char *name, int family, const void *addr, uint32_t ttl) {
  if (strcmp(name, "allowed.example") || ttl < 1 || ttl > CAP) abort();
  added++;
  return 0;
}

static void client_path(const uint8_t *d, size_t n) {
  struct an_dns_q q;
  int r = an_dns_q_parse(d, n, &q);
  if (r >= 0) {
    uint8_t *w = NULL;
    size_t len = 0;
    if (an_dns_local_reply(&q, r ? (uint8_t) r : LDNS_RCODE_REFUSED, &w, &len) != 0) abort();
    free(w);
    if (r == 0) {
      for (const char *c = q.name; *c; c++) if (*c >= 'A' && *c <= 'Z') abort();
      w = NULL;
      if (an_dns_upstream_query(&q, 0x1234, &w, &len) != 0) abort();
      free(w);
    }
  }
  an_dns_q_clear(&q);
}

static void answer_path(const uint8_t *d, size_t n) {
  static const uint8_t query[] = "\x42\x42\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                                 "\x07" "allowed" "\x07" "example" "\x00\x00\x01\x00\x01";
  struct an_dns_q q;
  if (an_dns_q_parse(query, sizeof query - 1, &q) != 0) abort();
  uint16_t id = n >= 2 ? (uint16_t) (d[0] << 8 | d[1]) : 0;
  uint8_t *w = NULL;
  size_t len = 0;
  unsigned naddrs = 0;
  added = 0;
  int r = an_dns_answer(&q, d, n, id, CAP, 30, add_addr, NULL, &w, &len, &naddrs);
  if (r == 0) {
    ldns_pkt *p = NULL;
    if (ldns_wire2pkt(&p, w, len) != LDNS_STATUS_OK) abort();
    if (ldns_pkt_id(p) != 0x4242 || naddrs != added) abort();
    unsigned a = 0;
    ldns_rr_list *an = ldns_pkt_answer(p);
    for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
      ldns_rr *rr = ldns_rr_list_rr(an, i);
      if (ldns_rr_ttl(rr) > CAP) abort();
      if (ldns_rr_get_type(rr) == LDNS_RR_TYPE_A) a++;
      else if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME) abort();
    }
    if (a != naddrs && !ldns_pkt_tc(p)) { fprintf(stderr, "%u A records, %u admitted\n", a, naddrs); abort(); }
    ldns_pkt_free(p);
    free(w);
  } else if (w) {
    abort();
  }
  an_dns_q_clear(&q);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] % 2 == 0) client_path(data + 1, size - 1);
  else answer_path(data + 1, size - 1);
  return 0;
}
