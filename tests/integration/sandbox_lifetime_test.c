/* tests/integration/sandbox_lifetime_test.c — the end of a sandbox on the
 * real kernel: lifetime expiry with no client, prune (and destroy) after
 * SIGKILL of the monitor (also once past the deadline), prune after SIGKILL of the creating process
 * (mid-run and at any point), each leaving nothing on the host; open
 * refuses what ls calls dead (an owned sandbox whose owner is gone; "is
 * being destroyed" while a destroy is at work) and says a sandbox a
 * destroy is removing has ended.
 *
 * Uses the busybox (and, where needed, python) image from the image cache
 * (`make images`) in one store per run (sandbox_common.h); skips with a
 * message when the cache is absent.  Run as root from the worktree root. */
#include <sys/mount.h>
#include "sandbox_common.h"
#include "sandbox/sandbox_internal.h"

TestSuite(sandbox, .init = setup, .timeout = 120);

Test(sandbox, lifetime_expiry_destroys_it_with_no_client) {
  struct an_sandbox_opts *o = opts_for("busybox");
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_lifetime(o, 1500, &err) == 0);
  cr_assert(an_sandbox_opts_set_name(o, "exp-test", &err) == 0);
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);   /* nobody connected */
  char p[PATH_MAX + 64];
  snprintf(p, sizeof p, "%s/sandboxes/%s", g_root, id);
  for (int i = 0; i < 200 && access(p, F_OK) == 0; i++) msleep(50);
  assert_gone(id);
  struct an_sandbox *again = NULL;
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err), -ETIME);
  cr_expect(err && strstr(err->msg, "expired"), "%s", err ? err->msg : "(no error)");
  an_error_free(&err);
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, "exp-test", &again, &err), -ETIME, "by name");
  char want[64];
  snprintf(want, sizeof want, "sandbox exp-test (%s) expired", id);
  cr_expect(err && strstr(err->msg, want), "the name the caller gave, and the id: %s", err ? err->msg : "");
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

Test(sandbox, monitor_sigkill_then_prune_leaves_nothing) {
  struct an_sandbox_opts *o = opts_for("busybox");
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  pid_t mon = an_sandbox_monitor_pid(sb);
  cr_assert_gt(mon, 0);
  struct an_exec_result res = run(sb, "echo x > /workspace/x", 0);
  an_exec_result_release(&res);
  cr_assert(kill(mon, SIGKILL) == 0);
  for (int i = 0; i < 100 && kill(mon, 0) == 0; i++) msleep(10);
  an_sandbox_close(sb);
  struct an_sandbox *again = NULL;
  an_error_t err = NULL;
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err), -ESRCH, "%s", err ? err->msg : "");
  an_error_free(&err);
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, id), "report: %s", report);
  cr_expect(strstr(report, "monitor dead"), "report: %s", report);
  free(report);
  assert_gone(id);
  an_sandbox_opts_free(o);
}

/* A dead sandbox was refused by destroy ("run prune"), unlike `runc delete` of a stopped
 * container: now destroy (by name here) removes it as prune would, and refuses a live one. */
Test(sandbox, destroy_dead_removes_a_sandbox_whose_monitor_was_killed) {
  struct an_sandbox_opts *o = opts_for("busybox");
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_name(o, "dead-one", &err) == 0);
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1], got[AN_SANDBOX_ID_LEN + 1] = "";
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  cr_expect_eq(an_sandbox_destroy_dead_ctx(an_test_ctx(), g_root, id, got, &err), -EBUSY, "a live one");
  cr_expect(err && strstr(err->msg, "is not dead"), "%s", err ? err->msg : "");
  an_error_free(&err);
  pid_t mon = an_sandbox_monitor_pid(sb);
  cr_assert_gt(mon, 0);
  cr_assert(kill(mon, SIGKILL) == 0);
  for (int i = 0; i < 100 && kill(mon, 0) == 0; i++) msleep(10);
  an_sandbox_close(sb);
  struct an_sandbox *again = NULL;
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, "dead-one", &again, &err), -ESRCH);
  char want[64];
  snprintf(want, sizeof want, "sandbox dead-one (%s) is dead", id);
  cr_expect(err && strstr(err->msg, want) && strstr(err->msg, "agentnest destroy"), "%s", err ? err->msg : "");
  an_error_free(&err);
  cr_assert_eq(an_sandbox_destroy_dead_ctx(an_test_ctx(), g_root, "dead-one", got, &err), 0, "%s",
               err ? err->msg : "");
  cr_expect_str_eq(got, id);
  assert_gone(id);
  cr_expect_eq(an_sandbox_destroy_dead_ctx(an_test_ctx(), g_root, id, got, &err), -ENOENT);
  an_error_free(&err);
  an_sandbox_opts_free(o);
}

/* Past its deadline with its monitor killed (nothing tore it down): dead,
 * not "expired" (which said the monitor was at it), so destroy removes it;
 * destroy used to refuse it with ETIME while its processes ran on. */
Test(sandbox, destroy_dead_removes_one_past_its_deadline_whose_monitor_was_killed) {
  struct an_sandbox_opts *o = opts_for("busybox");
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_lifetime(o, 1500, &err) == 0);
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1], got[AN_SANDBOX_ID_LEN + 1] = "";
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  pid_t mon = an_sandbox_monitor_pid(sb);
  cr_assert_gt(mon, 0);
  cr_assert(kill(mon, SIGKILL) == 0);
  for (int i = 0; i < 100 && kill(mon, 0) == 0; i++) msleep(10);
  an_sandbox_close(sb);
  msleep(2000);   /* past the deadline */
  struct an_sandbox *again = NULL;
  cr_expect_eq(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err), -ESRCH, "%s",
               err ? err->msg : "");
  an_error_free(&err);
  cr_assert_eq(an_sandbox_destroy_dead_ctx(an_test_ctx(), g_root, id, got, &err), 0, "%s",
               err ? err->msg : "");
  assert_gone(id);
  an_sandbox_opts_free(o);
}

Test(sandbox, creator_sigkill_mid_run_then_prune_leaves_nothing) {
  pid_t child = fork();
  cr_assert(child >= 0);
  if (child == 0) {
    struct an_sandbox_opts *o = opts_for("busybox");
    char *argv[] = {"sh", "-c", "echo started > /workspace/s; sleep 300", NULL};
    struct an_exec_result res;
    an_error_t err = NULL;
    char *id = NULL;
    an_sandbox_run_once(g_root, o, argv, NULL, &res, &id, &err);
    _exit(0);
  }
  /* find the one-shot sandbox: the one owned by `child` */
  char id[AN_SANDBOX_ID_LEN + 1] = "";
  for (int i = 0; i < 500 && !*id; i++) {
    struct an_sandbox_info *l = NULL;
    size_t n = 0;
    an_error_t err = NULL;
    if (an_sandbox_list(g_root, &l, &n, &err) == 0) {
      for (size_t k = 0; k < n; k++)
        if (l[k].owner_pid == child && l[k].init_pid) snprintf(id, sizeof id, "%s", l[k].id);
      an_sandbox_info_list_free(l, n);
    }
    an_error_free(&err);
    if (!*id) msleep(10);
  }
  cr_assert(*id, "one-shot sandbox not found");
  char s[PATH_MAX + 64];
  snprintf(s, sizeof s, "%s/sandboxes/%s/workspace/s", g_root, id);
  for (int i = 0; i < 500 && access(s, F_OK) != 0; i++) msleep(10);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  char *report = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, id), "report: %s", report);
  free(report);
  assert_gone(id);
}

/* SIGKILL of the creating process at random points of create, then prune:
 * only fully created sandboxes (their monitor alive) remain, and after
 * prune --all nothing at all. */
Test(sandbox, creator_sigkill_at_any_point_then_prune_leaves_nothing) {
  snprintf(g_root, sizeof g_root, "/tmp/an-sbtest-kill-%d", (int) getpid());
  an_error_t err = NULL;
  cr_assert(an_image_import(g_root, CACHE "/busybox/layout", "busybox", NULL, NULL, &err) == 0,
            "import: %s", err ? err->msg : "");
  srand((unsigned) getpid());
  for (int round = 0; round < 12; round++) {
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
      struct an_sandbox_opts *o = opts_for("busybox");
      struct an_sandbox *sb = NULL;
      an_error_t e = NULL;
      an_sandbox_create(g_root, o, &sb, &e);
      pause();
      _exit(0);
    }
    msleep(rand() % 60);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
  }
  char *report = NULL;
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, false, &report, &err) == 0, "%s", err ? err->msg : "");
  free(report);
  /* what is left is alive */
  struct an_sandbox_info *l = NULL;
  size_t n = 0;
  cr_assert(an_sandbox_list(g_root, &l, &n, &err) == 0);
  for (size_t i = 0; i < n; i++) cr_expect_str_eq(l[i].status, "running", "%s is %s", l[i].id, l[i].status);
  an_sandbox_info_list_free(l, n);
  /* collect every id the store knows, then remove everything */
  char ids[64][AN_SANDBOX_ID_LEN + 1];
  size_t nid = 0;
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/sandboxes", g_root);
  DIR *d = opendir(p);
  struct dirent *de;
  while (d && (de = readdir(d)))
    if (strlen(de->d_name) == AN_SANDBOX_ID_LEN && nid < 64) memcpy(ids[nid++], de->d_name, AN_SANDBOX_ID_LEN + 1);
  if (d) closedir(d);
  cr_assert(an_sandbox_prune_ctx(an_test_ctx(), g_root, true, &report, &err) == 0, "%s", err ? err->msg : "");
  cr_expect(strstr(report, "\"errors\":[]"), "%s", report);
  free(report);
  for (size_t i = 0; i < nid; i++) assert_gone(ids[i]);
  static const char *const dirs[] = {"sandboxes", "containers", "idranges", "sandbox-names", NULL};
  for (size_t i = 0; dirs[i]; i++) {
    snprintf(p, sizeof p, "%s/%s", g_root, dirs[i]);
    d = opendir(p);
    while (d && (de = readdir(d)))
      cr_expect(de->d_name[0] == '.' && strncmp(de->d_name, ".new-", 5), "%s/%s remains", p, de->d_name);
    if (d) closedir(d);
  }
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char line[4096];
  while (f && fgets(line, sizeof line, f)) cr_expect(!strstr(line, g_root), "mount remains: %s", line);
  if (f) fclose(f);
  an_test_rm_tree(g_root);
}

/* open says what `ls` says (an_sb_status): an owned sandbox (create_owned)
 * whose owner is gone is dead for both.  open used to judge by the monitor
 * and pid 1 alone and handed out such a sandbox while ls called it dead.
 * The owner here is a record rewritten to name an exited process (a real
 * owner's death makes the monitor end the sandbox at once). */
Test(sandbox, open_refuses_an_owned_sandbox_whose_owner_is_gone_as_ls_calls_it_dead) {
  struct an_sandbox_opts *o = opts_for("busybox");
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1], dir[PATH_MAX + 64], got[AN_SANDBOX_ID_LEN + 1] = "";
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  an_sandbox_close(sb);
  snprintf(dir, sizeof dir, "%s/sandboxes/%s", g_root, id);
  pid_t gone = fork();
  cr_assert_geq(gone, 0);
  if (gone == 0) _exit(0);
  cr_assert_eq(waitpid(gone, NULL, 0), gone);
  struct an_sb_record rec = {0};
  an_error_t err = NULL;
  cr_assert_eq(an_sb_record_read(dir, &rec, &err), 0, "%s", err ? err->msg : "");
  rec.owner_pid = gone;
  rec.owner_start = 1;
  cr_assert_eq(an_sb_record_write(dir, &rec, &err), 0, "%s", err ? err->msg : "");
  an_sb_record_clear(&rec);
  struct an_sandbox_info *list = NULL;
  size_t n = 0;
  cr_assert_eq(an_sandbox_list(g_root, &list, &n, &err), 0, "%s", err ? err->msg : "");
  bool listed_dead = false;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i].id, id)) listed_dead = !strcmp(list[i].status, "dead");
  an_sandbox_info_list_free(list, n);
  cr_expect(listed_dead, "ls does not call sandbox %s dead", id);
  struct an_sandbox *again = NULL;
  int r = an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err);
  cr_expect_eq(r, -ESRCH, "open of a sandbox ls calls dead: %d %s", r, err ? err->msg : "");
  cr_expect(err && strstr(err->msg, "is dead") && strstr(err->msg, "destroy it"), "%s", err ? err->msg : "");
  if (r == 0) an_sandbox_close(again);
  an_error_free(&err);
  /* while a destroy is at work (its mark, its lock held): not "destroy
   * it"; the lock held by another operation, or a mark a teardown that
   * died left (the lock free), change nothing (red-team rt8) */
  char lockp[PATH_MAX + 80], mark[PATH_MAX + 80];
  snprintf(lockp, sizeof lockp, "%s/lock", dir);
  snprintf(mark, sizeof mark, "%s/destroying", dir);
  int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  cr_assert_geq(lk, 0, "open %s: %s", lockp, strerror(errno));
  cr_assert(flock(lk, LOCK_EX) == 0);
  r = an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err);
  cr_expect(r == -ESRCH && err && strstr(err->msg, "destroy it"), "locked, no mark: %d %s", r, err ? err->msg : "");
  if (r == 0) an_sandbox_close(again);
  an_error_free(&err);
  an_test_write_file(mark, "", 0, 0600);
  r = an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err);
  close(lk);
  cr_expect_eq(r, -ESRCH, "open of a dead sandbox a destroy holds: %d %s", r, err ? err->msg : "");
  cr_expect(err && strstr(err->msg, "is being destroyed") && !strstr(err->msg, "destroy it"), "%s",
            err ? err->msg : "");
  if (r == 0) an_sandbox_close(again);
  an_error_free(&err);
  r = an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err);
  cr_expect(r == -ESRCH && err && strstr(err->msg, "destroy it"), "a mark, the lock free: %d %s", r,
            err ? err->msg : "");
  if (r == 0) an_sandbox_close(again);
  an_error_free(&err);
  cr_assert_eq(an_sandbox_destroy_dead_ctx(an_test_ctx(), g_root, id, got, &err), 0, "%s",
               err ? err->msg : "");
  assert_gone(id);
  an_sandbox_opts_free(o);
}

/* Open between a destroy's removal of the workspace and its move of the
 * state: "ended while it was being opened" (ESRCH), as exec's other races
 * say, not "open <state>/workspace: ENOENT" (ci of ef597ff, exec racing
 * destroy under ASan).  The destroy is played by the test: it moves the
 * workspace aside, holds the lock and writes the mark a teardown writes.
 * Without the mark (an operator removed the workspace of a running
 * sandbox, with or without another operation holding its lock: red-team
 * rt8) the error stays the workspace's own. */
Test(sandbox, open_while_a_destroy_removes_the_workspace_says_the_sandbox_ended) {
  struct an_sandbox_opts *o = opts_for("busybox");
  struct an_sandbox *sb = make_sb(o);
  char id[AN_SANDBOX_ID_LEN + 1], dir[PATH_MAX + 64], ws[PATH_MAX + 80], aside[PATH_MAX + 80],
      lockp[PATH_MAX + 80], mark[PATH_MAX + 80];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  snprintf(dir, sizeof dir, "%s/sandboxes/%s", g_root, id);
  snprintf(ws, sizeof ws, "%s/workspace", dir);
  snprintf(aside, sizeof aside, "%s/workspace.aside", dir);
  snprintf(lockp, sizeof lockp, "%s/lock", dir);
  snprintf(mark, sizeof mark, "%s/destroying", dir);
  cr_assert(mkdir(aside, 0700) == 0, "mkdir %s: %s", aside, strerror(errno));
  cr_assert(mount(ws, aside, NULL, MS_MOVE, NULL) == 0, "move the workspace mount: %s", strerror(errno));
  cr_assert(rmdir(ws) == 0, "rmdir %s: %s", ws, strerror(errno));
  an_error_t err = NULL;
  struct an_sandbox *again = NULL;
  char *m[3];
  int r[3];
  int lk = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  cr_assert_geq(lk, 0, "open %s: %s", lockp, strerror(errno));
  for (int i = 0; i < 3; i++) {
    if (i == 1) cr_assert(flock(lk, LOCK_EX) == 0);   /* another operation's lock */
    if (i == 2) an_test_write_file(mark, "", 0, 0600);   /* and a teardown's mark */
    r[i] = an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err);
    m[i] = strdup(err ? err->msg : "");
    an_error_free(&err);
    if (r[i] == 0) an_sandbox_close(again);
  }
  close(lk);
  unlink(mark);
  /* put it back, so that destroy removes what create made */
  cr_assert(mkdir(ws, 0700) == 0);
  cr_assert(mount(aside, ws, NULL, MS_MOVE, NULL) == 0, "move the workspace back: %s", strerror(errno));
  rmdir(aside);
  cr_assert_eq(an_sandbox_destroy(sb, 0, &err), 0, "%s", err ? err->msg : "");
  an_sandbox_close(sb);
  assert_gone(id);
  for (int i = 0; i < 2; i++) {
    cr_expect_eq(r[i], -ENOENT, "open of a running sandbox with no workspace (%s): %d %s",
                 i ? "its lock held" : "unlocked", r[i], m[i]);
    cr_expect(strstr(m[i], "/workspace"), "the workspace named: %s", m[i]);
  }
  cr_expect_eq(r[2], -ESRCH, "open while a destroy is at work: %d %s", r[2], m[2]);
  cr_expect(strstr(m[2], "ended while it was being opened"), "%s", m[2]);
  for (int i = 0; i < 3; i++) free(m[i]);
  an_sandbox_opts_free(o);
}
