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
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"
#include "util/clock.h"

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

/* the store once its reapers are done, and the tests' ROOT.err/.out/.id/.fds files */
static void teardown(void) {
  if (!root[0]) return;   /* skipped before mkdtemp */
  an_test_wait_reaped(root);
  an_test_sh("%s --root %s prune >/dev/null 2>&1; rm -rf %s %s.*", an, root, root, root);
}

TestSuite(net_sandbox, .init = setup, .fini = teardown, .timeout = 120);

static int run(const char *args) {
  return an_test_sh("%s --root %s run --image busybox %s -- true >/dev/null 2>%s", an, root, args, errp);
}

static char *err_text(void) { return an_test_read_file(errp, NULL); }

static void assert_nothing_left(void) {
  /* teardown after the result: the store's reaper may still be at work */
  cr_expect(an_test_wait_reaped(root), "the reaper of %s did not finish", root);
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

Test(net_sandbox, egress_process_keeps_every_fd_below_fd_setsize) {
  /* libnftables (used by the egress process for every DNS answer it
   * admits) waits on its netlink socket with select(2): an fd number of
   * FD_SETSIZE or more there aborts the process (_FORTIFY_SOURCE).  A
   * creator with a high soft RLIMIT_NOFILE let the sandbox push its egress
   * process there by holding ~170 connections through the proxy (SIGABRT:
   * its DNS and every connection gone).  The egress process's soft limit is
   * FD_SETSIZE whatever its creator's. */
  struct rlimit old, high;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
  if (old.rlim_max <= FD_SETSIZE) cr_skip_test("hard RLIMIT_NOFILE %llu: cannot raise the soft one past FD_SETSIZE",
                                               (unsigned long long) old.rlim_max);
  high = old;
  high.rlim_cur = old.rlim_max < 8192 ? old.rlim_max : 8192;
  cr_assert_eq(setrlimit(RLIMIT_NOFILE, &high), 0);
  char idp[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  int st = an_test_sh("%s --root %s create --image busybox --network allowlist --allow pkg.example "
                      "--dns-upstream 192.0.2.53 >%s 2>%s", an, root, idp, errp);
  setrlimit(RLIMIT_NOFILE, &old);
  cr_assert_eq(st, 0, "create: %s", err_text());
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  char pidp[256];
  snprintf(pidp, sizeof pidp, "%s/sandboxes/%s/egress.pid", root, id);
  char *pidtext = an_test_read_file(pidp, NULL);
  char limits[64];
  snprintf(limits, sizeof limits, "/proc/%d/limits", pidtext ? atoi(pidtext) : 0);
  char *text = an_test_read_file(limits, NULL);
  unsigned long long soft = 0;
  char *line = text ? strstr(text, "Max open files") : NULL;
  if (line) sscanf(line + strlen("Max open files"), "%llu", &soft);
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", an, root, id);
  free(id);
  free(pidtext);
  free(text);
  unlink(idp);
  cr_assert(line, "no egress process (%s)", limits);
  cr_assert_leq(soft, FD_SETSIZE, "the egress process's soft RLIMIT_NOFILE is %llu", soft);
  cr_assert_gt(soft, 0);
}

static int count_lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; p && (p = strstr(p, needle)); p++) n++;
  return n;
}

Test(net_sandbox, egress_events_the_sandbox_makes_are_rate_limited) {
  /* Every DNS query and connection was an event line in the sandbox's
   * events.jsonl, on the host's disk and outside the workspace quota: a
   * sandbox flooding its DNS filter grew it by megabytes a second for as
   * long as it lived.  16384 refused queries over one TCP connection now
   * leave at most the burst (500) and 50 a second, and the count of those
   * dropped is written (egress_suppressed). */
  char idp[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  cr_assert_eq(an_test_sh("%s --root %s create --image busybox --network allowlist --allow pkg.example "
                          "--dns-upstream 192.0.2.53 >%s 2>%s", an, root, idp, errp), 0, "create: %s", err_text());
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  uint64_t t0 = an_mono_ms();
  /* one query for x.exfil.example (DNS over TCP: 2-byte length first), 2^14 times */
  int st = an_test_sh("%s --root %s exec %s -- sh -c 'cd /tmp && printf \"\\000\\041\\022\\064\\001\\000\\000\\001"
                      "\\000\\000\\000\\000\\000\\000\\001x\\005exfil\\007example\\000\\000\\001\\000\\001\" > q && "
                      "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do cat q q > q2 && mv q2 q; done && "
                      "nc -w 10 127.0.0.1 53 < q | wc -c' >%s.out 2>&1", an, root, id, root);
  uint64_t spent_s = (an_mono_ms() - t0) / 1000 + 2;
  /* one more query, after the bucket refilled a little: it carries the count */
  usleep(300000);
  an_test_sh("%s --root %s exec %s -- nslookup y.exfil.example 127.0.0.1 >/dev/null 2>&1", an, root, id);
  char evp[256];
  snprintf(evp, sizeof evp, "%s/sandboxes/%s/events.jsonl", root, id);
  char *ev = an_test_read_file(evp, NULL);
  int egress = count_lines(ev, "\"type\":\"egress\""), suppressed = count_lines(ev, "\"type\":\"egress_suppressed\"");
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", an, root, id);
  free(ev);
  free(id);
  unlink(idp);
  cr_assert_eq(st, 0, "the flood ran");
  cr_assert_geq(egress, 1, "no egress event at all");
  cr_assert_leq((uint64_t) egress, 500 + 50 * spent_s, "%d egress events in %llu s", egress,
                (unsigned long long) spent_s);
  cr_assert_geq(suppressed, 1, "the dropped events were not counted");
}

Test(net_sandbox, egress_sandbox_sees_a_sysfs_of_its_own_netns_not_the_hosts) {
  /* The egress netns is owned by the initial user namespace, so sysfs could
   * not be mounted in the sandbox and the runc-style fallback bound the
   * host's /sys recursively: the sandbox read the host's whole cgroup v1
   * tree (every other sandbox's cgroup and usage), the host's network
   * interfaces and the rest of /sys's submounts.  The sysfs is now made by
   * the runtime in the sandbox's netns. */
  char outp[160];
  snprintf(outp, sizeof outp, "%s.out", root);
  int st = an_test_sh("%s --root %s run --image busybox --network allowlist --allow pkg.example "
                      "--dns-upstream 192.0.2.53 -- sh -c 'echo net: $(ls /sys/class/net); "
                      "echo cgroup: $(ls -A /sys/fs/cgroup | wc -l); grep \" /sys \" /proc/self/mountinfo' >%s 2>%s",
                      an, root, outp, errp);
  char *out = an_test_read_file(outp, NULL);
  unlink(outp);
  cr_assert_eq(st, 0, "run: %s", err_text());
  cr_assert(strstr(out, "net: an-up eth0 lo\n"), "the sandbox's /sys shows other interfaces than its netns's: %s", out);
  cr_assert(strstr(out, "cgroup: 0\n"), "the sandbox sees cgroups under /sys/fs/cgroup: %s", out);
  cr_assert(strstr(out, " /sys ro,"), "/sys is not read-only: %s", out);
  free(out);
  assert_nothing_left();
}

/* The egress process is forked from create's egress thread, which has an fd
 * table of its own: it holds only its own fds (stdio on /dev/null, its
 * signalfd, epoll and timer fds, the DNS and proxy sockets), none of what
 * create had open (store lock, sandbox directory, workspace, record files),
 * and it runs in the host netns, not the sandbox's. */
Test(net_sandbox, egress_process_has_only_its_own_fds_and_the_host_netns) {
  char idp[160], fdl[160];
  snprintf(idp, sizeof idp, "%s.id", root);
  snprintf(fdl, sizeof fdl, "%s.fds", root);
  int st = an_test_sh("%s --root %s create --image busybox --network allowlist --allow pkg.example >%s 2>%s",
                      an, root, idp, errp);
  char *e = err_text();
  cr_assert_eq(st, 0, "create: %s", e);
  free(e);
  char *id = an_test_read_file(idp, NULL);
  id[strcspn(id, "\n")] = 0;
  int ls = an_test_sh("p=$(cut -d' ' -f1 %s/sandboxes/%s/egress.pid) && ls -l /proc/$p/fd | sed -n 's/.* -> //p' > %s && "
                      "test \"$(readlink /proc/$p/ns/net)\" = \"$(readlink /proc/self/ns/net)\"", root, id, fdl);
  an_test_sh("%s --root %s destroy %s >/dev/null 2>&1", an, root, id);
  free(id);
  char *fds = an_test_read_file(fdl, NULL);
  unlink(idp);
  unlink(fdl);
  cr_assert_eq(ls, 0, "the egress process is not in the host netns, or its fds could not be read");
  int n = 0;
  for (char *line = strtok(fds, "\n"); line; line = strtok(NULL, "\n"), n++)
    cr_assert(!strcmp(line, "/dev/null") || !strncmp(line, "socket:", 7) || !strncmp(line, "anon_inode:", 11),
              "the egress process holds %s", line);
  cr_assert_geq(n, 8, "the egress process's fds: stdio, signalfd, epoll, sockets");
  free(fds);
  assert_nothing_left();
}
