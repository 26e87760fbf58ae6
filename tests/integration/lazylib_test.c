/* tests/integration/lazylib_test.c — the `agentnest` binary maps at start
 * only libc, libseccomp, libcap and yajl (issue 15: startup cost), and an
 * `exec` maps none of the libraries it does not use, while the commands that
 * do use them (image import: libarchive; create: libcrypto) still work
 * because their functions are bound on first call (src/util/lazylib.c).
 * Skipped on builds that link every library normally (LAZYLIB=0, not x86_64),
 * which the Makefile tells the test as AN_LAZYLIB.
 * Run as root on the real kernel; images come from the `make images` cache. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli_fixture.h"
#include "util.h"

/* Libraries (and what they pull in) that exec, ls and --version never call. */
static const char *const heavy[] = {"libarchive.so", "libmicrohttpd.so", "libnftables.so", "libldns.so",
                                    "libcrypto.so",  "libnl-route-3.so", "libnl-3.so",      "libyaml-0.so",
                                    "libxml2.so",    "libgnutls.so",     "libicu"};

static void setup(void) { an_cli_setup("lazylib", 0700); }
static void teardown(void) { an_cli_teardown(); }

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("lazylib");
}

TestSuite(lazylib, .init = setup, .fini = teardown, .timeout = 120);

/* The loader's own list of what it maps before main (ldd's mechanism). */
static char *startup_objects(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/objects", an_cli.work);
  cr_assert_eq(an_test_sh("LD_TRACE_LOADED_OBJECTS=1 '%s' > '%s'", an_cli.bin, path), 0);
  char *objs = an_test_read_file(path, NULL);
  cr_assert_not_null(objs);
  return objs;
}

/* AN_LAZYLIB: the build's LAZYLIB (Makefile; 0 off x86_64 or by choice) */
static void skip_unless_lazy(void) {
  if (!AN_LAZYLIB) cr_skip_test("this build links every library at start (LAZYLIB=0)");
}

static void assert_none_mapped(const char *what, const char *maps) {
  for (size_t i = 0; i < sizeof heavy / sizeof *heavy; i++)
    cr_expect_null(strstr(maps, heavy[i]), "%s maps %s:\n%s", what, heavy[i], maps);
}

Test(lazylib, version_maps_only_libc_seccomp_cap_yajl) {
  skip_unless_lazy();
  char *objs = startup_objects();
  assert_none_mapped("agentnest at start", objs);
  cr_expect(strstr(objs, "libseccomp.so") && strstr(objs, "libcap.so") && strstr(objs, "libyajl.so"), "%s", objs);
  free(objs);
  cr_assert_eq(an_cli_run("--version"), 0, "%s", an_cli.err);
  cr_expect(strstr(an_cli.out, "agentnest version"), "%s", an_cli.out);
}

/* A running `agentnest exec -i ID -- sh -c 'echo ready; read x'`: once the
 * command printed "ready", the CLI process has done everything an exec does
 * before waiting; its /proc/PID/maps must hold none of the heavy libraries.
 * The sandbox's image import (libarchive) and create (libcrypto) before it
 * prove the lazily bound functions work. */
Test(lazylib, exec_maps_no_library_it_does_not_use) {
  skip_unless_lazy();
  an_cli_import("busybox");
  cr_assert_eq(an_cli_run("create --image busybox --timeout 10m"), 0, "%s", an_cli.err);
  char id[64];
  snprintf(id, sizeof id, "%s", an_cli.out);
  an_cli_chomp(id);

  int in[2], out[2];
  cr_assert_eq(pipe(in), 0);
  cr_assert_eq(pipe(out), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(an_cli.bin, an_cli.bin, "--root", an_cli.root, "exec", "-i", id, "--", "sh", "-c",
          "echo ready; read x; true", (char *) NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  char buf[16] = "";
  ssize_t n = read(out[0], buf, sizeof buf - 1);
  cr_assert_gt(n, 0, "exec printed nothing");
  cr_assert(strstr(buf, "ready"), "exec printed '%s'", buf);

  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", (int) pid);
  char *maps = an_test_read_file(path, NULL);
  cr_assert_not_null(maps);
  close(in[1]);   /* sh's read sees EOF: the command and the CLI end */
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  close(out[0]);
  cr_expect(strstr(maps, "libseccomp.so"), "the exec CLI's maps lack libseccomp (not its maps?):\n%s", maps);
  assert_none_mapped("agentnest exec", maps);
  free(maps);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec ended with status %#x", st);

  /* the sandbox's monitor is a fork of `create`: libcrypto (image digest)
   * it may map, the archive, HTTP, DNS and firewall libraries not */
  cr_assert_eq(an_cli_run("inspect %s", id), 0, "%s", an_cli.err);
  yajl_val v = an_cli_json(an_cli.out);
  yajl_val mp = an_cli_jget(v, "monitor_pid", yajl_t_number);
  cr_assert_not_null(mp, "%s", an_cli.out);
  snprintf(path, sizeof path, "/proc/%lld/maps", YAJL_GET_INTEGER(mp));
  yajl_tree_free(v);
  maps = an_test_read_file(path, NULL);
  cr_assert_not_null(maps);
  for (size_t i = 0; i < 4; i++) cr_expect_null(strstr(maps, heavy[i]), "the monitor maps %s", heavy[i]);
  free(maps);
  cr_expect_eq(an_cli_run("destroy %s", id), 0, "%s", an_cli.err);
}

/* The file the loader opens for libnftables (ldconfig's cache, as dlopen
 * finds it), resolved (heap); NULL when there is none. */
static char *nftables_path(void) {
  char p[300];
  snprintf(p, sizeof p, "%s/nftlib", an_cli.work);
  if (an_test_sh("readlink -f \"$(ldconfig -p | awk '/libnftables[.]so[.]/ {print $NF; exit}')\" > '%s'", p) != 0)
    return NULL;
  char *path = an_test_read_file(p, NULL);
  if (path) path[strcspn(path, "\n")] = '\0';
  if (path && !*path) {
    free(path);
    path = NULL;
  }
  return path;
}

/* Entries of <root>/sandboxes (state directories of sandboxes). */
static int state_dirs(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A '%s/sandboxes' 2>/dev/null | wc -l > '%s/count'", an_cli.root, an_cli.work);
  cr_assert_eq(an_test_sh("%s", cmd), 0);
  char p[300];
  snprintf(p, sizeof p, "%s/count", an_cli.work);
  char *c = an_test_read_file(p, NULL);
  int n = c ? atoi(c) : -1;
  free(c);
  return n;
}

/* s4-red: a library an egress policy needs, missing at run time (here
 * libnftables, hidden under /dev/null in a mount namespace of the test's
 * own), aborted `run --network allowlist` half-way (its first call was in
 * the create's egress thread: SIGABRT, status 134) and left the sandbox's
 * state directory, workspace image and id range behind.  The create now
 * loads what egress needs before it makes anything and refuses with an
 * error naming the library. */
Test(lazylib, a_missing_egress_library_refuses_the_sandbox_cleanly) {
  skip_unless_lazy();
  if (an_test_sh("command -v unshare >/dev/null") != 0) cr_skip_test("unshare(1) is needed");
  an_cli_import("busybox");
  char *lib = nftables_path();
  if (!lib) cr_skip_test("ldconfig knows no libnftables");
  int before = state_dirs();
  int st = an_test_sh("unshare -m sh -c \"mount --make-rprivate / && mount --bind /dev/null '%s' && "
                      "exec '%s' --root '%s' run --image busybox --network allowlist --allow example.com:443 -- true\" "
                      "> '%s/out' 2> '%s/err'",
                      lib, an_cli.bin, an_cli.root, an_cli.work, an_cli.work);
  free(lib);
  char p[300];
  snprintf(p, sizeof p, "%s/err", an_cli.work);
  char *err = an_test_read_file(p, NULL);
  cr_expect_eq(st, 125, "run without libnftables: status %d (134: aborted), stderr: %s", st, err);
  cr_expect(err && strstr(err, "libnftables.so") && strstr(err, "egress cannot be enforced"),
            "the error names no missing library: %s", err);
  free(err);
  cr_expect_eq(state_dirs(), before, "the refused sandbox left a state directory in %s/sandboxes", an_cli.root);
}
