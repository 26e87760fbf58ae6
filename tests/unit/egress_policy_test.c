/* Unit tests for net/policy.h: the `--allow` grammar, refusals that name the
 * entry, the deny set (in every mode, overridable only by an explicit CIDR),
 * name matching (exact vs *.zone) and address+port matching. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include "net/policy.h"

static struct an_egress_policy *policy(enum an_egress_mode mode, const char *const *allow) {
  struct an_egress_policy *p = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_new(mode, &p, &err), 0);
  for (; allow && *allow; allow++) {
    int r = an_egress_policy_add(p, *allow, &err);
    cr_assert_eq(r, 0, "add \"%s\": %s", *allow, err ? err->msg : "");
  }
  return p;
}

static void bad_entry(const char *text, const char *fragment) {
  struct an_egress_entry e;
  an_error_t err = NULL;
  int r = an_egress_entry_parse(text, &e, &err);
  cr_assert_eq(r, -EINVAL, "\"%s\" accepted (r=%d)", text, r);
  cr_assert_not_null(err);
  cr_assert(strstr(err->msg, fragment), "message \"%s\" lacks \"%s\"", err->msg, fragment);
  if (text && *text) cr_assert(strstr(err->msg, text), "message \"%s\" does not name \"%s\"", err->msg, text);
  an_error_free(&err);
}

static int dest(const struct an_egress_policy *p, const char *addr, uint16_t port, const char *name,
                const char **rule) {
  uint8_t a[16];
  int f = strchr(addr, ':') ? AF_INET6 : AF_INET;
  cr_assert_eq(inet_pton(f, addr, a), 1, "%s", addr);
  return an_egress_dest_allowed(p, f, a, port, name, rule);
}

Test(egress_policy, entry_forms_parse) {
  struct an_egress_entry e;
  an_error_t err = NULL;
  cr_assert_eq(an_egress_entry_parse("PKG.Example.", &e, &err), 0);
  cr_assert_eq(e.kind, AN_EGRESS_NAME);
  cr_assert_str_eq(e.name, "pkg.example");
  cr_assert_eq(e.n_ports, 2);
  cr_assert(an_egress_entry_has_port(&e, 80) && an_egress_entry_has_port(&e, 443));
  cr_assert(!an_egress_entry_has_port(&e, 8080));
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("*.example.com:80,8000-8100", &e, &err), 0);
  cr_assert_eq(e.kind, AN_EGRESS_SUFFIX);
  cr_assert_str_eq(e.name, "example.com");
  cr_assert(an_egress_entry_has_port(&e, 8050) && !an_egress_entry_has_port(&e, 443));
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("192.0.2.0/24:1-1024", &e, &err), 0);
  cr_assert_eq(e.kind, AN_EGRESS_CIDR);
  cr_assert_eq(e.family, AF_INET);
  cr_assert_eq(e.prefix, 24);
  cr_assert(an_egress_entry_has_port(&e, 1024) && !an_egress_entry_has_port(&e, 1025));
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("198.51.100.7", &e, &err), 0);
  cr_assert_eq(e.prefix, 32);
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("2001:db8::/32:443", &e, &err), 0);
  cr_assert_eq(e.family, AF_INET6);
  cr_assert_eq(e.prefix, 32);
  cr_assert(an_egress_entry_has_port(&e, 443) && !an_egress_entry_has_port(&e, 80));
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("[2001:db8::5]:8443", &e, &err), 0);
  cr_assert_eq(e.prefix, 128);
  cr_assert(an_egress_entry_has_port(&e, 8443));
  an_egress_entry_clear(&e);

  cr_assert_eq(an_egress_entry_parse("2001:db8::5", &e, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(e.prefix, 128);
  cr_assert(an_egress_entry_has_port(&e, 443));
  an_egress_entry_clear(&e);
}

Test(egress_policy, absurd_entries_are_refused_naming_the_entry) {
  bad_entry("0.0.0.0/0", "too wide");
  bad_entry("::/0", "too wide");
  bad_entry("10.0.0.0/7", "too wide");
  bad_entry("10.0.0.1/8", "host bits set");
  bad_entry("192.0.2.0/33", "prefix length");
  bad_entry("300.1.2.3/8", "not an IPv4 or IPv6 address");
  bad_entry("localhost", "single-label");
  bad_entry("*.com", "single-label");
  bad_entry("*example.com", "wildcard");
  bad_entry("a.*.example.com", "not allowed");
  bad_entry("ex ample.com", "not allowed");
  bad_entry("-bad.example.com", "starts or ends with '-'");
  bad_entry("a..example.com", "empty label");
  bad_entry("1.2.3", "all-numeric");
  bad_entry("pkg.example:0", "port out of range");
  bad_entry("pkg.example:65536", "port out of range");
  bad_entry("pkg.example:", "empty port list");
  bad_entry("pkg.example:443-80", "backwards");
  bad_entry("pkg.example:80,", "ends with ','");
  bad_entry("pkg.example:http", "bad port list");
  bad_entry("", "empty entry");
}

Test(egress_policy, mode_none_takes_no_entries_and_full_only_cidrs) {
  struct an_egress_policy *p = policy(AN_EGRESS_NONE, NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_add(p, "pkg.example", &err), -EINVAL);
  cr_assert(strstr(err->msg, "needs --network allowlist"), "%s", err->msg);
  an_error_free(&err);
  cr_assert(!an_egress_name_allowed(p, "pkg.example", 0, NULL));
  cr_assert_eq(dest(p, "192.0.2.1", 443, NULL, NULL), 0);
  an_egress_policy_free(p);

  p = policy(AN_EGRESS_FULL, NULL);
  cr_assert_eq(an_egress_policy_add(p, "pkg.example", &err), -EINVAL);
  an_error_free(&err);
  cr_assert_eq(an_egress_policy_add(p, "10.9.0.0/16:5432", &err), 0);
  an_egress_policy_free(p);
}

Test(egress_policy, names_match_exactly_and_zones_match_subdomains_only) {
  static const char *const allow[] = {"pkg.example", "*.cdn.example:443", NULL};
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, allow);
  const char *rule = NULL;
  cr_assert(an_egress_name_allowed(p, "pkg.example", 0, &rule));
  cr_assert_str_eq(rule, "pkg.example");
  cr_assert(an_egress_name_allowed(p, "PKG.EXAMPLE.", 443, NULL));
  cr_assert(!an_egress_name_allowed(p, "a.pkg.example", 0, NULL), "NAME must not match subdomains");
  cr_assert(!an_egress_name_allowed(p, "pkg.example", 8080, NULL), "port outside the entry");
  cr_assert(an_egress_name_allowed(p, "a.b.cdn.example", 443, &rule));
  cr_assert_str_eq(rule, "*.cdn.example:443");
  cr_assert(!an_egress_name_allowed(p, "cdn.example", 0, NULL), "*.zone must not match the zone itself");
  cr_assert(!an_egress_name_allowed(p, "xcdn.example", 0, NULL));
  cr_assert(!an_egress_name_allowed(p, "a.cdn.example", 80, NULL));
  cr_assert(!an_egress_name_allowed(p, "exfil.example", 0, &rule));
  cr_assert_str_eq(rule, "not in the allowlist");
  cr_assert(!an_egress_name_allowed(p, "pkg.example\n", 0, NULL));
  an_egress_policy_free(p);
}

Test(egress_policy, addresses_need_a_cidr_or_an_allowed_name) {
  static const char *const allow[] = {"pkg.example", "198.51.100.0/24:22", "2001:db8:1::/48", NULL};
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, allow);
  const char *rule = NULL;
  cr_assert_eq(dest(p, "198.51.100.9", 22, NULL, &rule), 1);
  cr_assert_str_eq(rule, "198.51.100.0/24:22");
  cr_assert_eq(dest(p, "198.51.100.9", 443, NULL, NULL), 0);
  cr_assert_eq(dest(p, "203.0.113.5", 443, NULL, &rule), 0, "direct IP connect outside the list");
  cr_assert_str_eq(rule, "not in the allowlist");
  cr_assert_eq(dest(p, "203.0.113.5", 443, "pkg.example", &rule), 1);
  cr_assert_eq(dest(p, "203.0.113.5", 443, "other.example", NULL), 0, "SNI/Host of another site");
  cr_assert_eq(dest(p, "2001:db8:1::80", 443, NULL, NULL), 1);
  cr_assert_eq(dest(p, "2001:db8:2::80", 443, NULL, NULL), 0);
  cr_assert_eq(dest(p, "::ffff:198.51.100.9", 22, NULL, NULL), 1, "IPv4-mapped judged as IPv4");
  an_egress_policy_free(p);
}

/* the deny set applies in every mode, even to an allowed name's address */
Test(egress_policy, deny_set_applies_in_every_mode) {
  static const char *const deny[] = {"127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1",
                                     "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.251",
                                     "255.255.255.255", "::1", "fe80::1", "fd00::1", "ff02::1",
                                     "::ffff:127.0.0.1", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe",
                                     "2002:a9fe:a9fe::1", "::", NULL};
  static const char *const allow[] = {"pkg.example", NULL};
  for (int m = AN_EGRESS_ALLOWLIST; m <= AN_EGRESS_FULL; m++) {
    struct an_egress_policy *p = policy((enum an_egress_mode) m, m == AN_EGRESS_ALLOWLIST ? allow : NULL);
    for (const char *const *d = deny; *d; d++) {
      const char *rule = NULL;
      cr_assert_eq(dest(p, *d, 443, "pkg.example", &rule), 0, "%s allowed in mode %s", *d,
                   an_egress_mode_name(p->mode));
      cr_assert(rule && strncmp(rule, "deny ", 5) == 0, "%s: rule \"%s\"", *d, rule ? rule : "");
    }
    const char *rule = NULL;
    cr_assert_eq(dest(p, "203.0.113.5", 25, "pkg.example", &rule), 0, "TCP 25");
    cr_assert(strstr(rule, "port 25"), "%s", rule);
    an_egress_policy_free(p);
  }
  struct an_egress_policy *p = policy(AN_EGRESS_FULL, NULL);
  cr_assert_eq(dest(p, "203.0.113.5", 443, NULL, NULL), 1, "full allows public addresses");
  cr_assert_eq(dest(p, "2001:db8::1", 80, NULL, NULL), 1);
  an_egress_policy_free(p);
}

Test(egress_policy, only_an_explicit_cidr_inside_a_deny_range_opens_it) {
  static const char *const allow[] = {"10.1.0.0/16:5432", "203.0.113.0/24:25", "*.internal.example", NULL};
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, allow);
  const char *rule = NULL;
  cr_assert_eq(dest(p, "10.1.2.3", 5432, NULL, &rule), 1);
  cr_assert_str_eq(rule, "10.1.0.0/16:5432");
  cr_assert_eq(dest(p, "10.1.2.3", 443, NULL, NULL), 0, "port not in the entry");
  cr_assert_eq(dest(p, "10.2.0.1", 5432, NULL, NULL), 0, "outside the entry");
  cr_assert_eq(dest(p, "10.1.2.3", 443, "a.internal.example", NULL), 0, "a name never opens a deny range");
  cr_assert_eq(dest(p, "203.0.113.9", 25, NULL, NULL), 1, "port 25 listed explicitly");
  an_egress_policy_free(p);

  /* a CIDR wider than the deny range does not name it */
  static const char *const wide[] = {"8.0.0.0/6:80", NULL};
  struct an_egress_policy *w = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_new(AN_EGRESS_ALLOWLIST, &w, &err), 0);
  cr_assert_eq(an_egress_policy_add(w, "8.0.0.0/6", &err), -EINVAL, "a /6 is refused as too wide");
  an_error_free(&err);
  an_egress_policy_free(w);
  p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"10.0.0.0/8:80", NULL});
  cr_assert_eq(dest(p, "10.200.0.1", 80, NULL, NULL), 1, "the whole RFC 1918 /8 named");
  cr_assert_eq(dest(p, "127.0.0.1", 80, NULL, NULL), 0);
  an_egress_policy_free(p);
  (void) wide;
}

Test(egress_policy, host_addresses_are_denied) {
  struct an_egress_policy *p = policy(AN_EGRESS_FULL, NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_load_host_addrs(p, &err), 0);
  cr_assert_gt(p->n_host_addrs, 0, "no address at all (lo has 127.0.0.1)");
  /* a documentation address the test adds as if the host had it */
  p->host_addrs = realloc(p->host_addrs, (p->n_host_addrs + 1) * sizeof p->host_addrs[0]);
  p->host_addrs[p->n_host_addrs].family = AF_INET;
  inet_pton(AF_INET, "203.0.113.77", p->host_addrs[p->n_host_addrs++].addr);
  const char *rule = NULL;
  cr_assert_eq(dest(p, "203.0.113.77", 443, NULL, &rule), 0);
  cr_assert_str_eq(rule, "deny the host's own address");
  cr_assert_eq(dest(p, "203.0.113.78", 443, NULL, NULL), 1);
  an_egress_policy_free(p);
}

Test(egress_policy, remove_and_duplicates) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"pkg.example", "pkg.example", NULL});
  cr_assert_eq(p->n_entries, 1);
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_remove(p, "git.example", &err), -ENOENT);
  cr_assert(strstr(err->msg, "git.example"));
  an_error_free(&err);
  cr_assert_eq(an_egress_policy_remove(p, "pkg.example", &err), 0);
  cr_assert(!an_egress_name_allowed(p, "pkg.example", 0, NULL));
  an_egress_policy_free(p);
}

Test(egress_policy, dns_upstreams_parse) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_add_upstream(p, "192.0.2.53", &err), 0);
  cr_assert_eq(an_egress_policy_add_upstream(p, "192.0.2.53:5353", &err), 0);
  cr_assert_eq(an_egress_policy_add_upstream(p, "2001:db8::53", &err), 0);
  cr_assert_eq(an_egress_policy_add_upstream(p, "[2001:db8::53]:5300", &err), 0);
  cr_assert_eq(p->n_upstreams, 4);
  cr_assert_eq(ntohs(((struct sockaddr_in *) &p->upstreams[0].sa)->sin_port), 53);
  cr_assert_eq(ntohs(((struct sockaddr_in *) &p->upstreams[1].sa)->sin_port), 5353);
  cr_assert_eq(ntohs(((struct sockaddr_in6 *) &p->upstreams[3].sa)->sin6_port), 5300);
  cr_assert_eq(an_egress_policy_add_upstream(p, "192.0.2.1", &err), -E2BIG);
  an_error_free(&err);
  an_egress_policy_free(p);
  p = policy(AN_EGRESS_ALLOWLIST, NULL);
  cr_assert_eq(an_egress_policy_add_upstream(p, "dns.example", &err), -EINVAL);
  cr_assert(strstr(err->msg, "dns.example"));
  an_error_free(&err);
  cr_assert_eq(an_egress_policy_add_upstream(p, "192.0.2.1:0", &err), -EINVAL);
  an_error_free(&err);
  an_egress_policy_free(p);
}
