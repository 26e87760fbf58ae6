/* tests/integration/net_egress_test.c — the glue the monitor gives the DNS
 * filter and the proxy (net/egress.h): the hooks decide by the policy and
 * admit DNS answers into the sandbox's nft set (never an address of the deny
 * set: DNS rebinding to 169.254.169.254 or 10/8 gets SERVFAIL), events become
 * JSON members, and `doctor`'s egress probe works here and leaves nothing.
 * In a netns the test made; documentation addresses only. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest/doctor.h"
#include "net/egress.h"
#include "net/netns.h"
#include "net/ruleset.h"
#include "util.h"

static char dir[64], path[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-egress-test-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/ns", dir);
}

static void teardown(void) {
  an_error_t err = NULL;
  an_netns_remove(path, &err);
  an_error_free(&err);
  an_test_sh("rm -rf %s", dir);
}

TestSuite(net_egress, .init = setup, .fini = teardown, .timeout = 60);

struct seen { int n; enum an_net_verdict last; };
static void sink(void *c, const struct an_net_event *ev) {
  struct seen *s = c;
  s->n++;
  s->last = ev->verdict;
}

static bool in_set(const char *set, const char *addr) {
  char out[160];
  snprintf(out, sizeof out, "%s/set", dir);
  an_test_sh("nsenter --net=%s nft list set inet agentnest %s > %s 2>&1", path, set, out);
  char *text = an_test_read_file(out, NULL);
  bool found = strstr(text, addr) != NULL;
  free(text);
  return found;
}

Test(net_egress, hooks_decide_by_the_policy_and_admit_only_public_answers) {
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  struct an_egress_policy *p = NULL;
  cr_assert_eq(an_egress_policy_new(AN_EGRESS_ALLOWLIST, &p, &err), 0);
  cr_assert_eq(an_egress_policy_add(p, "pkg.example", &err), 0);
  cr_assert_eq(an_ruleset_load(path, p, 15001, &err), 0, "%s", err ? err->msg : "");
  struct seen s = {0};
  struct an_egress_ctx ctx = {.policy = p, .netns_path = path, .sink = sink, .sink_ctx = &s};
  struct an_net_hooks h;
  an_egress_hooks(&ctx, &h);
  cr_assert(h.name_allowed(h.ctx, "pkg.example", 0));
  cr_assert(!h.name_allowed(h.ctx, "a1b2c3.exfil.example", 0), "BL-37: a non-allowed name is never resolved");
  uint8_t pub[4], meta[4], priv[4];
  inet_pton(AF_INET, "203.0.113.9", pub);
  inet_pton(AF_INET, "169.254.169.254", meta);
  inet_pton(AF_INET, "10.0.0.5", priv);
  cr_assert_eq(h.add_addr(h.ctx, "pkg.example", AF_INET, pub, 60), 0);
  cr_assert(in_set("dyn4", "203.0.113.9"), "the answer is in the set before it is sent");
  cr_assert_eq(h.add_addr(h.ctx, "pkg.example", AF_INET, meta, 60), -EACCES, "rebinding to metadata");
  cr_assert_eq(h.add_addr(h.ctx, "pkg.example", AF_INET, priv, 60), -EACCES, "rebinding to RFC 1918");
  cr_assert(!in_set("dyn4", "169.254.169.254") && !in_set("dyn4", "10.0.0.5"));
  const char *rule = NULL;
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, pub, 443, "pkg.example", &rule), 1);
  cr_assert_str_eq(rule, "pkg.example");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, pub, 443, "other.example", &rule), 0, "SNI of another site on the same IP");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, pub, 443, NULL, &rule), 0, "no name, no CIDR: refused");
  struct an_net_event ev = {.kind = AN_NET_EV_DNS, .verdict = AN_NET_DENY, .name = "x.exfil.example", .reason = "name not allowed"};
  h.event(h.ctx, &ev);
  cr_assert_eq(s.n, 1);
  cr_assert_eq(s.last, AN_NET_DENY);
  an_egress_policy_free(p);
}

Test(net_egress, a_name_entrys_own_ports_reach_the_addresses_admitted_for_that_name) {
  /* agentnest(1): on ports other than 80 and 443 "the address and port
   * decide".  The proxy asks with no name there, and dest_allowed refused
   * every such connection to an admitted address: --allow pkg.example:8443
   * never connected.  Now an address admitted for pkg.example passes on
   * pkg.example's ports -- and only those: not for another name's address,
   * not on other ports, not on 80/443 without a name, not unadmitted. */
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  struct an_egress_policy *p = NULL;
  cr_assert_eq(an_egress_policy_new(AN_EGRESS_ALLOWLIST, &p, &err), 0);
  cr_assert_eq(an_egress_policy_add(p, "pkg.example:8443", &err), 0);
  cr_assert_eq(an_egress_policy_add(p, "other.example:443", &err), 0);
  cr_assert_eq(an_ruleset_load(path, p, 15001, &err), 0, "%s", err ? err->msg : "");
  struct an_egress_ctx ctx = {.policy = p, .netns_path = path};
  struct an_net_hooks h;
  an_egress_hooks(&ctx, &h);
  uint8_t pkg[4], other[4], never[4];
  inet_pton(AF_INET, "203.0.113.9", pkg);
  inet_pton(AF_INET, "203.0.113.10", other);
  inet_pton(AF_INET, "203.0.113.77", never);
  cr_assert_eq(h.add_addr(h.ctx, "pkg.example", AF_INET, pkg, 60), 0);
  cr_assert_eq(h.add_addr(h.ctx, "other.example", AF_INET, other, 60), 0);
  const char *rule = NULL;
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, pkg, 8443, NULL, &rule), 1, "pkg.example's address on its port");
  cr_assert_str_eq(rule, "pkg.example:8443");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, other, 8443, NULL, &rule), 0,
               "other.example's address on pkg.example's port");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, pkg, 22, NULL, &rule), 0, "a port no entry lists");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, other, 443, NULL, &rule), 0, "443 names the site or nothing passes");
  cr_assert_eq(h.dest_allowed(h.ctx, AF_INET, never, 8443, NULL, &rule), 0, "an address no answer admitted");
  an_egress_policy_free(p);
}

Test(net_egress, events_are_json_members) {
  uint8_t a[4];
  inet_pton(AF_INET, "203.0.113.9", a);
  struct an_net_event ev = {.kind = AN_NET_EV_CONNECT, .verdict = AN_NET_DENY, .name = "other.example",
                            .family = AF_INET, .addr = a, .port = 443, .rule = "not in the allowlist",
                            .reason = "SNI not allowed"};
  char *fields = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_egress_event_fields(&ev, &fields, &err), 0);
  cr_assert_eq(fields[0], ',');
  char doc[1024];
  snprintf(doc, sizeof doc, "{\"type\":\"egress\"%s}", fields);
  char eb[128];
  yajl_val v = yajl_tree_parse(doc, eb, sizeof eb);
  cr_assert_not_null(v, "%s: %s", doc, eb);
  const char *kp[] = {"kind", NULL}, *vp[] = {"verdict", NULL}, *ap[] = {"address", NULL}, *pp[] = {"port", NULL};
  cr_assert_str_eq(YAJL_GET_STRING(yajl_tree_get(v, kp, yajl_t_string)), "connect");
  cr_assert_str_eq(YAJL_GET_STRING(yajl_tree_get(v, vp, yajl_t_string)), "deny");
  cr_assert_str_eq(YAJL_GET_STRING(yajl_tree_get(v, ap, yajl_t_string)), "203.0.113.9");
  cr_assert_eq(YAJL_GET_INTEGER(yajl_tree_get(v, pp, yajl_t_number)), 443);
  yajl_tree_free(v);
  free(fields);
  struct an_net_event bad = {.kind = AN_NET_EV_DNS, .verdict = AN_NET_DENY, .name = "\xff\xfe.example", .reason = "x"};
  cr_assert_lt(an_egress_event_fields(&bad, &fields, &err), 0, "a name that is not UTF-8 is an error, not broken JSON");
  an_error_free(&err);
}

Test(net_egress, doctor_reports_egress_and_leaves_nothing) {
  char *json = NULL;
  bool ok = false;
  an_error_t err = NULL;
  cr_assert_eq(an_doctor_probe(dir, &json, &ok, &err), 0, "%s", err ? err->msg : "");
  char eb[128];
  yajl_val v = yajl_tree_parse(json, eb, sizeof eb);
  cr_assert_not_null(v);
  const char *av[] = {"egress", "available", NULL};
  yajl_val a = yajl_tree_get(v, av, yajl_t_any);
  cr_assert(a && YAJL_IS_TRUE(a), "egress not available on the test host: %s", json);
  yajl_tree_free(v);
  free(json);
  char *info = an_test_read_file("/proc/self/mountinfo", NULL);
  cr_assert_null(strstr(info, ".egress-probe"), "the probe's netns mount is left");
  free(info);
  char probe[128];
  snprintf(probe, sizeof probe, "%s/.egress-probe-%d", dir, (int) getpid());
  cr_assert_neq(access(probe, F_OK), 0, "the probe's file is left");
}
