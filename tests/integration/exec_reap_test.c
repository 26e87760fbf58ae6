/* tests/integration/exec_reap_test.c — an_exec_reap_unreported
 * (engine/exec_spawn.h): the child of the calling thread that is in the
 * exec's cgroup (a process a killed joiner cloned and never reported) is
 * killed and reaped, however many other children the caller has (a
 * server's workers), and no other child is touched.  The list of the
 * thread's children was read 4 KiB at most (about 500 pids), and the
 * newest child, the one looked for, is listed last: behind 800 others it
 * was never found.  Run as root on the real kernel: this hybrid host and,
 * through tests/run-cgroupv2.sh, a pure cgroup v2 kernel. */
#include "cgroup_common.h"
#include "engine/exec_spawn.h"

TestSuite(exec_reap, .init = setup, .fini = teardown);

static bool reaped(pid_t pid) {
  return waitpid(pid, NULL, WNOHANG) < 0 && errno == ECHILD;
}

Test(exec_reap, finds_the_child_in_the_cgroup_behind_800_others) {
  enum { N = 800 };
  create_ok(NULL);
  pid_t *idle = calloc(N, sizeof *idle);
  cr_assert_not_null(idle);
  for (int i = 0; i < N; i++) {
    idle[i] = fork();
    cr_assert_geq(idle[i], 0, "fork: %s", strerror(errno));
    if (idle[i] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);   /* gone with the test, even one that failed */
      for (;;) pause();
    }
  }
  struct kid k = spawn(sleep_forever);
  enter_and_go(&k);
  an_exec_reap_unreported(g_cg);
  bool gone = reaped(k.pid);
  int others_left = 0;
  for (int i = 0; i < N; i++) others_left += waitpid(idle[i], NULL, WNOHANG) == 0;
  for (int i = 0; i < N; i++) kill(idle[i], SIGKILL);
  for (int i = 0; i < N; i++) waitpid(idle[i], NULL, 0);
  free(idle);
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
  an_exec_reap_unreported(g_cg);
  an_exec_reap_unreported(NULL);
  cr_expect_eq(waitpid(k.pid, NULL, WNOHANG), 0, "a child outside the cgroup was reaped");
}
