/* tests/integration/exec_reap_test.c — an_exec_reap_unreported
 * (engine/exec_spawn.h): the child of the calling thread that is in the
 * exec's cgroup (a process a killed joiner cloned and never reported) is
 * killed and reaped, however many other children the caller has (a
 * server's workers), and no other child is touched.  The list of the
 * thread's children was read 4 KiB at most (about 500 pids), and the
 * newest child, the one looked for, is listed last: behind 800 others it
 * was never found.  A command a tracer holds is reported killed, with the
 * reason on stderr.  Run as root on the real kernel: this hybrid host and,
 * through tests/run-cgroupv2.sh, a pure cgroup v2 kernel. */
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include "cgroup_common.h"
#include "agentnest/sandbox.h"
#include "engine/exec_spawn.h"
#include "sandbox/sandbox_internal.h"
#include "util.h"

TestSuite(exec_reap, .init = setup, .fini = teardown);

static bool reaped(pid_t pid) {
  return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

Test(exec_reap, finds_the_child_in_the_cgroup_behind_800_others) {
  enum { N = 800 };
  create_ok(NULL);
  pid_t *idle = an_test_idle_children(N);
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  an_exec_reap_unreported(g_cg, NULL, 0);
  bool gone = reaped(k.pid);
  int others_left = 0;
  for (int i = 0; i < N; i++) others_left += waitpid(idle[i], NULL, WNOHANG) == 0;
  an_test_idle_end(idle, N);
  if (gone)
    for (size_t i = 0; i < g_nkids; i++)
      if (g_kids[i] == k.pid) g_kids[i] = 0;
  cr_expect(gone, "the child in the cgroup (pid %d, behind %d others) was not reaped", (int) k.pid, N);
  cr_expect_eq(others_left, N, "children outside the cgroup touched: %d of %d left", others_left, N);
  cr_expect_eq(count_pids(g_cg), 0);
}

Test(exec_reap, leaves_a_caller_with_no_child_in_the_cgroup_as_it_is) {
  create_ok(NULL);
  struct kid k = spawn(sleep_forever);
  an_exec_reap_unreported(g_cg, NULL, 0);
  an_exec_reap_unreported(NULL, NULL, 0);
  cr_expect_eq(waitpid(k.pid, NULL, WNOHANG), 0, "a child outside the cgroup was reaped");
}

/* A command a tracer holds (its zombie is reported to the tracer first,
 * which never waits): exec's wait gives up 5 s after the SIGKILL of its
 * timeout, reports it killed and says so on stderr (it said nothing: a
 * status 137 with no reason).  The tracer is a sibling the test makes, as
 * a tracer in the sandbox would be (with ptrace allowed by a custom
 * seccomp profile, --seccomp-unsafe and --landlock off). */
Test(exec_reap, a_command_a_tracer_holds_is_reported_killed_with_the_reason_on_stderr, .timeout = 60) {
  int po[2], pe[2], ready[2];
  cr_assert_eq(pipe2(po, O_CLOEXEC), 0);
  cr_assert_eq(pipe2(pe, O_CLOEXEC), 0);
  cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
  pid_t victim = fork();
  cr_assert_geq(victim, 0);
  if (victim == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) pause();
  }
  g_kids[g_nkids++] = victim;
  close(po[1]);
  close(pe[1]);
  pid_t tracer = fork();
  cr_assert_geq(tracer, 0);
  if (tracer == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char ok = ptrace(PTRACE_SEIZE, victim, NULL, NULL) == 0 ? 'y' : 'n';
    if (write(ready[1], &ok, 1) != 1) _exit(1);
    for (;;) pause();   /* never waits for its tracee */
  }
  g_kids[g_nkids++] = tracer;
  char ok = 0;
  cr_assert_eq(read(ready[0], &ok, 1), 1);
  cr_assert_eq(ok, 'y', "PTRACE_SEIZE of the victim failed");
  int pidfd = (int) syscall(SYS_pidfd_open, victim, 0);
  cr_assert_geq(pidfd, 0);
  struct an_output_opts oo = {0};
  struct an_exec_result res = {0};
  an_error_t err = NULL;
  int r = an_sb_wait_capture(NULL, pidfd, po[0], pe[0], 300, 0, -1, &oo, &res, &err);
  kill(tracer, SIGKILL);   /* the tracee's zombie goes back to its parent */
  waitpid(tracer, NULL, 0);
  waitpid(victim, NULL, 0);
  close(pidfd);
  cr_assert_eq(r, 0, "%s", err ? err->msg : "");
  cr_expect(res.timed_out);
  cr_expect_eq(res.signal, SIGKILL);
  cr_expect(res.output.stderr_buf && strstr(res.output.stderr_buf, "did not end within 5 s of its SIGKILL") &&
                strstr(res.output.stderr_buf, "tracer"),
            "stderr: %s", res.output.stderr_buf ? res.output.stderr_buf : "(none)");
  an_exec_result_release(&res);
}

/* A child in the cgroup that the caller spares (a container's init or
 * earlier detached exec, in the container's own cgroup) is left alone. */
Test(exec_reap, spares_the_children_it_is_told_to) {
  create_ok(NULL);
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  pid_t spare[] = {k.pid};
  an_exec_reap_unreported(g_cg, spare, 1);
  cr_expect_eq(waitpid(k.pid, NULL, WNOHANG), 0, "a spared child in the cgroup was reaped");
  pid_t *now = NULL;
  size_t n = 0;
  cr_assert(an_exec_thread_children(&now, &n));
  bool listed = false;
  for (size_t i = 0; i < n; i++) listed |= now[i] == k.pid;
  free(now);
  cr_expect(listed, "an_exec_thread_children does not list child %d", (int) k.pid);
}
