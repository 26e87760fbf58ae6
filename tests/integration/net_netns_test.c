/* tests/integration/net_netns_test.c — the sandbox's own network namespace
 * (net/netns.h) on the real kernel: made owned by the initial user
 * namespace with lo, the veth pair, addresses and routes; removed leaving no
 * mount or file; a failed create leaves nothing; and the engine joins such a
 * netns from the parent around clone3, where the child — inside its new user
 * namespace — would get EPERM.  Every netns here is the test's own, under a
 * mkdtemp directory; the host's links, routes and firewall are never touched. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/container.h"
#include "bundle.h"
#include "net/netns.h"
#include "util.h"

static char dir[64], path[128];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/an-netns-test-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/ns", dir);
}

static void teardown(void) {
  an_error_t err = NULL;
  an_netns_remove(path, &err);
  an_error_free(&err);
  rmdir(dir);
}

TestSuite(net_netns, .init = setup, .fini = teardown, .timeout = 60);

static bool mounted(const char *p) {
  char *info = an_test_read_file("/proc/self/mountinfo", NULL);
  bool found = strstr(info, p) != NULL;
  free(info);
  return found;
}

/* `cmd` run inside the netns (nsenter), its stdout */
static char *in_netns(const char *cmd) {
  char out[160];
  snprintf(out, sizeof out, "%s/out", dir);
  int st = an_test_sh("nsenter --net=%s sh -c '%s' > %s 2>&1", path, cmd, out);
  char *text = an_test_read_file(out, NULL);
  unlink(out);
  cr_assert_eq(st, 0, "%s: %s", cmd, text);
  return text;
}

Test(net_netns, create_makes_lo_veth_addresses_and_default_routes) {
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  cr_assert(an_netns_is_netns(path));
  struct stat a, b;
  cr_assert_eq(stat(path, &a), 0);
  cr_assert_eq(stat("/proc/self/ns/net", &b), 0);
  cr_assert_neq(a.st_ino, b.st_ino, "the test's own netns, not a new one");

  char *links = in_netns("ip -o link show");
  cr_assert(strstr(links, "lo:") && strstr(links, "eth0@an-up") && strstr(links, "an-up@eth0"), "%s", links);
  cr_assert(strstr(links, "state UP") || strstr(links, "LOWER_UP"), "%s", links);
  free(links);
  char *addrs = in_netns("ip -o addr show");
  cr_assert(strstr(addrs, "eth0    inet " AN_NETNS_ADDR4 "/30") || strstr(addrs, AN_NETNS_ADDR4 "/30"), "%s", addrs);
  cr_assert(strstr(addrs, AN_NETNS_PEER4 "/30"), "%s", addrs);
  cr_assert(strstr(addrs, "127.0.0.1/8"), "lo up with its address: %s", addrs);
  if (access("/proc/sys/net/ipv6", F_OK) == 0) {
    cr_assert(strstr(addrs, AN_NETNS_ADDR6 "/64"), "%s", addrs);
    const char *own = strstr(addrs, AN_NETNS_ADDR6 "/64");
    const char *eol = strchr(own, '\n');
    const char *nodad = strstr(own, "nodad");
    cr_assert(nodad && (!eol || nodad < eol), "DAD would delay the address: %s", addrs);
  }
  free(addrs);
  char *routes = in_netns("ip route show; ip -6 route show");
  cr_assert(strstr(routes, "default dev eth0"), "%s", routes);
  free(routes);
}

Test(net_netns, remove_leaves_no_mount_and_no_file) {
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  cr_assert(mounted(path));
  cr_assert_eq(an_netns_remove(path, &err), 0, "%s", err ? err->msg : "");
  cr_assert(!mounted(path), "the bind mount is left");
  cr_assert_neq(access(path, F_OK), 0, "the file is left");
  cr_assert_eq(an_netns_remove(path, &err), 0, "removing twice is fine");
}

Test(net_netns, failed_create_names_the_path_and_leaves_nothing) {
  an_error_t err = NULL;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/no-such-dir/ns", dir);
  cr_assert_eq(an_netns_create(missing, &err), -ENOENT);
  cr_assert(strstr(err->msg, missing), "%s", err->msg);
  an_error_free(&err);
  an_test_write_file(path, "keep", 4, 0644);
  cr_assert_eq(an_netns_create(path, &err), -EEXIST);
  an_error_free(&err);
  char *kept = an_test_read_file(path, NULL);
  cr_assert_str_eq(kept, "keep", "an existing file must not be replaced");
  free(kept);
  cr_assert(!mounted(path));
  unlink(path);
}

/* The reason the engine joins from the parent: in a new user namespace the
 * process has every capability of THAT namespace, none over the netns's
 * owner (the initial one), and setns(CLONE_NEWNET) needs CAP_SYS_ADMIN there. */
Test(net_netns, setns_from_inside_a_new_user_namespace_is_eperm) {
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  cr_assert_geq(fd, 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWUSER) < 0) _exit(2);
    _exit(setns(fd, CLONE_NEWNET) < 0 && errno == EPERM ? 0 : 1);
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  close(fd);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
            "setns into a root-owned netns from a new user namespace did not fail with EPERM (status %d)", st);
}

Test(net_netns, engine_joins_the_netns_from_the_parent_with_a_new_user_namespace) {
  an_error_t err = NULL;
  cr_assert_eq(an_netns_create(path, &err), 0, "%s", err ? err->msg : "");
  struct stat want;
  cr_assert_eq(stat(path, &want), 0);
  struct an_test_bundle b;
  an_test_bundle_make(&b, "netns");
  struct an_spec *spec = an_test_bundle_spec(&b, "readlink", "/proc/self/ns/net", NULL);
  bool has_user = false, has_net = false;
  for (size_t i = 0; i < spec->linux.n_namespaces; i++) {
    struct an_spec_namespace *ns = &spec->linux.namespaces[i];
    if (ns->clone_flag == CLONE_NEWUSER) has_user = !ns->path;
    if (ns->clone_flag == CLONE_NEWNET) {
      has_net = true;
      free(ns->path);
      ns->path = strdup(path);
    }
  }
  cr_assert(has_user, "the default spec makes a new user namespace");
  cr_assert(has_net, "the default spec has a network namespace");
  char *out = NULL;
  int r = an_test_run_capture(spec, &b, &out, &err);
  an_spec_free(spec);
  an_test_bundle_remove(&b);
  cr_assert_eq(r, 0, "run: %s (output %s)", err ? err->msg : "", out ? out : "");
  char expect[64];
  snprintf(expect, sizeof expect, "net:[%lu]", (unsigned long) want.st_ino);
  cr_assert(out && strstr(out, expect), "container's netns %s, want %s", out ? out : "", expect);
  struct stat own;
  cr_assert_eq(stat("/proc/thread-self/ns/net", &own), 0);
  cr_assert_neq(own.st_ino, want.st_ino, "the runtime's thread stayed in the container's netns");
  free(out);
}
