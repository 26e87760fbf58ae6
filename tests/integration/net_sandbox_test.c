/* tests/integration/net_sandbox_test.c — egress through the built
 * `agentnest` ($AN_TEST_BUILD/agentnest) on a store of the test's own: a
 * sandbox asking for --network allowlist either runs with its egress in
 * place or is refused naming the component that could not start — never an
 * unfiltered sandbox — and leaves nothing either way (no sandbox state, no
 * netns mount, no process); absurd entries and entries the mode cannot take
 * are refused before anything is made.  The busybox image comes from the
 * `make images` cache (skipped when missing). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"

#define CACHE "/var/cache/agentnest/images/busybox/layout"

static char root[64], an[4096], errp[128];

static void setup(void) {
  if (access(CACHE, F_OK) != 0) cr_skip_test("no busybox image in %s (make images)", CACHE);
  snprintf(root, sizeof root, "/tmp/an-netsb-XXXXXX");
  cr_assert_not_null(mkdtemp(root));
  snprintf(an, sizeof an, "%s/agentnest", getenv("AN_TEST_BUILD") ? getenv("AN_TEST_BUILD") : "build");
  snprintf(errp, sizeof errp, "%s.err", root);
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name busybox >/dev/null 2>&1", an, root, CACHE), 0);
}

static void teardown(void) {
  an_test_sh("%s --root %s prune >/dev/null 2>&1; rm -rf %s %s", an, root, root, errp);
}

TestSuite(net_sandbox, .init = setup, .fini = teardown, .timeout = 120);

static int run(const char *args) {
  return an_test_sh("%s --root %s run --image busybox %s -- true >/dev/null 2>%s", an, root, args, errp);
}

static char *err_text(void) { return an_test_read_file(errp, NULL); }

static void assert_nothing_left(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/sandboxes", root);
  DIR *d = opendir(path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      cr_assert(e->d_name[0] == '.', "sandbox state left: %s/%s", path, e->d_name);
    closedir(d);
  }
  char *info = an_test_read_file("/proc/self/mountinfo", NULL);
  cr_assert_null(strstr(info, root), "a mount under the store is left");
  free(info);
  /* no process still names the store in its command line (an egress
   * process forked from `agentnest --root ROOT run` would) */
  DIR *pd = opendir("/proc");
  struct dirent *pe;
  while (pd && (pe = readdir(pd))) {
    int pid = atoi(pe->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    char cp[64], buf[4096];
    snprintf(cp, sizeof cp, "/proc/%d/cmdline", pid);
    FILE *f = fopen(cp, "re");
    if (!f) continue;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
      if (!buf[i]) buf[i] = ' ';
    buf[n] = 0;
    cr_assert_null(strstr(buf, root), "process %d is left: %s", pid, buf);
  }
  if (pd) closedir(pd);
}

Test(net_sandbox, allowlist_runs_filtered_or_fails_closed_leaving_nothing) {
  /* where it runs, it runs in its own netns (eth0 of the veth pair) */
  int st = an_test_sh("%s --root %s run --image busybox --network allowlist --allow pkg.example -- "
                      "sh -c 'test -e /sys/class/net/eth0' >/dev/null 2>%s", an, root, errp);
  char *e = err_text();
  if (st != 0) {
    cr_assert_eq(st, 125, "exit %d: %s", st, e);
    cr_assert(strstr(e, "network allowlist: "), "the refusal names the mode and the cause: %s", e);
  }
  free(e);
  assert_nothing_left();
}

Test(net_sandbox, absurd_entries_are_refused_before_anything_is_made) {
  static const struct { const char *args, *want; } cases[] = {
    {"--network allowlist --allow 0.0.0.0/0", "\"0.0.0.0/0\": /0 is too wide"},
    {"--network allowlist --allow '*.com'", "single-label"},
    {"--network allowlist --allow pkg.example:0", "port out of range"},
    {"--allow pkg.example", "needs --network allowlist or full"},
    {"--network full --allow pkg.example", "only CIDR entries"},
    {"--dns-upstream 192.0.2.53", "needs --network allowlist or full"},
    {"--network allowlist --dns-upstream dns.example", "is not an IPv4 or IPv6 address"},
    {"--network host", "unknown mode"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int st = run(cases[i].args);
    char *e = err_text();
    cr_assert_eq(st, 125, "%s: exit %d: %s", cases[i].args, st, e);
    cr_assert(strstr(e, cases[i].want), "%s: message \"%s\" lacks \"%s\"", cases[i].args, e, cases[i].want);
    free(e);
    assert_nothing_left();
  }
}

Test(net_sandbox, network_none_is_unchanged) {
  cr_assert_eq(run("--network none"), 0);
  cr_assert_eq(an_test_sh("%s --root %s run --image busybox -- sh -c "
                          "'test ! -e /sys/class/net/eth0 && test -e /sys/class/net/lo' 2>%s", an, root, errp),
               0, "loopback only");
  assert_nothing_left();
}

Test(net_sandbox, network_of_a_none_sandbox_is_printed_and_cannot_change) {
  char idp[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  cr_assert_eq(an_test_sh("%s --root %s create --image busybox > %s 2>%s", an, root, idp, errp), 0);
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  cr_assert_eq(an_test_sh("%s --root %s network %s | grep -q '\"mode\": \"none\"'", an, root, id), 0);
  int st = an_test_sh("%s --root %s network %s --allow pkg.example >/dev/null 2>%s", an, root, id, errp);
  char *e = err_text();
  cr_assert_eq(st, 125, "%s", e);
  cr_assert(strstr(e, "made with --network none"), "%s", e);
  free(e);
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", an, root, id);
  free(id);
  unlink(idp);
  assert_nothing_left();
}

/* Where egress can run (the DNS filter and the proxy built in): a live
 * change is one transaction and reaches the record, fork keeps the policy,
 * and SIGKILL of the monitor and the egress process then `prune` leaves no
 * netns, state or process.  Skipped while this build refuses egress. */
Test(net_sandbox, live_change_fork_and_prune_after_sigkill) {
  char idp[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  int st = an_test_sh("%s --root %s create --image busybox --network allowlist --allow pkg.example > %s 2>%s",
                      an, root, idp, errp);
  char *e = err_text();
  if (st != 0 && strstr(e, "not implemented yet")) {
    free(e);
    cr_skip_test("egress is refused by this build (a component is not built in)");
  }
  cr_assert_eq(st, 0, "create: %s", e);
  free(e);
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  cr_assert_eq(an_test_sh("%s --root %s network %s | grep -q '\"pkg.example\"'", an, root, id), 0);
  cr_assert_eq(an_test_sh("%s --root %s network %s --allow 198.51.100.0/24:22 --deny pkg.example >/dev/null 2>%s",
                          an, root, id, errp), 0, "change");
  cr_assert_eq(an_test_sh("nsenter --net=%s/sandboxes/%s/netns nft list chain inet agentnest nat_out | "
                          "grep -q 198.51.100.0/24", root, id), 0, "the new rule is in the sandbox's ruleset");
  cr_assert_neq(an_test_sh("%s --root %s network %s | grep -q '\"pkg.example\"'", an, root, id), 0, "removed");
  char fp[160];
  snprintf(fp, sizeof fp, "%s.fork", root);
  cr_assert_eq(an_test_sh("%s --root %s fork %s > %s 2>%s", an, root, id, fp, errp), 0, "fork");
  char *fid = an_test_read_file(fp, NULL);
  fid[strcspn(fid, "\n")] = 0;
  cr_assert_eq(an_test_sh("%s --root %s network %s | grep -q '198.51.100.0/24:22'", an, root, fid), 0,
               "the fork has the changed policy");
  /* SIGKILL the monitor and the egress process of the first, then prune */
  cr_assert_eq(an_test_sh("kill -9 $(cut -d' ' -f1 %s/sandboxes/%s/egress.pid) "
                          "$(sed -n 's/.*\"monitor_pid\": *\\([0-9]*\\).*/\\1/p' %s/sandboxes/%s/sandbox.json)",
                          root, id, root, id), 0);
  cr_assert_eq(an_test_sh("%s --root %s destroy %s >/dev/null 2>&1; %s --root %s prune >/dev/null 2>&1",
                          an, root, fid, an, root), 0);
  free(id);
  free(fid);
  unlink(idp);
  unlink(fp);
  assert_nothing_left();
}

/* BL-39: in a sandbox with egress, raw and packet sockets fail with EPERM
 * (seccomp denies AF_PACKET; no process has CAP_NET_RAW over the netns, whose
 * owner is the initial user namespace).  Root of a user namespace inside
 * such a netns: net_ruleset_test bl_39_no_raw_or_packet_socket_for_root_of_a_user_namespace. */
Test(net_sandbox, bl_39_raw_and_packet_sockets_fail_with_eperm) {
  const char *py = "/var/cache/agentnest/images/python/layout";
  if (access(py, F_OK) != 0) cr_skip_test("no python image in %s", py);
  cr_assert_eq(an_test_sh("%s --root %s image import %s --name python >/dev/null 2>&1", an, root, py), 0);
  static const char code[] =
      "import errno, socket\n"
      "bad = []\n"
      "for fam, typ, proto in ((17, 3, 768), (2, 3, 255), (10, 3, 58), (2, 3, 1)):\n"
      "    try:\n"
      "        socket.socket(fam, typ, proto).close(); bad.append((fam, proto, 'made'))\n"
      "    except OSError as e:\n"
      "        if e.errno != errno.EPERM: bad.append((fam, proto, e.errno))\n"
      "print('bad', bad)\n"
      "raise SystemExit(1 if bad else 0)\n";
  char file[160];
  snprintf(file, sizeof file, "%s.raw.py", root);
  an_test_write_file(file, code, strlen(code), 0644);
  int st = an_test_sh("%s --root %s python --image python --network allowlist --allow pkg.example %s >%s 2>&1",
                      an, root, file, errp);
  char *e = err_text();
  if (st != 0 && strstr(e, "not implemented yet")) {
    free(e);
    unlink(file);
    cr_skip_test("egress is refused by this build");
  }
  cr_assert_eq(st, 0, "a raw or packet socket was made or failed otherwise: %s", e);
  free(e);
  unlink(file);
  assert_nothing_left();
}

/* The egress process keeps none of the creator's fds: a caller's pipe on fd
 * 3 (`agentnest create ... 3>&1 | cat`) reaches EOF when create exits, not
 * when the sandbox goes. */
Test(net_sandbox, egress_process_holds_no_fd_of_the_caller) {
  char idp[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  int st = an_test_sh("timeout 60 sh -c '%s --root %s create --image busybox --network allowlist "
                      "--allow pkg.example 3>&1 >%s 2>%s | cat >/dev/null'", an, root, idp, errp);
  char *e = err_text();
  if (strstr(e, "not implemented yet")) {
    free(e);
    cr_skip_test("egress is refused by this build");
  }
  free(e);
  /* destroy first: a failed assertion must not leave a live sandbox */
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", an, root, id);
  free(id);
  unlink(idp);
  cr_assert_eq(st, 0, "the pipe stayed open after create exited (status %d)", st);
  assert_nothing_left();
}
