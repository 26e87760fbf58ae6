/* tests/integration/net_ruleset_test.c — the sandbox's nftables ruleset
 * (net/ruleset.h) loaded into a netns the test made (net/netns.h), checked
 * with real sockets from inside that netns: allowed destinations are
 * redirected to the proxy port (SO_ORIGINAL_DST names the original), others
 * are refused (TCP reset: ECONNREFUSED; other packets dropped: EPERM) — deny ranges in every mode, DNS only
 * to the filter's address, IPv6 alike (BL-38), no raw or packet socket even
 * for root of a user namespace (BL-39) —, DNS answers admitted with a
 * timeout, an atomic policy change, counters.  Only documentation and
 * deny-set addresses; nothing leaves the test's netns. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "net/netns.h"
#include "net/policy.h"
#include "net/ruleset.h"
#include "util.h"

#define PROXY_PORT 15001

static char dir[64], path[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-ruleset-test-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/ns", dir);
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
}

static void teardown(void) {
  an_error_t err = NULL;
  an_netns_remove(path, &err);
  an_error_free(&err);
  rmdir(dir);
}

TestSuite(net_ruleset, .init = setup, .fini = teardown, .timeout = 60);

static struct an_egress_policy *policy(enum an_egress_mode mode, const char *const *allow) {
  struct an_egress_policy *p = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_egress_policy_new(mode, &p, &err), 0);
  for (; allow && *allow; allow++)
    cr_assert_eq(an_egress_policy_add(p, *allow, &err), 0, "%s", err ? err->msg : "");
  return p;
}

static void load(const struct an_egress_policy *p) {
  an_error_t err = NULL;
  cr_assert_eq(an_ruleset_load(path, p, PROXY_PORT, &err), 0, "%s", err ? err->msg : "");
}

/* REFUSED: connect failed at once with ECONNREFUSED (the ruleset resets refused TCP) */
enum verdict { REDIRECTED = 0, REFUSED = 1, OTHER = 2 };

/* In a child inside the netns: listen on 127.0.0.1/::1:PROXY_PORT (the
 * proxy's place), connect to addr:port; exit REDIRECTED when the listener got
 * it with that original destination, REFUSED on EPERM, OTHER else. */
static enum verdict tcp_probe(const char *addr, uint16_t port) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(fd, 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (setns(fd, CLONE_NEWNET) < 0) _exit(10);
    bool v6 = strchr(addr, ':') != NULL;
    int fam = v6 ? AF_INET6 : AF_INET;
    struct sockaddr_storage ls = {0}, ds = {0};
    socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (v6) {
      struct sockaddr_in6 *l = (void *) &ls, *d = (void *) &ds;
      l->sin6_family = d->sin6_family = AF_INET6;
      l->sin6_port = htons(PROXY_PORT);
      l->sin6_addr = in6addr_loopback;
      d->sin6_port = htons(port);
      if (inet_pton(AF_INET6, addr, &d->sin6_addr) != 1) _exit(11);
    } else {
      struct sockaddr_in *l = (void *) &ls, *d = (void *) &ds;
      l->sin_family = d->sin_family = AF_INET;
      l->sin_port = htons(PROXY_PORT);
      l->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      d->sin_port = htons(port);
      if (inet_pton(AF_INET, addr, &d->sin_addr) != 1) _exit(11);
    }
    int one = 1;
    int l = socket(fam, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6) setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (l < 0 || bind(l, (void *) &ls, len) < 0 || listen(l, 4) < 0) _exit(12);
    int c = socket(fam, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 3};
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(c, (void *) &ds, len) < 0) _exit(errno == ECONNREFUSED ? REFUSED : OTHER);
    int a = accept(l, NULL, NULL);
    if (a < 0) _exit(13);
    struct sockaddr_storage orig = {0};
    socklen_t olen = sizeof orig;
    int r = v6 ? getsockopt(a, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &orig, &olen)
               : getsockopt(a, SOL_IP, SO_ORIGINAL_DST, &orig, &olen);
    if (r < 0) _exit(14);
    bool same = v6 ? memcmp(&((struct sockaddr_in6 *) &orig)->sin6_addr, &((struct sockaddr_in6 *) &ds)->sin6_addr, 16) == 0 &&
                         ((struct sockaddr_in6 *) &orig)->sin6_port == htons(port)
                   : ((struct sockaddr_in *) &orig)->sin_addr.s_addr == ((struct sockaddr_in *) &ds)->sin_addr.s_addr &&
                         ((struct sockaddr_in *) &orig)->sin_port == htons(port);
    _exit(same ? REDIRECTED : 15);
  }
  close(fd);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "probe %s:%u died", addr, port);
  int code = WEXITSTATUS(st);
  cr_assert(code <= OTHER, "probe %s:%u: setup step %d failed", addr, port, code);
  return (enum verdict) code;
}

/* sendto a UDP datagram from inside the netns: 0 sent, else errno */
static int udp_probe(const char *addr, uint16_t port) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (setns(fd, CLONE_NEWNET) < 0) _exit(100);
    struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, addr, &d.sin_addr);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    _exit(sendto(s, "q", 1, 0, (void *) &d, sizeof d) == 1 ? 0 : errno);
  }
  close(fd);
  int st;
  waitpid(pid, &st, 0);
  return WEXITSTATUS(st);
}

Test(net_ruleset, allowed_cidr_is_redirected_to_the_proxy_and_others_dropped) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"203.0.113.0/24:443", NULL});
  load(p);
  cr_assert_eq(tcp_probe("203.0.113.5", 443), REDIRECTED, "allowed CIDR on its port");
  cr_assert_eq(tcp_probe("203.0.113.5", 80), REFUSED, "allowed CIDR, other port");
  cr_assert_eq(tcp_probe("198.51.100.1", 443), REFUSED, "direct connect to a non-allowed IP");
  cr_assert_eq(udp_probe("203.0.113.5", 443), EPERM, "UDP is not egress");
  an_egress_policy_free(p);
}

Test(net_ruleset, deny_ranges_are_dropped_in_every_mode) {
  static const char *const denied[] = {"169.254.169.254", "10.0.0.1", "172.16.0.1", "192.168.0.1",
                                       "100.64.0.9", "224.0.0.1", "fd00::1", "fe80::1", NULL};
  struct an_egress_policy *p = policy(AN_EGRESS_FULL, NULL);
  load(p);
  cr_assert_eq(tcp_probe("203.0.113.5", 443), REDIRECTED, "mode full: a public address");
  cr_assert_eq(tcp_probe("203.0.113.5", 25), REFUSED, "TCP 25");
  /* refused by the ruleset, or by the kernel before it (TCP to multicast,
   * link-local without a scope): never redirected to the proxy */
  for (const char *const *d = denied; *d; d++)
    cr_assert_neq(tcp_probe(*d, 443), REDIRECTED, "%s in mode full", *d);
  an_egress_policy_free(p);
}

Test(net_ruleset, an_explicit_cidr_inside_a_deny_range_opens_only_it) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"10.1.0.0/16:5432", NULL});
  load(p);
  cr_assert_eq(tcp_probe("10.1.2.3", 5432), REDIRECTED);
  cr_assert_eq(tcp_probe("10.2.0.1", 5432), REFUSED);
  cr_assert_eq(tcp_probe("169.254.169.254", 80), REFUSED);
  an_egress_policy_free(p);
}

Test(net_ruleset, dns_goes_only_to_the_filter_address) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"pkg.example", NULL});
  load(p);
  cr_assert_eq(udp_probe(AN_NETNS_PEER4, 53), 0, "DNS to the filter's address");
  cr_assert_eq(udp_probe("198.51.100.53", 53), EPERM, "DNS to any other server");
  cr_assert_eq(udp_probe("198.51.100.53", 853), EPERM, "DoT");
  cr_assert_eq(tcp_probe("198.51.100.53", 53), REFUSED, "DNS over TCP elsewhere");
  an_error_t err = NULL;
  struct an_ruleset_counters c;
  cr_assert_eq(an_ruleset_counters(path, &c, &err), 0, "%s", err ? err->msg : "");
  cr_assert_geq(c.dns_packets, 1);
  cr_assert_geq(c.dropped_packets, 3);
  an_egress_policy_free(p);
}

Test(net_ruleset, dns_answers_admit_addresses_on_the_name_ports) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"pkg.example", NULL});
  load(p);
  cr_assert_eq(tcp_probe("203.0.113.9", 443), REFUSED, "not resolved yet");
  uint8_t a[4], a6[16];
  inet_pton(AF_INET, "203.0.113.9", a);
  inet_pton(AF_INET6, "2001:db8::9", a6);
  an_error_t err = NULL;
  cr_assert_eq(an_ruleset_add_addr(path, AF_INET, a, 60, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_ruleset_add_addr(path, AF_INET, a, 120, &err), 0, "refresh: %s", err ? err->msg : "");
  cr_assert_eq(an_ruleset_add_addr(path, AF_INET6, a6, 60, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(tcp_probe("203.0.113.9", 443), REDIRECTED);
  cr_assert_eq(tcp_probe("203.0.113.9", 22), REFUSED, "a port the name does not have");
  cr_assert_eq(tcp_probe("2001:db8::9", 443), REDIRECTED);
  struct an_ruleset_counters c;
  cr_assert_eq(an_ruleset_counters(path, &c, &err), 0);
  cr_assert_geq(c.redirected_packets, 2);
  an_egress_policy_free(p);
}

Test(net_ruleset, bl_38_ipv6_has_the_same_policy) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"2001:db8:1::/48:443", NULL});
  load(p);
  cr_assert_eq(tcp_probe("2001:db8:1::5", 443), REDIRECTED);
  cr_assert_eq(tcp_probe("2001:db8:2::5", 443), REFUSED, "a non-allowlisted IPv6 address");
  cr_assert_neq(tcp_probe("fe80::1", 443), REDIRECTED, "link-local");
  cr_assert_eq(tcp_probe("fd00::1", 443), REFUSED, "unique local");
  cr_assert_eq(tcp_probe("::ffff:198.51.100.1", 443), REFUSED, "IPv4-mapped: judged as IPv4");
  an_egress_policy_free(p);
}

Test(net_ruleset, policy_change_replaces_the_rules_and_forgets_answers) {
  struct an_egress_policy *p = policy(AN_EGRESS_ALLOWLIST, (const char *const[]){"203.0.113.0/24:443", "pkg.example", NULL});
  load(p);
  uint8_t a[4];
  inet_pton(AF_INET, "198.51.100.7", a);
  an_error_t err = NULL;
  cr_assert_eq(an_ruleset_add_addr(path, AF_INET, a, 60, &err), 0);
  cr_assert_eq(tcp_probe("198.51.100.7", 443), REDIRECTED);
  cr_assert_eq(an_egress_policy_remove(p, "203.0.113.0/24:443", &err), 0);
  cr_assert_eq(an_egress_policy_add(p, "192.0.2.0/24:8080", &err), 0);
  cr_assert_eq(an_ruleset_update(path, p, PROXY_PORT, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(tcp_probe("203.0.113.5", 443), REFUSED, "removed entry");
  cr_assert_eq(tcp_probe("192.0.2.5", 8080), REDIRECTED, "added entry");
  cr_assert_eq(tcp_probe("198.51.100.7", 443), REFUSED, "old answers are forgotten");
  an_egress_policy_free(p);
}

/* BL-39: root of a user namespace inside the sandbox's netns has no
 * CAP_NET_RAW over that netns (its owner is the initial user namespace) */
Test(net_ruleset, bl_39_no_raw_or_packet_socket_for_root_of_a_user_namespace) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (setns(fd, CLONE_NEWNET) < 0 || unshare(CLONE_NEWUSER) < 0) _exit(100);
    int bad = 0;
    if (socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL)) >= 0 || errno != EPERM) bad |= 1;
    if (socket(AF_INET, SOCK_RAW, IPPROTO_RAW) >= 0 || errno != EPERM) bad |= 2;
    if (socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6) >= 0 || errno != EPERM) bad |= 4;
    _exit(bad);
  }
  close(fd);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "raw/packet socket made (mask %d: 1 packet, 2 raw v4, 4 raw v6)", WEXITSTATUS(st));
}

Test(net_ruleset, mode_none_gets_no_ruleset_and_a_failed_load_leaves_no_table) {
  struct an_egress_policy *p = policy(AN_EGRESS_NONE, NULL);
  an_error_t err = NULL;
  char *text = NULL;
  cr_assert_eq(an_ruleset_text(p, PROXY_PORT, true, &text, &err), -EINVAL);
  an_error_free(&err);
  an_egress_policy_free(p);
  p = policy(AN_EGRESS_FULL, NULL);
  cr_assert_eq(an_ruleset_text(p, 0, true, &text, &err), -EINVAL);
  an_error_free(&err);
  /* an update before any load fails (no table) and makes none */
  cr_assert_eq(an_ruleset_update(path, p, PROXY_PORT, &err), -EIO);
  cr_assert(strstr(err->msg, "nftables: change the sandbox ruleset"), "%s", err->msg);
  an_error_free(&err);
  struct an_ruleset_counters c;
  cr_assert_eq(an_ruleset_counters(path, &c, &err), -EIO, "a table exists after a failed transaction");
  an_error_free(&err);
  an_egress_policy_free(p);
}
