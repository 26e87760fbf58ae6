/* tests/integration/cgroup_birth_test.c — an_cgroup_birth_begin/enter/end
 * (agentnest/cgroup.h): a child that writes itself into the cgroup's v1
 * `tasks` files (opened by the parent as root) and is cloned with
 * CLONE_INTO_CGROUP is in the cgroup in every hierarchy; so is a child
 * already inside a new user namespace (pid 1's case: the kernel checks the
 * opener's credentials); the parent never enters the cgroup; a cgroup that
 * is gone is refused at begin with its path.  The engine's use of it is
 * covered by container_test, sandbox_test and the escapes (every pid 1 and
 * exec is born this way on this host).  Run as root on this hybrid host and,
 * through tests/run-cgroupv2.sh, on a pure cgroup v2 kernel (where begin
 * only hands out the clone3 fd). */
#include <linux/sched.h>
#include <sys/syscall.h>
#include "cgroup_common.h"

TestSuite(cgroup_birth, .init = setup, .fini = teardown);

static char *read_text(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "re");
  cr_assert_not_null(f, "open %s", path);
  size_t n = fread(buf, 1, len - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* clone3 (flags, CLONE_INTO_CGROUP b->clone_fd when >= 0) of a child that
 * steps in (an_cgroup_birth_enter), says 0 or the errno on `out`, and
 * sleeps; the parent closes its copies. */
static pid_t clone_stepping_child(struct an_cgroup_birth *b, uint64_t flags, int *res) {
  int p[2];
  cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
  struct clone_args a = {.flags = flags, .exit_signal = SIGCHLD};
  if (b->clone_fd >= 0) {
    a.flags |= CLONE_INTO_CGROUP;
    a.cgroup = (uint64_t) b->clone_fd;
  }
  long pid = syscall(SYS_clone3, &a, sizeof a);
  if (pid == 0) {
    an_error_t e = NULL;
    int r = an_cgroup_birth_enter(b, &e);
    if (write(p[1], &r, sizeof r) != sizeof r) _exit(1);
    for (;;) pause();
  }
  cr_assert_gt(pid, 0, "clone3: %s", strerror(errno));
  g_kids[g_nkids++] = (pid_t) pid;
  an_cgroup_birth_end(b);
  close(p[1]);
  cr_assert_eq(read(p[0], res, sizeof *res), (ssize_t) sizeof *res);
  close(p[0]);
  return (pid_t) pid;
}

/* Whether every line of /proc/PID/cgroup of a hierarchy the cgroup was
 * made in names it: memory (v1) and the cgroup2 line where mounted. */
static void assert_inside(pid_t pid) {
  char p[64], buf[8192];
  snprintf(p, sizeof p, "/proc/%d/cgroup", (int) pid);
  read_text(p, buf, sizeof buf);
  bool memory = false, unified = false;
  for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
    bool in = strstr(l, g_path) != NULL;
    if (strstr(l, ":memory:")) memory = in;
    if (!strncmp(l, "0::", 3)) unified = in;
  }
  struct statfs s;
  bool has_unified = host_is_unified() ||
                     (statfs("/sys/fs/cgroup/unified", &s) == 0 && s.f_type == CGROUP2_SUPER_MAGIC);
  if (!host_is_unified()) cr_assert(memory, "pid %d is not in %s in the memory hierarchy", (int) pid, g_path);
  if (has_unified) cr_assert(unified, "pid %d is not in %s in the cgroup2 hierarchy", (int) pid, g_path);
}

static void child_steps_in(uint64_t flags) {
  create_ok(NULL);
  char before[8192], after[8192];
  read_text("/proc/thread-self/cgroup", before, sizeof before);
  struct an_cgroup_birth b;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_birth_begin(g_cg, &b, &err), 0, "begin: %s", err ? err->msg : "?");
  if (!host_is_unified()) cr_assert_gt(b.n, 0, "no v1 hierarchy to step into");
  int res = -1;
  pid_t kid = clone_stepping_child(&b, flags, &res);
  cr_assert_eq(res, 0, "the child could not step in: %s", strerror(-res));
  assert_inside(kid);
  cr_assert_str_eq(read_text("/proc/thread-self/cgroup", after, sizeof after), before,
                   "the parent's cgroups changed");
  cr_assert_eq(b.n, 0, "end left files open");
}

Test(cgroup_birth, a_child_steps_into_every_hierarchy_and_the_parent_stays_out) {
  child_steps_in(0);
}

Test(cgroup_birth, a_child_in_a_new_user_namespace_steps_in_too) {
  child_steps_in(CLONE_NEWUSER);
}

Test(cgroup_birth, a_cgroup_that_is_gone_is_refused_at_begin) {
  if (host_is_unified()) cr_skip_test("v1 only: on v2 begin opens no file");
  create_ok(NULL);
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_destroy(g_cg, &err), 0, "destroy: %s", err ? err->msg : "?");
  struct an_cgroup_birth b;
  /* destroy killed it first (cgroup.kill where there is one): either error */
  int r = an_cgroup_birth_begin(g_cg, &b, &err);
  cr_assert(r == -ENOENT || r == -ESTALE, "begin: %d", r);
  cr_assert(err && strstr(err->msg, g_path), "%s", err ? err->msg : "no message");
  an_error_free(&err);
  cr_assert_eq(b.n, 0);
}

/* Linux 6.18 kills a child cloned (CLONE_INTO_CGROUP) into a cgroup that
 * cgroup.kill reached before: an exec slot reused after a timeout died at
 * birth ("sync point 1: EPIPE").  begin refuses such a cgroup, and the
 * engine then clones outside and moves the child (cli_test's
 * exec_timeout_leaves_the_sandbox_and_its_files). */
Test(cgroup_birth, a_cgroup_killed_before_is_refused) {
  create_ok(NULL);
  if (an_cgroup_clone_fd(g_cg) < 0 && access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) != 0)
    cr_skip_test("no cgroup2 hierarchy: no CLONE_INTO_CGROUP");
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_kill(g_cg, SIGKILL, &err), 0, "kill: %s", err ? err->msg : "?");
  struct an_cgroup_birth b;
  cr_assert_eq(an_cgroup_birth_begin(g_cg, &b, &err), -ESTALE, "%s", err ? err->msg : "begun");
  cr_assert(strstr(err->msg, "killed before"), "%s", err->msg);
  an_error_free(&err);
  cr_assert_eq(b.n, 0);
}

/* The same kernel check compares the target's kill_seq with that of the
 * forking task's own cgroup: a runtime living in a cgroup2 cgroup that
 * cgroup.kill reached before (a CI job's or service's cgroup reused after a
 * kill, then entered again) had every child it cloned into a fresh, never
 * killed cgroup killed at birth ("sync point 2 (mounted): receive:
 * ECONNRESET" for every run and exec on a hybrid host, where the
 * cgroup.procs writes had worked).  begin refuses (the old way works), or
 * the child it lets be cloned lives. */
Test(cgroup_birth, a_runtime_in_a_cgroup_killed_before_is_refused_or_its_child_lives) {
  char u[256];
  if (host_is_unified()) snprintf(u, sizeof u, "/sys/fs/cgroup");
  else if (access("/sys/fs/cgroup/unified/cgroup.procs", F_OK) == 0) snprintf(u, sizeof u, "/sys/fs/cgroup/unified");
  else cr_skip_test("no cgroup2 hierarchy: no CLONE_INTO_CGROUP");
  /* where this process is now (to come back), then a killed cgroup to live in */
  char self[4096], home[4400], killed[512];
  read_text("/proc/self/cgroup", self, sizeof self);
  char *l = strstr(self, "0::");
  cr_assert_not_null(l, "no cgroup2 line in /proc/self/cgroup");
  l += 3;
  l[strcspn(l, "\n")] = '\0';
  snprintf(home, sizeof home, "%s%s/cgroup.procs", u, l);
  snprintf(killed, sizeof killed, "%s/an-test-cg-%d-forker", u, (int) getpid());
  cr_assert(mkdir(killed, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", killed, strerror(errno));
  an_error_t err = NULL;
  int w = an_cg_write(killed, "cgroup.kill", "1", &err);
  an_error_free(&err);
  if (w < 0) { rmdir(killed); cr_skip_test("no cgroup.kill (Linux < 5.14)"); }
  char me[32];
  snprintf(me, sizeof me, "%d", (int) getpid());
  cr_assert_eq(an_cg_write(killed, "cgroup.procs", me, &err), 0, "%s", err ? err->msg : "?");
  create_ok(NULL);
  struct an_cgroup_birth b;
  int r = an_cgroup_birth_begin(g_cg, &b, &err);
  int res = -1;
  bool lived = true;
  if (r == 0 && b.clone_fd >= 0) {
    /* as clone_stepping_child, but a child killed at birth must not abort the test here */
    int pp[2];
    cr_assert_eq(pipe2(pp, O_CLOEXEC), 0);
    struct clone_args a = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t) b.clone_fd};
    long pid = syscall(SYS_clone3, &a, sizeof a);
    if (pid == 0) {
      an_error_t e = NULL;
      int rr = an_cgroup_birth_enter(&b, &e);
      if (write(pp[1], &rr, sizeof rr) != sizeof rr) _exit(1);
      _exit(0);
    }
    an_cgroup_birth_end(&b);
    close(pp[1]);
    lived = pid > 0 && read(pp[0], &res, sizeof res) == (ssize_t) sizeof res;
    close(pp[0]);
    if (pid > 0) waitpid((pid_t) pid, NULL, 0);
  } else {
    an_cgroup_birth_end(&b);
  }
  an_error_free(&err);
  /* back home, before any assertion, so that the killed cgroup can go */
  FILE *f = fopen(home, "we");
  if (f) { fputs(me, f); fclose(f); }
  rmdir(killed);
  cr_assert(r == 0 || r == -ESTALE, "begin: %d", r);
  cr_assert(lived, "the child cloned into a fresh cgroup was killed at birth (its forker's cgroup was "
            "killed before): begin should have refused");
  if (r == 0 && b.clone_fd >= 0) cr_assert_eq(res, 0, "step in: %s", strerror(-res));
}
