/* tests/integration/caller_death_test.c — issue 10 item 9: what a caller's
 * death or signals do to its sandbox and its commands.
 *   - a one-shot `agentnest shell` killed with SIGKILL takes its sandbox
 *     along (its monitor watches the CLI), and prune removes such a sandbox
 *     even while the monitor lives (the owner is recorded);
 *   - SIGINT, SIGTERM or SIGHUP to `agentnest exec` ends the command's whole
 *     process tree, and the CLI exits 128+N; so does its SIGKILL;
 *   - a plain prune removes expiry tombstones.
 * Drives the built binary ($AN_TEST_BUILD/agentnest) and the library on one
 * store per test; uses the busybox image of `make images` (skipped when
 * absent).  Run as root from the worktree root. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "store_fixture.h"
#include "util.h"
#include "ctx_fixture.h"

#define CACHE "/var/cache/agentnest/images"
static char g_root[PATH_MAX / 2];
static char g_bin[PATH_MAX];

#define msleep an_test_msleep

static void setup(void) {
  an_test_lib_env(g_bin, sizeof g_bin);
  snprintf(g_root, sizeof g_root, "/tmp/an-callertest-%d", (int) getpid());
  an_test_store_make(g_root);
  an_test_store_image(g_root, "busybox", false);
}

/* prunes every sandbox left, then removes the store (tests/lib/util.h) */
static void teardown_store(void) {
  if (g_root[0]) an_test_store_remove(g_root);
}

TestSuite(caller, .init = setup, .fini = teardown_store, .timeout = 180);

/* Start `agentnest --root ROOT ARGS...` (stdout/stderr to /dev/null). */
static pid_t start_cli(char *const args[]) {
  char *argv[32] = {g_bin, "--root", g_root};
  size_t n = 3;
  for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
  argv[n] = NULL;
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int null = open("/dev/null", O_RDWR);
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    execv(g_bin, argv);
    _exit(127);
  }
  return pid;
}

/* The id of the live sandbox named `name` ("" if none), its monitor pid. */
static void find_named(const char *name, char id[AN_SANDBOX_ID_LEN + 1], pid_t *monitor) {
  id[0] = '\0';
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  if (an_sandbox_list(g_root, &l, &n, &err) == 0) {
    for (size_t k = 0; k < n; k++)
      if (l[k].name && !strcmp(l[k].name, name) && !strcmp(l[k].status, "running")) {
        snprintf(id, AN_SANDBOX_ID_LEN + 1, "%s", l[k].id);
        if (monitor) *monitor = l[k].monitor_pid;
      }
    an_sandbox_info_list_free(l, n);
  }
  an_error_free(&err);
}

static bool sandbox_dir_exists(const char *id) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/sandboxes/%s", g_root, id);
  return access(p, F_OK) == 0;
}

/* Start a one-shot `shell 'sleep 300'` named NAME and wait until it runs. */
static pid_t start_one_shot(const char *name, char id[AN_SANDBOX_ID_LEN + 1], pid_t *monitor) {
  char *args[] = {"shell", "--image", "busybox", "--name", (char *) name, "sleep 300", NULL};
  pid_t cli = start_cli(args);
  for (int i = 0; i < 1000 && !id[0]; i++) {
    find_named(name, id, monitor);
    if (!id[0]) msleep(20);
  }
  cr_assert(id[0], "the one-shot sandbox %s never appeared", name);
  return cli;
}

Test(caller, one_shot_cli_sigkilled_takes_its_sandbox_along) {
  char name[64], id[AN_SANDBOX_ID_LEN + 1] = "";
  snprintf(name, sizeof name, "kill9-%d", (int) getpid());
  pid_t cli = start_one_shot(name, id, NULL);
  cr_assert_eq(kill(cli, SIGKILL), 0);
  waitpid(cli, NULL, 0);
  /* the monitor sees its owner exit at once; allow a slow machine time to
   * tear down (never asserting how long it took) */
  for (int i = 0; i < 1500 && sandbox_dir_exists(id); i++) msleep(20);
  cr_expect(!sandbox_dir_exists(id), "sandbox %s still there after its CLI was SIGKILLed", id);
  char again[AN_SANDBOX_ID_LEN + 1] = "";
  find_named(name, again, NULL);
  cr_expect(!again[0], "`ls` still lists %s as running", name);
}

Test(caller, prune_removes_a_one_shot_whose_cli_died_while_its_monitor_lives) {
  char name[64], id[AN_SANDBOX_ID_LEN + 1] = "";
  snprintf(name, sizeof name, "prune-%d", (int) getpid());
  pid_t monitor = 0;
  pid_t cli = start_one_shot(name, id, &monitor);
  cr_assert_gt(monitor, 0);
  /* the monitor is alive but cannot act: prune alone must see the owner gone */
  cr_assert_eq(kill(monitor, SIGSTOP), 0);
  cr_assert_eq(kill(cli, SIGKILL), 0);
  waitpid(cli, NULL, 0);
  char *report = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, id) && strstr(report, "creator dead"), "prune kept %s: %s", id, report);
  free(report);
  kill(monitor, SIGKILL);   /* teardown killed it already when it ran */
  cr_expect(!sandbox_dir_exists(id), "sandbox %s still there after prune", id);
}

/* Whether `ps` inside sb lists a process whose command line has `what`. */
static bool ps_has(struct an_sandbox *sb, const char *what) {
  char *argv[] = {"ps", "-o", "pid,args", NULL};
  struct an_exec_result res;
  an_error_t err = NULL;
  cr_assert(an_sandbox_exec(sb, argv, NULL, &res, &err) == 0, "ps: %s", err ? err->msg : "");
  bool has = res.output.stdout_buf && strstr(res.output.stdout_buf, what);
  an_exec_result_release(&res);
  return has;
}

Test(caller, exec_ends_with_the_caller_on_sigint_sigterm_sighup) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < 3; i++) {
    /* a background grandchild and a foreground child: the whole tree */
    char script[128];
    snprintf(script, sizeof script, "sleep 3%zu1 & exec sleep 3%zu2", i, i);
    char *args[] = {"exec", (char *) an_sandbox_id(sb), "--", "sh", "-c", script, NULL};
    pid_t cli = start_cli(args);
    char marker[32];
    snprintf(marker, sizeof marker, "sleep 3%zu2", i);
    bool seen = false;
    for (int k = 0; k < 500 && !(seen = ps_has(sb, marker)); k++) msleep(20);
    cr_assert(seen, "the exec's command never ran");
    cr_assert_eq(kill(cli, sigs[i]), 0);
    int st = 0;
    cr_assert_eq(waitpid(cli, &st, 0), cli);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sigs[i],
              "%s to `agentnest exec`: status %#x (want exit %d)", strsignal(sigs[i]), st, 128 + sigs[i]);
    char bg[32];
    snprintf(bg, sizeof bg, "sleep 3%zu1", i);
    bool left = true;
    for (int k = 0; k < 500 && (left = ps_has(sb, bg) || ps_has(sb, marker)); k++) msleep(20);
    cr_expect(!left, "%s to `agentnest exec` left its command running", strsignal(sigs[i]));
  }
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0, "%s", err ? err->msg : "");
  an_sandbox_close(sb);
  an_sandbox_opts_free(o);
}

/* SIGKILL cannot be handled by the CLI: the library's watch of its caller
 * ends the command, before any other exec can take the slot. */
Test(caller, exec_cli_sigkilled_ends_its_command) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  /* this handle takes its exec slot first and keeps it: its own execs
   * never empty the slot of the CLI's command */
  cr_assert(!ps_has(sb, "sleep 471"));
  char *args[] = {"exec", (char *) an_sandbox_id(sb), "--", "sh", "-c", "sleep 471 & exec sleep 472", NULL};
  pid_t cli = start_cli(args);
  bool seen = false;
  for (int k = 0; k < 500 && !(seen = ps_has(sb, "sleep 472")); k++) msleep(20);
  cr_assert(seen, "the exec's command never ran");
  cr_assert_eq(kill(cli, SIGKILL), 0);
  waitpid(cli, NULL, 0);
  bool left = true;
  for (int k = 0; k < 500 && (left = ps_has(sb, "sleep 471") || ps_has(sb, "sleep 472")); k++) msleep(20);
  cr_expect(!left, "SIGKILL of `agentnest exec` left its command running");
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0, "%s", err ? err->msg : "");
  an_sandbox_close(sb);
  an_sandbox_opts_free(o);
}

Test(caller, plain_prune_removes_expiry_tombstones) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  cr_assert(an_sandbox_opts_set_option(o, "timeout", "1s", &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  char id[AN_SANDBOX_ID_LEN + 1], tomb[PATH_MAX];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);
  snprintf(tomb, sizeof tomb, "%s/sandbox-expired/%s", g_root, id);
  for (int i = 0; i < 1500 && (access(tomb, F_OK) != 0 || sandbox_dir_exists(id)); i++) msleep(20);
  cr_assert(access(tomb, F_OK) == 0, "no tombstone %s after expiry", tomb);
  struct an_sandbox *again = NULL;
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err), -ETIME, "before prune: %s", err ? err->msg : "");
  an_error_free(&err);
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, "\"tombstones\"") && strstr(report, id), "report: %s", report);
  free(report);
  cr_expect(access(tomb, F_OK) != 0, "plain prune left the tombstone %s", tomb);
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err), -ENOENT, "after prune: %s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}
