/* Integration tests for net/dnsfilter.h on the real kernel: the test moves
 * into a netns of its own ("host"), runs dnsmasq there as the upstream
 * authoritative server (192.0.2.53, --log-queries), and makes a "sandbox"
 * netns where the filter's listeners live (127.0.0.1:53); the test's client
 * sockets are made in the sandbox netns, the filter's upstream sockets in
 * the host one, as in the monitor.  The filter runs on this test's own
 * poll loop (pump()).  Proves: allowed names resolve and add_addr runs
 * BEFORE the answer reaches the client; non-allowed names get REFUSED and
 * no query for them reaches dnsmasq (bl_37_dns_exfiltration); CNAME
 * chains; TTL cap; DNS over TCP; malformed messages; SERVFAIL on add_addr
 * failure and upstream timeout. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <ldns/ldns.h>
#include "net/dnsfilter.h"
#include "netns_fixture.h"
#include "rm_tree.h"
#include "util.h"

struct hk {
  int add_calls, events_deny, events_allow, events_error;
  char add_name[AN_NET_NAME_BUF];
  int add_family;
  uint8_t add_addr[16];
  uint32_t add_ttl;
  int client_fd;                  /* the socket whose answer must not have arrived yet */
  int answered_before_add;        /* times add_addr found the answer already there */
};

static struct {
  int host, sb;
  pid_t dnsmasq;
  char dir[64], log[128];
  struct an_dnsfilter *f;
  struct hk hk;
} E;

static bool name_allowed(void *ctx, const char *name, uint16_t port) {
  size_t n = strlen(name), s = strlen(".allowed.example");
  return !strcmp(name, "allowed.example") || (n > s && !strcmp(name + n - s, ".allowed.example"));
}

static int add_addr(void *ctx, const char *name, int family, const void *addr, uint32_t ttl) {
  struct hk *h = ctx;
  h->add_calls++;
  snprintf(h->add_name, sizeof h->add_name, "%s", name);
  h->add_family = family;
  memcpy(h->add_addr, addr, family == AF_INET ? 4 : 16);
  h->add_ttl = ttl;
  char b;
  if (h->client_fd >= 0 && recv(h->client_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0) h->answered_before_add++;
  return strncmp(name, "fail.", 5) ? 0 : -EIO;
}

static void on_event(void *ctx, const struct an_net_event *ev) {
  struct hk *h = ctx;
  cr_assert_eq(ev->kind, AN_NET_EV_DNS);
  cr_assert_not_null(ev->reason);
  if (ev->verdict == AN_NET_DENY) h->events_deny++;
  else if (ev->verdict == AN_NET_ALLOW) h->events_allow++;
  else h->events_error++;
}

static const struct an_net_hooks hooks = {&E.hk, name_allowed, add_addr, NULL, on_event};

static bool dnsmasq_up(void *arg) {
  char *log = an_test_read_file(E.log, NULL);
  bool up = log && strstr(log, "started");
  free(log);
  return up;
}

static struct an_dnsfilter *filter_new(const char *upstream, struct an_dnsfilter_limits lim) {
  struct sockaddr_storage up;
  socklen_t len;
  nf_sockaddr(upstream, 53, &up, &len);
  struct an_dnsfilter_config cfg = {
    .udp_fd = nf_socket(E.sb, SOCK_DGRAM, "127.0.0.1", 53),
    .tcp_fd = nf_socket(E.sb, SOCK_STREAM, "127.0.0.1", 53),
    .upstreams = &up, .n_upstreams = 1, .limits = lim,
  };
  an_error_t err = NULL;
  struct an_dnsfilter *f = NULL;
  int r = an_dnsfilter_new(&cfg, &hooks, &f, &err);
  cr_assert_eq(r, 0, "an_dnsfilter_new: %s", err ? err->msg : "");
  return f;
}

static void setup(void) {
  memset(&E, 0, sizeof E);
  E.hk.client_fd = -1;
  if (an_test_sh("command -v dnsmasq >/dev/null") != 0) cr_skip_test("dnsmasq not installed");
  E.host = nf_host_enter();
  char big[201];
  memset(big, 'b', 200);
  big[200] = '\0';
  snprintf(E.dir, sizeof E.dir, "/tmp/an-dnsfilter-%d", (int) getpid());
  cr_assert_eq(mkdir(E.dir, 0700), 0);
  snprintf(E.log, sizeof E.log, "%s/dnsmasq.log", E.dir);
  cr_assert_eq(an_test_sh("ip addr add 192.0.2.53/32 dev lo && ip addr add 192.0.2.55/32 dev lo"), 0);
  E.dnsmasq = nf_spawn(E.host, "/dev/null",
      "exec dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts "
      "--bind-interfaces --listen-address=192.0.2.53 --port=53 --user=root --group=root "
      "--pid-file=%s/pid --log-queries --log-facility=%s --local-ttl=3600 "
      "--host-record=allowed.example,192.0.2.10,2001:db8::10 "
      "--host-record=cdn.allowed.example,192.0.2.11 --cname=www.allowed.example,cdn.allowed.example "
      "--host-record=target.other.example,192.0.2.20 --cname=alias.allowed.example,target.other.example "
      "--host-record=fail.allowed.example,192.0.2.12 --txt-record=allowed.example,hello "
      "--txt-record=big.allowed.example,%s,%s,%s "
      "--txt-record=huge.allowed.example,%s,%s,%s,%s,%s,%s,%s "
      "--address=/exfil.example/192.0.2.99", E.dir, E.log, big, big, big, big, big, big, big, big, big, big);
  cr_assert(nf_wait(dnsmasq_up, NULL, 250), "dnsmasq did not start (log %s)", E.log);
  E.sb = nf_sandbox_netns();
  E.f = filter_new("192.0.2.53", (struct an_dnsfilter_limits) {0});
}

static void teardown(void) {
  an_dnsfilter_free(E.f);
  nf_stop(E.dnsmasq);
  if (E.dir[0]) an_test_rm_tree(E.dir);
}

TestSuite(dnsfilter, .init = setup, .fini = teardown, .timeout = 120);

/* A client socket in the sandbox netns, connected to the filter. */
static int client_port(int type, unsigned port) {
  int back = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  nf_enter(E.sb);
  int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  cr_assert(fd >= 0 && connect(fd, (struct sockaddr *) &a, sizeof a) == 0, "client connect: %s", strerror(errno));
  nf_enter(back);
  close(back);
  return fd;
}

static int client(int type) { return client_port(type, 53); }

/* Run the filter until `fd` is readable (true) or ~10 s of polling pass. */
static bool pump(struct an_dnsfilter *f, int fd) {
  for (int i = 0; i < 200; i++) {
    struct pollfd p[2] = {{an_dnsfilter_fd(f), POLLIN, 0}, {fd, POLLIN, 0}};
    cr_assert(poll(p, 2, 50) >= 0);
    if (p[1].revents) return true;
    if (p[0].revents) {
      an_error_t err = NULL;
      cr_assert_eq(an_dnsfilter_dispatch(f, &err), 0, "dispatch: %s", err ? err->msg : "");
    }
  }
  return false;
}

static void send_wire(int fd, bool tcp, const uint8_t *w, size_t n) {
  if (tcp) {
    uint8_t l[2] = {(uint8_t) (n >> 8), (uint8_t) n};
    cr_assert_eq(send(fd, l, 2, MSG_NOSIGNAL), 2);
  }
  cr_assert_eq(send(fd, w, n, MSG_NOSIGNAL), (ssize_t) n, "send query: %s", strerror(errno));
}

static void send_query(int fd, bool tcp, const char *name, ldns_rr_type type, uint16_t id) {
  ldns_rdf *d = ldns_dname_new_frm_str(name);
  cr_assert_not_null(d, "dname %s", name);
  ldns_pkt *q = ldns_pkt_query_new(d, type, LDNS_RR_CLASS_IN, LDNS_RD);
  ldns_pkt_set_id(q, id);
  uint8_t *w = NULL;
  size_t n = 0;
  cr_assert_eq(ldns_pkt2wire(&w, q, &n), LDNS_STATUS_OK);
  send_wire(fd, tcp, w, n);
  free(w);
  ldns_pkt_free(q);
}

/* Wait for and parse one answer (NULL when none came). */
static ldns_pkt *recv_answer(struct an_dnsfilter *f, int fd, bool tcp) {
  if (!pump(f, fd)) return NULL;
  uint8_t buf[65536];
  ssize_t n;
  if (tcp) {
    uint8_t l[2];
    cr_assert_eq(recv(fd, l, 2, MSG_WAITALL), 2, "TCP answer length");
    size_t want = (size_t) l[0] << 8 | l[1];
    n = recv(fd, buf, want, MSG_WAITALL);
    cr_assert_eq(n, (ssize_t) want);
  } else {
    n = recv(fd, buf, sizeof buf, 0);
    cr_assert(n > 0);
  }
  ldns_pkt *p = NULL;
  cr_assert_eq(ldns_wire2pkt(&p, buf, (size_t) n), LDNS_STATUS_OK, "answer parses");
  return p;
}

static ldns_pkt *ask(int fd, bool tcp, const char *name, ldns_rr_type type, uint16_t id) {
  send_query(fd, tcp, name, type, id);
  ldns_pkt *p = recv_answer(E.f, fd, tcp);
  cr_assert_not_null(p, "no answer for %s", name);
  cr_assert_eq(ldns_pkt_id(p), id, "answer ID");
  cr_assert(ldns_pkt_qr(p));
  return p;
}

static int dnsmasq_log_count(const char *needle) {
  char *log = an_test_read_file(E.log, NULL);
  cr_assert_not_null(log);
  int n = 0;
  for (char *p = log; (p = strstr(p, needle)); p++) n++;
  free(log);
  return n;
}

/* The first A/AAAA address in the answer section, as text. */
static bool answer_has(ldns_pkt *p, ldns_rr_type type, const char *text, uint32_t *ttl) {
  ldns_rr_list *a = ldns_pkt_answer(p);
  for (size_t i = 0; i < ldns_rr_list_rr_count(a); i++) {
    ldns_rr *rr = ldns_rr_list_rr(a, i);
    if (ldns_rr_get_type(rr) != type) continue;
    char *s = ldns_rdf2str(ldns_rr_rdf(rr, 0));
    bool eq = s && !strcmp(s, text);
    free(s);
    if (eq) { if (ttl) *ttl = ldns_rr_ttl(rr); return true; }
  }
  return false;
}

Test(dnsfilter, allowed_name_resolves_and_add_addr_runs_before_the_answer) {
  int fd = client(SOCK_DGRAM);
  E.hk.client_fd = fd;
  ldns_pkt *p = ask(fd, false, "Allowed.Example.", LDNS_RR_TYPE_A, 0x1111);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
  uint32_t ttl = 0;
  cr_assert(answer_has(p, LDNS_RR_TYPE_A, "192.0.2.10", &ttl), "A 192.0.2.10 in the answer");
  cr_assert_eq(ttl, 300, "TTL 3600 capped to 300 in the answer, got %u", ttl);
  cr_assert_eq(E.hk.add_calls, 1);
  cr_assert_str_eq(E.hk.add_name, "allowed.example");
  cr_assert_eq(E.hk.add_family, AF_INET);
  cr_assert_eq(memcmp(E.hk.add_addr, "\xc0\x00\x02\x0a", 4), 0, "add_addr got 192.0.2.10");
  cr_assert_eq(E.hk.add_ttl, 300, "set element timeout = capped TTL, got %u", E.hk.add_ttl);
  cr_assert_eq(E.hk.answered_before_add, 0, "the answer was at the client before add_addr ran");
  ldns_pkt_free(p);

  p = ask(fd, false, "allowed.example", LDNS_RR_TYPE_AAAA, 0x2222);
  cr_assert(answer_has(p, LDNS_RR_TYPE_AAAA, "2001:db8::10", NULL));
  cr_assert_eq(E.hk.add_calls, 2);
  cr_assert_eq(E.hk.add_family, AF_INET6);
  cr_assert_eq(E.hk.answered_before_add, 0);
  ldns_pkt_free(p);
  struct an_dnsfilter_stats st;
  an_dnsfilter_stats(E.f, &st);
  cr_assert_eq(st.allowed, 2);
  cr_assert_eq(st.addrs_added, 2);
  cr_assert_eq(E.hk.events_allow, 2);
  close(fd);
}

Test(dnsfilter, cname_chain_addresses_are_admitted_for_the_allowed_query_name) {
  int fd = client(SOCK_DGRAM);
  ldns_pkt *p = ask(fd, false, "www.allowed.example", LDNS_RR_TYPE_A, 7);
  cr_assert(answer_has(p, LDNS_RR_TYPE_A, "192.0.2.11", NULL), "the chain's final address is answered");
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 2, "CNAME + A");
  cr_assert_eq(E.hk.add_calls, 1);
  cr_assert_str_eq(E.hk.add_name, "www.allowed.example", "admitted under the query name");
  ldns_pkt_free(p);
  /* A chain leaving the allowed zone: admitted for the ALLOWED query name only. */
  p = ask(fd, false, "alias.allowed.example", LDNS_RR_TYPE_A, 8);
  cr_assert(answer_has(p, LDNS_RR_TYPE_A, "192.0.2.20", NULL));
  cr_assert_str_eq(E.hk.add_name, "alias.allowed.example");
  ldns_pkt_free(p);
  /* ... while asking for the target itself is refused. */
  p = ask(fd, false, "target.other.example", LDNS_RR_TYPE_A, 9);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
  cr_assert_eq(E.hk.add_calls, 2);
  ldns_pkt_free(p);
  close(fd);
}

Test(dnsfilter, bl_37_dns_exfiltration) {
  /* Many random subdomains of a non-allowed zone, several types, UDP and
   * TCP: every one REFUSED by the filter, and dnsmasq (which would answer
   * *.exfil.example) never sees a single query for them. */
  int u = client(SOCK_DGRAM), t = client(SOCK_STREAM);
  const ldns_rr_type types[] = {LDNS_RR_TYPE_A, LDNS_RR_TYPE_TXT, LDNS_RR_TYPE_AAAA, LDNS_RR_TYPE_ANY,
                                LDNS_RR_TYPE_HTTPS, LDNS_RR_TYPE_NULL};
  int n = 0;
  for (int i = 0; i < 240; i++) {
    uint8_t rnd[8];
    cr_assert_eq(getrandom(rnd, sizeof rnd, 0), (ssize_t) sizeof rnd);
    char name[128];
    snprintf(name, sizeof name, "%02x%02x%02x%02x%02x%02x%02x%02x.%s", rnd[0], rnd[1], rnd[2], rnd[3],
             rnd[4], rnd[5], rnd[6], rnd[7], i % 3 == 0 ? "a.exfil.example" : "exfil.example");
    bool tcp = i % 4 == 0;
    ldns_pkt *p = ask(tcp ? t : u, tcp, name, types[i % 6], (uint16_t) (100 + i));
    cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED, "%s type %d", name, types[i % 6]);
    cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 0);
    ldns_pkt_free(p);
    n++;
  }
  /* Names that only look allowed are refused too. */
  const char *lookalike[] = {"allowed.example.exfil.example", "notallowed.example", "xallowed.example"};
  for (int i = 0; i < 3; i++) {
    ldns_pkt *p = ask(u, false, lookalike[i], LDNS_RR_TYPE_A, (uint16_t) (900 + i));
    cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED, "%s", lookalike[i]);
    ldns_pkt_free(p);
  }
  /* A marker through the same path proves the log is live and written. */
  ldns_pkt *p = ask(u, false, "allowed.example", LDNS_RR_TYPE_TXT, 999);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR, "TXT of an allowed name is forwarded");
  ldns_pkt_free(p);
  cr_assert_geq(dnsmasq_log_count("query[TXT] allowed.example"), 1, "marker query in dnsmasq's log");
  cr_assert_eq(dnsmasq_log_count("exfil"), 0, "a query for *.exfil.example reached the upstream");
  cr_assert_eq(dnsmasq_log_count("xallowed"), 0);
  cr_assert_eq(E.hk.add_calls, 0, "nothing admitted");
  struct an_dnsfilter_stats st;
  an_dnsfilter_stats(E.f, &st);
  cr_assert_eq(st.refused, (uint64_t) n + 3);
  cr_assert_eq(E.hk.events_deny, n + 3, "one DENY event per refused query");
  close(u);
  close(t);
}

Test(dnsfilter, dns_over_tcp_answers_pipelined_queries_in_order) {
  int t = client(SOCK_STREAM);
  send_query(t, true, "allowed.example", LDNS_RR_TYPE_A, 41);
  send_query(t, true, "nope.example", LDNS_RR_TYPE_A, 42);
  send_query(t, true, "cdn.allowed.example", LDNS_RR_TYPE_A, 43);
  uint16_t want[] = {41, 42, 43};
  int rc[] = {LDNS_RCODE_NOERROR, LDNS_RCODE_REFUSED, LDNS_RCODE_NOERROR};
  for (int i = 0; i < 3; i++) {
    ldns_pkt *p = recv_answer(E.f, t, true);
    cr_assert_not_null(p, "answer %d over TCP", i);
    cr_assert_eq(ldns_pkt_id(p), want[i]);
    cr_assert_eq(ldns_pkt_get_rcode(p), rc[i]);
    ldns_pkt_free(p);
  }
  cr_assert_eq(E.hk.add_calls, 2);
  close(t);
}

Test(dnsfilter, malformed_and_unusual_messages_get_local_answers) {
  int u = client(SOCK_DGRAM);
  /* Shorter than a header: dropped (the next answer is the next query's). */
  send_wire(u, false, (const uint8_t *) "\x12\x34\x01", 3);
  /* A response: dropped, never answered (no loops). */
  send_wire(u, false, (const uint8_t *) "\x55\x55\x81\x80\x00\x00\x00\x00\x00\x00\x00\x00", 12);
  ldns_pkt *p = ask(u, false, "allowed.example", LDNS_RR_TYPE_A, 0x0101);
  ldns_pkt_free(p);
  /* A header that promises a question that is not there: FORMERR, same ID. */
  send_wire(u, false, (const uint8_t *) "\xab\xcd\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03""abc", 16);
  p = recv_answer(E.f, u, false);
  cr_assert_not_null(p);
  cr_assert_eq(ldns_pkt_id(p), 0xabcd);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_FORMERR);
  ldns_pkt_free(p);
  /* Two questions: FORMERR. */
  send_wire(u, false, (const uint8_t *) "\xab\xce\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00"
                      "\x01""a\x00\x00\x01\x00\x01\x01""b\x00\x00\x01\x00\x01", 26);
  p = recv_answer(E.f, u, false);
  cr_assert_not_null(p);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_FORMERR);
  ldns_pkt_free(p);
  /* A compression pointer loop: ldns refuses it, we answer FORMERR. */
  send_wire(u, false, (const uint8_t *) "\xab\xcf\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\xc0\x0c\x00\x01\x00\x01", 18);
  p = recv_answer(E.f, u, false);
  cr_assert_not_null(p);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_FORMERR);
  ldns_pkt_free(p);
  /* Class CH (version.bind): REFUSED. */
  send_wire(u, false, (const uint8_t *) "\xab\xd0\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
                      "\x07""version\x04""bind\x00\x00\x10\x00\x03", 30);
  p = recv_answer(E.f, u, false);
  cr_assert_not_null(p);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
  ldns_pkt_free(p);
  /* An allowed name, but ANY: REFUSED; HTTPS: empty NOERROR; neither upstream. */
  p = ask(u, false, "allowed.example", LDNS_RR_TYPE_ANY, 0x0202);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_REFUSED);
  ldns_pkt_free(p);
  p = ask(u, false, "allowed.example", LDNS_RR_TYPE_HTTPS, 0x0303);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 0);
  ldns_pkt_free(p);
  cr_assert_eq(dnsmasq_log_count("query[ANY]"), 0);
  cr_assert_eq(dnsmasq_log_count("type=65"), 0);
  cr_assert_eq(dnsmasq_log_count("query[HTTPS]"), 0);
  struct an_dnsfilter_stats st;
  an_dnsfilter_stats(E.f, &st);
  cr_assert_eq(st.malformed, 6, "malformed counted: %llu", (unsigned long long) st.malformed);
  close(u);
}

Test(dnsfilter, add_addr_failure_answers_servfail_without_the_address) {
  int u = client(SOCK_DGRAM);
  ldns_pkt *p = ask(u, false, "fail.allowed.example", LDNS_RR_TYPE_A, 0x0404);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 0, "no address given out");
  cr_assert_eq(E.hk.add_calls, 1);
  cr_assert_eq(E.hk.events_error, 1);
  ldns_pkt_free(p);
  close(u);
}

Test(dnsfilter, silent_upstream_times_out_into_servfail) {
  an_dnsfilter_free(E.f);
  /* 192.0.2.55:53 holds a socket that never answers. */
  int sink = nf_socket(E.host, SOCK_DGRAM, "192.0.2.55", 53);
  E.f = filter_new("192.0.2.55", (struct an_dnsfilter_limits) {.timeout_ms = 100, .max_pending = 2});
  int u = client(SOCK_DGRAM);
  send_query(u, false, "allowed.example", LDNS_RR_TYPE_A, 1);
  send_query(u, false, "cdn.allowed.example", LDNS_RR_TYPE_A, 2);
  send_query(u, false, "www.allowed.example", LDNS_RR_TYPE_A, 3);   /* over the pending bound */
  int seen[4] = {0};
  for (int i = 0; i < 3; i++) {
    ldns_pkt *p = recv_answer(E.f, u, false);
    cr_assert_not_null(p, "answer %d", i);
    cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_SERVFAIL);
    if (i == 0) cr_assert_eq(ldns_pkt_id(p), 3, "the query over the bound is answered at once");
    seen[ldns_pkt_id(p) & 3]++;
    ldns_pkt_free(p);
  }
  cr_assert(seen[1] && seen[2] && seen[3]);
  char buf[512];
  int got = 0;
  while (recv(sink, buf, sizeof buf, MSG_DONTWAIT) > 0) got++;
  cr_assert_eq(got, 4, "two tries for each of the two pending queries, got %d", got);
  close(sink);
  close(u);
}

Test(dnsfilter, bad_configuration_is_refused_and_fds_closed) {
  an_error_t err = NULL;
  struct an_dnsfilter *f = NULL;
  struct an_dnsfilter_config none = {.udp_fd = -1, .tcp_fd = -1};
  cr_assert_eq(an_dnsfilter_new(&none, &hooks, &f, &err), -EINVAL);
  cr_assert_null(f);
  cr_assert(strstr(err->msg, "listening socket"), "%s", err->msg);
  an_error_free(&err);

  char path[160];
  snprintf(path, sizeof path, "%s/resolv.conf", E.dir);
  an_test_write_file(path, "search example\n", 15, 0644);
  int fd = nf_socket(E.sb, SOCK_DGRAM, "127.0.0.1", 5353);
  struct an_dnsfilter_config cfg = {.udp_fd = fd, .tcp_fd = -1, .resolv_conf = path};
  cr_assert_eq(an_dnsfilter_new(&cfg, &hooks, &f, &err), -ENOENT);
  cr_assert(strstr(err->msg, path), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(fcntl(fd, F_GETFD), -1, "listening fd closed on failure");

  an_test_write_file(path, "nameserver 192.0.2.53\n", 22, 0644);
  cfg.udp_fd = nf_socket(E.sb, SOCK_DGRAM, "127.0.0.1", 5353);
  cr_assert_eq(an_dnsfilter_new(&cfg, &hooks, &f, &err), 0, "%s", err ? err->msg : "");
  /* The upstream read from that resolv.conf answers. */
  int u = client_port(SOCK_DGRAM, 5353);
  send_query(u, false, "allowed.example", LDNS_RR_TYPE_A, 77);
  ldns_pkt *p = recv_answer(f, u, false);
  cr_assert_not_null(p, "answer through the resolv.conf upstream");
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
  cr_assert(answer_has(p, LDNS_RR_TYPE_A, "192.0.2.10", NULL));
  ldns_pkt_free(p);
  close(u);
  an_dnsfilter_free(f);
}

Test(dnsfilter, answer_over_the_udp_size_is_truncated_and_complete_over_tcp) {
  /* ~620 bytes of TXT: over the 512 a client without EDNS takes. */
  int u = client(SOCK_DGRAM), t = client(SOCK_STREAM);
  ldns_pkt *p = ask(u, false, "big.allowed.example", LDNS_RR_TYPE_TXT, 5);
  cr_assert(ldns_pkt_tc(p), "TC set over UDP");
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 0);
  ldns_pkt_free(p);
  p = ask(t, true, "big.allowed.example", LDNS_RR_TYPE_TXT, 6);
  cr_assert_not(ldns_pkt_tc(p), "complete over TCP");
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 1);
  ldns_pkt_free(p);
  close(u);
  close(t);
}

Test(dnsfilter, upstream_truncation_is_retried_over_tcp) {
  /* ~1.5 KiB of TXT: dnsmasq truncates it at the filter's EDNS size 1232, the
   * filter asks again over TCP and a TCP client gets all of it. */
  int t = client(SOCK_STREAM);
  ldns_pkt *p = ask(t, true, "huge.allowed.example", LDNS_RR_TYPE_TXT, 11);
  cr_assert_eq(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
  cr_assert_not(ldns_pkt_tc(p), "complete");
  cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 1);
  cr_assert_eq(ldns_rr_rd_count(ldns_rr_list_rr(ldns_pkt_answer(p), 0)), 7, "all 7 strings");
  ldns_pkt_free(p);
  cr_assert_eq(dnsmasq_log_count("query[TXT] huge.allowed.example"), 2, "UDP, then TCP");
  close(t);
}

Test(dnsfilter, missing_hooks_fail_closed) {
  /* No name_allowed: nothing resolves; no add_addr: no address answer. */
  an_dnsfilter_free(E.f);
  E.f = NULL;
  static const struct an_net_hooks none = {&E.hk, NULL, NULL, NULL, on_event};
  static const struct an_net_hooks no_add = {&E.hk, name_allowed, NULL, NULL, on_event};
  const struct an_net_hooks *sets[] = {&none, &no_add};
  const int want[] = {LDNS_RCODE_REFUSED, LDNS_RCODE_SERVFAIL};
  for (int i = 0; i < 2; i++) {
    struct sockaddr_storage up;
    socklen_t len;
    nf_sockaddr("192.0.2.53", 53, &up, &len);
    struct an_dnsfilter_config cfg = {.udp_fd = nf_socket(E.sb, SOCK_DGRAM, "127.0.0.1", 53), .tcp_fd = -1,
                                      .upstreams = &up, .n_upstreams = 1};
    an_error_t err = NULL;
    cr_assert_eq(an_dnsfilter_new(&cfg, sets[i], &E.f, &err), 0, "%s", err ? err->msg : "");
    int u = client(SOCK_DGRAM);
    ldns_pkt *p = ask(u, false, "allowed.example", LDNS_RR_TYPE_A, (uint16_t) (60 + i));
    cr_assert_eq(ldns_pkt_get_rcode(p), want[i], "hook set %d", i);
    cr_assert_eq(ldns_rr_list_rr_count(ldns_pkt_answer(p)), 0);
    ldns_pkt_free(p);
    close(u);
    an_dnsfilter_free(E.f);
    E.f = NULL;
  }
  cr_assert_eq(dnsmasq_log_count("query[A] allowed.example"), 1, "only the no-add_addr filter asked upstream");
}
