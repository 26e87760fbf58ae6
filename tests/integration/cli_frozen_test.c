/* tests/integration/cli_frozen_test.c — `agentnest exec --timeout` into a
 * sandbox whose cgroup is frozen (paused by an operator, or frozen by a
 * snapshot that reads its workspace), through the built `agentnest`
 * ($AN_TEST_BUILD/agentnest): the exec ends with 124 at its deadline while
 * the sandbox stays frozen (it used to wait for the thaw: with a v1
 * freezer, on hybrid hosts, the killed joiner acts on SIGKILL only once
 * thawed), and once thawed the sandbox runs the next exec and is destroyed
 * with nothing left; the same when the sandbox is frozen while the
 * command runs (the SIGKILLed command, frozen, held the exec in waitid;
 * with a child of it, each kill of the exec's cgroup waited 5 s for a thaw
 * that only the sandbox's cgroup can get); a session call's --timeout in
 * a frozen sandbox ends as session_lost (125) and the monitor still
 * answers (it waited for the thaw to reap the helper);
 * SIGTERM to an exec without --timeout that waits for such a sandbox ends
 * it with 143 (it was ignored until the thaw).  The freeze is the
 * library's an_cgroup_freeze (the v1
 * freezer where one is mounted, else cgroup.freeze); also run in the
 * cgroup v2 VM (tests/run-cgroupv2.sh). */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "agentnest/cgroup.h"
#include "cli_fixture.h"
#include "util.h"

static void setup(void) {
  an_cli_setup("clifrz", 0755);
  an_cli_import("busybox");
}

TestSuite(cli_frozen, .init = setup, .fini = an_cli_teardown, .timeout = 180);

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("clifrz");
}

static struct an_cgroup *sandbox_cgroup(const char *id) {
  char path[128];
  snprintf(path, sizeof path, "agentnest/sb-%s", id);
  struct an_cgroup *cg = NULL;
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_open(path, &cg, &err), 0, "%s", err ? err->msg : "");
  return cg;
}

/* Whether a process of cg has the command name (/proc/PID/comm) `comm`;
 * the names seen into seen. */
static bool runs(struct an_cgroup *cg, const char *comm, char *seen, size_t len) {
  pid_t *pids = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  bool found = false;
  seen[0] = '\0';
  if (an_cgroup_pids(cg, &pids, &n, &err) < 0) an_error_free(&err);
  for (size_t i = 0; i < n && !found; i++) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/comm", (int) pids[i]);
    char *c = an_test_read_file(p, NULL);
    if (c && strlen(seen) + strlen(c) + 1 < len) strcat(seen, c);
    found = c && !strcmp(c, comm);
    free(c);
  }
  free(pids);
  return found;
}

static struct an_cgroup *freeze(const char *id, bool frozen) {
  struct an_cgroup *cg = sandbox_cgroup(id);
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_freeze(cg, frozen, &err), 0, "%s", err ? err->msg : "");
  return cg;
}

/* A new sandbox whose cgroup is frozen; its id into id. */
static struct an_cgroup *create_frozen(char id[64]) {
  /* a small workspace: the cgroup v2 VM's /tmp is a tmpfs of its memory */
  cr_assert_eq(an_cli_run("create --image busybox --disk 16m"), 0, "%s", an_cli.err);
  snprintf(id, 64, "%s", an_cli.out);
  an_cli_chomp(id);
  return freeze(id, true);
}

/* The exec's exit status st is `want`, and its stderr (.err) says `says`. */
static void expect_exit(int st, int want, const char *what, const char *says) {
  char errp[400];
  snprintf(errp, sizeof errp, "%s/.err", an_cli.work);
  char *errtext = an_test_read_file(errp, NULL);
  cr_expect_eq(st, want, "%s: exit %d (137: it waited for the thaw): %s", what, st, errtext ? errtext : "");
  cr_expect(errtext && strstr(errtext, says), "%s", errtext ? errtext : "");
  free(errtext);
}

/* Thaw, then the sandbox runs a command and is destroyed. */
static void thaw_exec_destroy(struct an_cgroup *cg, const char *id) {
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_freeze(cg, false, &err), 0, "%s", err ? err->msg : "");
  an_cgroup_free(cg);
  cr_expect_eq(an_cli_run("exec %s -- echo thawed", id), 0, "%s", an_cli.err);
  cr_expect_str_eq(an_cli.out, "thawed\n");
  cr_expect_eq(an_cli_run("destroy %s", id), 0, "%s", an_cli.err);
}

/* The exec returned while the sandbox was frozen and it kept its
 * processes; thawed, it runs a command and is destroyed, and no process of
 * it (a killed joiner or command included) is left. */
static void kept_then_gone(struct an_cgroup *cg, const char *id) {
  an_error_t err = NULL;
  pid_t *pids = NULL;
  size_t n = 0;
  cr_assert_eq(an_cgroup_pids(cg, &pids, &n, &err), 0, "%s", err ? err->msg : "");
  free(pids);
  cr_expect_gt(n, 0, "the frozen sandbox lost its processes");
  thaw_exec_destroy(cg, id);
  cr_expect(an_test_wait_reaped(an_cli.root), "the destroy's reaper did not finish");
  cr_expect_eq(an_test_sh("for p in /proc/[0-9]*; do grep -qs 'sb-%s' $p/cgroup && "
                          "! grep -qs '^State:.*Z' $p/status && exit 0; done; exit 1", id), 1,
               "a process of sandbox %s is left (zombies aside: pid 1 of the host reaps them)", id);
}

Test(cli_frozen, exec_timeout_into_a_frozen_sandbox_ends_while_it_stays_frozen) {
  char id[64];
  struct an_cgroup *cg = create_frozen(id);
  /* SIGKILL after 120 s (exit 137) only so that a hang fails instead of
   * holding the suite; the exec's own deadline is 1 s */
  int st = an_test_sh("cd '%s' && timeout -s KILL 120 '%s' --root '%s' exec --timeout 1 %s -- true "
                      ">.out 2>.err", an_cli.work, an_cli.bin, an_cli.root, id);
  expect_exit(st, 124, "exec --timeout 1 into a frozen sandbox", "did not reach execve in time");
  kept_then_gone(cg, id);
}

Test(cli_frozen, sigterm_ends_an_exec_waiting_for_a_frozen_sandbox) {
  char id[64];
  struct an_cgroup *cg = create_frozen(id);
  /* SIGTERM after 1 s, SIGKILL (137) 120 s later only if it was ignored */
  int st = an_test_sh("cd '%s' && '%s' --root '%s' exec %s -- true >.out 2>.err & p=$!; sleep 1; "
                      "kill -TERM $p; ( sleep 120; kill -KILL $p 2>/dev/null ) & k=$!; wait $p; s=$?; "
                      "kill $k 2>/dev/null; exit $s", an_cli.work, an_cli.bin, an_cli.root, id);
  expect_exit(st, 143, "SIGTERM to an exec waiting for a frozen sandbox", "cancelled before the process started");
  thaw_exec_destroy(cg, id);
}

/* Once a `sleep` runs in sandbox id (30 s at most), freeze its cgroup. */
static struct an_cgroup *freeze_once_sleeping(const char *id) {
  struct an_cgroup *cg = sandbox_cgroup(id);
  char seen[512] = "";
  for (int i = 0; i < 3000 && !runs(cg, "sleep\n", seen, sizeof seen); i++) usleep(10000);
  cr_assert(runs(cg, "sleep\n", seen, sizeof seen), "no sleep started in 30 s: %s", seen);
  an_error_t err = NULL;
  cr_assert_eq(an_cgroup_freeze(cg, true, &err), 0, "%s", err ? err->msg : "");
  return cg;
}

/* `exec --timeout 3 ID -- CMD` (a shell command line) in a sandbox frozen
 * while CMD's sleep runs: 124 within the 60 s the test allows (SIGKILL,
 * 137, only so that a hang fails); the sandbox keeps its processes until
 * the thaw, then nothing is left. */
static void exec_timeout_frozen_while_running(const char *cmd) {
  char id[64];
  cr_assert_eq(an_cli_run("create --image busybox --disk 16m"), 0, "%s", an_cli.err);
  snprintf(id, sizeof id, "%s", an_cli.out);
  an_cli_chomp(id);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0)
    _exit(an_test_sh("cd '%s' && timeout -s KILL 60 '%s' --root '%s' exec --timeout 3 %s -- %s "
                     ">.out 2>.err", an_cli.work, an_cli.bin, an_cli.root, id, cmd));
  struct an_cgroup *cg = freeze_once_sleeping(id);
  int ws = 0;
  while (waitpid(c, &ws, 0) < 0 && errno == EINTR) {}
  cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 124, "exec --timeout 3 -- %s, frozen while it ran: exit %d "
            "(137: it waited for the thaw)", cmd, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
  kept_then_gone(cg, id);
}

/* The SIGKILLed command, frozen, held the exec in waitid until the thaw. */
Test(cli_frozen, exec_timeout_ends_a_command_frozen_while_it_runs) {
  exec_timeout_frozen_while_running("sleep 100");
}

/* With a child left in the exec's cgroup: each kill of that cgroup (frozen
 * only through the sandbox's cgroup) waited 5 s for a thaw it cannot get,
 * about 110 s in all (red-team rt6). */
Test(cli_frozen, exec_timeout_ends_a_command_and_its_child_frozen_while_they_run) {
  exec_timeout_frozen_while_running("sh -c \"sleep 100 & sleep 100\"");
}

/* A session call's --timeout in a sandbox frozen while the call runs: no
 * result can come, so after the grace the call reports session_lost (125)
 * as documented; the killed session used to hold the caller (and the
 * monitor, which reaps the helper) until the thaw. */
Test(cli_frozen, session_timeout_in_a_frozen_sandbox_reports_session_lost) {
  char id[64];
  cr_assert_eq(an_cli_run("create --image busybox --disk 16m"), 0, "%s", an_cli.err);
  snprintf(id, sizeof id, "%s", an_cli.out);
  an_cli_chomp(id);
  cr_assert_eq(an_cli_run("session start %s --kind shell --name s", id), 0, "%s", an_cli.err);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0)
    _exit(an_test_sh("cd '%s' && timeout -s KILL 60 '%s' --root '%s' session run %s s --timeout 2 'sleep 100' "
                     ">.out 2>.err", an_cli.work, an_cli.bin, an_cli.root, id));
  struct an_cgroup *cg = freeze_once_sleeping(id);
  int ws = 0;
  while (waitpid(c, &ws, 0) < 0 && errno == EINTR) {}
  int st = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  expect_exit(st, 125, "session run --timeout 2, frozen while it ran", "session");
  cr_expect_eq(an_cli_run("session ls %s", id), 0, "the monitor did not answer in the frozen sandbox: %s",
               an_cli.err);
  kept_then_gone(cg, id);
}
