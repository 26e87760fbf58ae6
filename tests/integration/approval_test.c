/* tests/integration/approval_test.c — approval hooks on the real kernel
 * (agentnest/approval.h): allow / deny with reason / timeout / garbage /
 * crash (all deny, fail closed), every file, snapshot, fork, restore,
 * detach, session, extend and network call asked, secret values never in a
 * hook's request, checked from a second CLI and after fork, out of reach of
 * the sandbox, a unix socket hook, and each decision in the audit log.
 *
 * Each test has its own store /tmp/an-audit-<pid> with the busybox image
 * imported from the `make images` cache (skipped without it); hooks are
 * shell scripts written into the store (audit_common.h).  Run as root from
 * the worktree root. */
#include "audit_common.h"

TestSuite(approval, .init = setup, .fini = teardown, .timeout = 240);

/* ---- approvals ------------------------------------------------------------------------------- */

static char *create_with_hook(const char *hook_path, const char *extra) {
  int st = cli("create --image busybox --approve-with '%s' %s", hook_path, extra ? extra : "");
  cr_assert_eq(st, 0, "create: %s", g_err);
  static char id[64];
  snprintf(id, sizeof id, "%.63s", g_out);
  chomp(id);
  return id;
}

#define DENY_ON_FORBIDDEN                                                            \
  "req=$(cat)\n"                                                                     \
  "printf '%s\\n' \"$req\" >> \"$(dirname \"$0\")/requests.log\"\n"                 \
  "case \"$req\" in *forbidden*) echo '{\"decision\":\"deny\",\"reason\":\"no forbidden words\"}';;\n" \
  "*) echo '{\"decision\":\"allow\"}';; esac"

Test(approval, allow_runs_and_deny_is_exit_125_with_the_reason) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("exec %s -- echo fine", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "fine\n");
  cr_assert_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words\n"), "stderr: %s", g_err);
  cr_expect_str_eq(g_out, "", "a denied command ran");
  struct recs r;
  struct an_audit_filter f = {.sandbox = id, .op = "approval"};
  read_all(&r, &f);
  cr_assert_eq(r.n, 2);
  cr_expect_str_eq(mstr(r.v[0], "decision"), "allow");
  cr_expect_str_eq(mstr(r.v[1], "decision"), "deny");
  cr_expect_str_eq(mstr(r.v[1], "reason"), "no forbidden words");
  cr_expect_str_eq(mstr(r.v[1], "operation"), "exec");
  cr_expect(strv_has(member(r.v[1], "argv"), "forbidden"));
  recs_free(&r);
  /* the request as documented */
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/requests.log", g_root);
  char *t = an_test_read_file(p, NULL);
  cr_assert_not_null(t);
  char *line = strtok(t, "\n");
  cr_assert_not_null(line);
  yajl_val v = yajl_tree_parse(line, NULL, 0);
  cr_assert_not_null(v, "request not JSON: %s", line);
  cr_expect_str_eq(mstr(v, "operation"), "exec");
  const char *idp[] = {"sandbox", "id", NULL}, *argvp[] = {"arguments", "argv", NULL},
             *uidp[] = {"caller", "uid", NULL}, *pidp[] = {"caller", "pid", NULL};
  cr_expect_str_eq(YAJL_GET_STRING(yajl_tree_get(v, idp, yajl_t_string)), id);
  cr_expect(strv_has(yajl_tree_get(v, argvp, yajl_t_array), "fine"));
  cr_expect_not_null(yajl_tree_get(v, uidp, yajl_t_number));
  cr_expect_not_null(yajl_tree_get(v, pidp, yajl_t_number));
  yajl_tree_free(v);
  free(t);
}

Test(approval, every_file_snapshot_and_fork_call_is_asked) {
  need_image();
  const char *h = hook("hook.sh",
                       "req=$(cat)\n"
                       "case \"$req\" in *'\"operation\":\"exec\"'*) echo '{\"decision\":\"allow\"}';;\n"
                       "*) echo '{\"decision\":\"deny\",\"reason\":\"only exec\"}';; esac");
  char *id = create_with_hook(h, NULL);
  char in[PATH_MAX + 16];
  snprintf(in, sizeof in, "%s/in.txt", g_root);
  an_test_write_file(in, "x\n", 2, 0644);
  cr_expect_eq(cli("cp '%s' %s:in.txt", in, id), 125, "put was not asked");
  cr_expect(strstr(g_err, "denied by approval hook: only exec"), "%s", g_err);
  cr_assert_eq(cli("exec %s -- sh -c 'echo y > /workspace/y.txt'", id), 0, "%s", g_err);
  cr_expect_eq(cli("cp %s:y.txt '%s/y.txt'", id, g_root), 125, "get was not asked");
  cr_expect_eq(cli("snapshot %s '%s/s.tar'", id, g_root), 125, "snapshot was not asked");
  cr_expect_eq(cli("fork %s", id), 125, "fork was not asked");
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id, .op = "approval"};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "put"));
  cr_expect_not_null(find_op(&r, "approval", "get"));
  cr_expect_not_null(find_op(&r, "approval", "snapshot"));
  cr_expect_not_null(find_op(&r, "approval", "fork"));
  recs_free(&r);
}

Test(approval, restore_is_asked) {
  need_image();
  const char *h = hook("hook.sh",
                       "req=$(cat)\n"
                       "case \"$req\" in *'\"operation\":\"restore\"'*) echo '{\"decision\":\"deny\",\"reason\":\"no restore\"}';;\n"
                       "*) echo '{\"decision\":\"allow\"}';; esac");
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("snapshot %s '%s/s.tar'", id, g_root), 0, "%s", g_err);
  cr_expect_eq(cli("restore %s '%s/s.tar'", id, g_root), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no restore"), "%s", g_err);
}

/* The profile key, with a program relative to the profile's directory. */
Test(approval, a_profile_key_sets_the_hook) {
  need_image();
  hook("hook.sh", DENY_ON_FORBIDDEN);
  char prof[PATH_MAX];
  snprintf(prof, sizeof prof, "%s/approving.json", g_root);
  const char *doc = "{\"image\":\"busybox\",\"approve_with\":\"hook.sh\",\"approval_timeout\":\"2s\"}";
  an_test_write_file(prof, doc, strlen(doc), 0644);
  cr_assert_eq(cli("create --profile '%s'", prof), 0, "%s", g_err);
  char id[64];
  snprintf(id, sizeof id, "%.63s", g_out);
  chomp(id);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_assert_eq(cli("inspect %s", id), 0);
  cr_expect(strstr(g_out, "\"approval_timeout\": \"2000ms\"") || strstr(g_out, "\"approval_timeout\":\"2000ms\""),
            "%s", g_out);
}

/* A sandbox created with the hook script `name` (`body`; create's options
 * `extra`, may be NULL) refuses `exec -- echo hi` with exit 125 and an error
 * that holds `why`; returns the sandbox's id (static). */
static char *expect_exec_denied(const char *name, const char *body, const char *extra, const char *why) {
  const char *h = hook(name, body);
  char *id = create_with_hook(h, extra);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, why), "%s", g_err);
  return id;
}

Test(approval, no_answer_in_time_is_a_denial) {
  need_image();
  expect_exec_denied("hook.sh", "cat >/dev/null; exec sleep 60", "--approval-timeout 300ms",
                     "denied by approval hook: ");
  cr_expect(strstr(g_err, "timeout"), "%s", g_err);
  cr_expect_str_eq(g_out, "");
}

Test(approval, a_garbage_answer_is_a_denial) {
  need_image();
  expect_exec_denied("hook.sh", "cat >/dev/null; echo 'yes, go ahead'", NULL,
                     "denied by approval hook: invalid answer");
  expect_exec_denied("hook2.sh", "cat >/dev/null; echo '{\"decision\":\"maybe\"}'", NULL,
                     "denied by approval hook: invalid answer");
  const char *h3 = hook("hook3.sh", "cat >/dev/null");
  char *id = create_with_hook(h3, NULL);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125, "an empty answer allowed");
}

Test(approval, a_crashing_hook_is_a_denial) {
  need_image();
  /* an "allow" written before the crash does not count */
  expect_exec_denied("hook.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'; kill -SEGV $$", NULL,
                     "denied by approval hook: the hook was killed by signal 11");
  expect_exec_denied("hook2.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'; exit 3", NULL,
                     "exited with status 3");
  /* removed after create: fail closed */
  const char *h3 = hook("hook3.sh", "cat >/dev/null; echo '{\"decision\":\"allow\"}'");
  char *id = create_with_hook(h3, NULL);
  cr_assert(unlink(h3) == 0);
  cr_assert_eq(cli("exec %s -- echo hi", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
}

Test(approval, create_refuses_a_missing_hook_and_leaves_nothing) {
  need_image();
  cr_expect_eq(cli("create --image busybox --approve-with /nonexistent/hook"), 125);
  cr_expect(strstr(g_err, "/nonexistent/hook"), "%s", g_err);
  cr_expect_eq(cli("create --image busybox --approve-with unix:relative.sock"), 125);
  cr_assert_eq(cli("ls --json"), 0);
  cr_expect(!strstr(g_out, "\"id\""), "a sandbox was left: %s", g_out);
}

Test(approval, a_one_shot_run_is_asked_before_its_sandbox_exists) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  cr_expect_eq(cli("run --image busybox --approve-with '%s' -- echo forbidden", h), 125);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_str_eq(g_out, "");
  cr_assert_eq(cli("run --image busybox --approve-with '%s' -- echo ok", h), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "ok\n");
}

/* Bypass attempts: another CLI without the option, a profile, a fork, the
 * library from a fresh handle, and the sandbox itself. */
Test(approval, bypass_attempts_are_still_checked) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  /* exec has no option to drop the hook; a second process is checked */
  cr_expect_eq(cli("exec --approve-with /bin/true %s -- echo forbidden", id), 125);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  /* a fresh library handle */
  struct an_sandbox *sb = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &sb, &err) == 0, "open: %s", err ? err->msg : "");
  char *argv[] = {"echo", "forbidden", NULL};
  struct an_exec_result res;
  cr_expect_eq(an_sandbox_exec(sb, argv, NULL, &res, &err), -EACCES);
  cr_expect(err && strstr(err->msg, "denied by approval hook"), "%s", err ? err->msg : "");
  an_error_free(&err);
  /* the one function other operations call */
  cr_expect_eq(an_approval_check(sb, "session_run", &err, AN_AUDIT_STR("code", "forbidden"), AN_AUDIT_END),
               -EACCES);
  an_error_free(&err);
  cr_expect_eq(an_approval_check(sb, "network_change", &err, AN_AUDIT_STR("mode", "full"), AN_AUDIT_END), 0);
  /* a fork keeps the hook */
  struct an_sandbox *child = NULL;
  cr_assert(an_sandbox_fork(sb, &child, &err) == 0, "fork: %s", err ? err->msg : "");
  cr_expect_eq(an_sandbox_exec(child, argv, NULL, &res, &err), -EACCES, "the fork lost the hook");
  an_error_free(&err);
  cr_assert(an_sandbox_destroy(child, 0, &err) == 0);
  an_sandbox_close(child);
  an_sandbox_close(sb);
  /* inside the sandbox: the hook, the store and the state are out of reach */
  cr_assert_eq(cli("exec %s -- sh -c 'ls %s; ls %s/sandboxes; echo end'", id, h, g_root), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "end\n", "the sandbox sees the host: %s", g_out);
  /* inspect shows the hook; no option changed it */
  cr_assert_eq(cli("inspect %s", id), 0);
  cr_expect(strstr(g_out, h), "inspect does not show the hook: %s", g_out);
}

/* redteam: exec --detach and session start/run ran code without asking the hook (and
 * left no audit record): a hook denying an argv was bypassed by --detach or a session. */
Test(approval, detached_exec_and_session_calls_are_asked) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_expect_eq(cli("exec --detach %s -- sh -c 'echo forbidden > /workspace/d.txt'", id), 125,
               "exec --detach was not asked: %s", g_out);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_eq(cli("session start %s --kind shell --name forbidden", id), 125, "session start was not asked");
  cr_assert_eq(cli("session start %s --kind shell --name s1", id), 0, "%s", g_err);
  cr_expect_eq(cli("session run %s s1 'echo forbidden > /workspace/s.txt'", id), 125,
               "session run was not asked: %s", g_out);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  /* nothing of the denied calls ran */
  cr_assert_eq(cli("exec %s -- sh -c 'sleep 1; ls /workspace; echo end'", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "end\n", "a denied call ran: %s", g_out);
  /* the allowed ones are audited */
  cr_assert_eq(cli("exec --detach %s -- true", id), 0, "%s", g_err);
  cr_assert_eq(cli("session run %s s1 'echo fine'", id), 0, "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "session_start"));
  cr_expect_not_null(find_op(&r, "approval", "session_run"));
  bool detached = false, ran = false;
  for (size_t i = 0; i < r.n; i++) {
    const char *op = mstr(r.v[i], "op");
    yajl_val d = member(r.v[i], "detach");
    if (op && !strcmp(op, "exec") && d && YAJL_IS_TRUE(d)) detached = true;
    if (op && !strcmp(op, "session_run")) ran = true;
  }
  cr_expect(detached, "no exec record of the detached command");
  cr_expect(ran, "no session_run record");
  recs_free(&r);
}

Test(approval, the_hook_runs_as_the_caller_with_a_clean_env_and_no_other_fds) {
  need_image();
  char p[256];
  snprintf(p, sizeof p, "%s/hookenv", g_root);
  char body[2048];
  snprintf(body, sizeof body,
           "cat > '%s.req'; id -u > '%s.uid'; env > '%s.env'; ls -l /proc/$$/fd > '%s.fds'; "
           "echo '{\"decision\":\"allow\"}'", p, p, p, p);
  const char *h = hook("hook.sh", body);
  struct an_sandbox_opts *o = opts_busybox();
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_set_approve_with(o, h, &err) == 0);
  cr_assert(an_sandbox_opts_add_secret(o, "TOKEN", SECRET, &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  /* a caller's fd without O_CLOEXEC, and an env variable of the caller */
  char marker[PATH_MAX + 16];
  snprintf(marker, sizeof marker, "%s/caller-marker", g_root);
  int mfd = open(marker, O_RDWR | O_CREAT, 0600);
  cr_assert(mfd >= 0);
  setenv("CALLER_ONLY_VAR", "callervalue", 1);
  char *argv[] = {"echo", SECRET, NULL};
  char *env[] = {"X=" SECRET, NULL};
  struct an_exec_opts eo = {.env = env};
  struct an_exec_result res;
  cr_assert(an_sandbox_exec(sb, argv, &eo, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  an_exec_result_release(&res);
  close(mfd);
  char q[PATH_MAX + 64];
  snprintf(q, sizeof q, "%s.uid", p);
  char *t = an_test_read_file(q, NULL);
  cr_assert_not_null(t);
  cr_expect_eq(atoi(t), (int) getuid(), "hook uid %s", t);
  free(t);
  snprintf(q, sizeof q, "%s.env", p);
  cr_expect(!file_contains(q, "CALLER_ONLY_VAR"), "the caller's environment reached the hook");
  cr_expect(!file_contains(q, "AGENTNEST_"), "the caller's environment reached the hook");
  cr_expect(file_contains(q, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
  snprintf(q, sizeof q, "%s.fds", p);
  cr_expect(!file_contains(q, "caller-marker"), "the caller's fd reached the hook");
  snprintf(q, sizeof q, "%s.req", p);
  cr_expect(file_contains(q, "\"operation\":\"exec\""));
  cr_expect(!file_contains(q, SECRET), "a secret value is in the request");
  cr_expect(file_contains(q, "[REDACTED:TOKEN]"));
  /* the one-call record other operations write */
  an_audit_sandbox(sb, "session_run", 0, NULL, AN_AUDIT_STR("code", "print('" SECRET "')"), AN_AUDIT_END);
  struct recs r;
  struct an_audit_filter f = {.sandbox = an_sandbox_id(sb), .op = "session_run"};
  read_all(&r, &f);
  cr_assert_eq(r.n, 1, "no session_run record");
  cr_expect_str_eq(mstr(r.v[0], "code"), "print('[REDACTED:TOKEN]')");
  cr_expect_str_eq(mstr(r.v[0], "result"), "ok");
  recs_free(&r);
  cr_assert(an_sandbox_destroy(sb, 0, &err) == 0);
  an_sandbox_close(sb);
  cr_expect(!file_contains(g_log, SECRET), "a secret value is in the audit log");
}

/* From inside: neither the hook program nor an approver's socket on the
 * host can be reached (the probe's connect_unix gets ENOENT: the path is
 * not in the sandbox's mount namespace), and the sandbox's processes hold
 * no fd of the hook. */
Test(approval, the_sandbox_cannot_reach_the_hook_or_its_socket) {
  need_image();
  const char *bdir = getenv("AN_TEST_BUILD");
  char probe[PATH_MAX];
  char rel[PATH_MAX];
  snprintf(rel, sizeof rel, "%s/tests/helpers/probe", bdir && *bdir ? bdir : "build");
  if (!realpath(rel, probe)) cr_skip_test("probe helper not built (%s)", rel);
  char sock[100];
  snprintf(sock, sizeof sock, "%.80s/approver.sock", g_root);
  int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 8) == 0);
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_assert_eq(cli("cp '%s' %s:probe", probe, id), 0, "%s", g_err);
  cr_assert_eq(cli("exec %s -- /workspace/probe connect_unix:%s", id, sock), 0, "%s", g_err);
  cr_expect(strstr(g_out, "connect_unix ENOENT"), "the sandbox reached the host socket: %s", g_out);
  /* negative control: the same probe on the host connects */
  char cmd[PATH_MAX * 2];
  snprintf(cmd, sizeof cmd, "'%s' connect_unix:%s", probe, sock);
  FILE *p = popen(cmd, "r");
  char line[256] = "";
  cr_assert_not_null(p);
  if (!fgets(line, sizeof line, p)) line[0] = 0;
  pclose(p);
  cr_expect(strstr(line, "connect_unix OK"), "control: %s", line);
  cr_assert_eq(cli("exec %s -- sh -c 'ls -l /proc/self/fd/ | grep -c hook; cat %s 2>&1 | head -c 0; "
                   "test -e %s || echo no-hook'", id, h, h), 0, "%s", g_err);
  cr_expect(strstr(g_out, "no-hook"), "the hook program is visible inside: %s", g_out);
  close(ls);
}

/* A unix socket hook: a server process of the test answers one request. */
Test(approval, a_unix_socket_hook_allows_and_denies) {
  need_image();
  char sock[100];
  snprintf(sock, sizeof sock, "%.80s/hook.sock", g_root);
  int ls = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
  cr_assert(bind(ls, (struct sockaddr *) &sa, sizeof sa) == 0 && listen(ls, 8) == 0);
  pid_t srv = fork();
  cr_assert(srv >= 0);
  if (srv == 0) {
    alarm(60);   /* never outlive a failed test (it holds criterion's output pipe) */
    for (int i = 0; i < 3; i++) {
      int c = accept(ls, NULL, NULL);
      if (c < 0) _exit(1);
      char buf[65536];
      size_t got = 0;
      ssize_t n;
      while ((n = read(c, buf + got, sizeof buf - 1 - got)) > 0) got += (size_t) n;
      buf[got] = 0;
      const char *ans = strstr(buf, "forbidden") ? "{\"decision\":\"deny\",\"reason\":\"socket says no\"}"
                                                  : "{\"decision\":\"allow\"}";
      if (write(c, ans, strlen(ans)) < 0) _exit(1);
      close(c);
    }
    _exit(0);
  }
  close(ls);
  char hk[PATH_MAX + 32];
  snprintf(hk, sizeof hk, "unix:%s", sock);
  char *id = create_with_hook(hk, NULL);
  cr_expect_eq(cli("exec %s -- echo ok", id), 0, "%s", g_err);
  cr_expect_eq(cli("exec %s -- echo forbidden", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: socket says no"), "%s", g_err);
  cr_expect_eq(cli("exec %s -- echo ok", id), 0, "%s", g_err);
  int st = 0;
  /* bounded: the server's alarm */
  cr_assert_eq(waitpid(srv, &st, 0), srv);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the socket hook was not asked three times");
  /* the server is gone: fail closed */
  cr_expect_eq(cli("exec %s -- echo ok", id), 125);
  cr_expect(strstr(g_err, "denied by approval hook: connect"), "%s", g_err);
}

/* New-user trial: a deny-all hook did not stop `exec --detach`, `session start` or `session run`,
 * and none of them (nor proc kill, extend) reached the audit log.  Now each is asked (detach as
 * an exec with "detach": true) and recorded. */
Test(approval, detach_sessions_and_extend_are_asked_and_audited) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, NULL);
  cr_expect_eq(cli("exec --detach %s -- sh -c 'echo forbidden > /workspace/x'", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_expect_eq(cli("session start %s --kind shell --name forbidden", id), 125, "%s", g_err);
  cr_assert_eq(cli("session start %s --kind shell --name s", id), 0, "%s", g_err);
  cr_expect_eq(cli("session run %s s 'echo forbidden > /workspace/y'", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook"), "%s", g_err);
  cr_assert_eq(cli("session run %s s 'echo fine'", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "fine\n");
  cr_assert_eq(cli("exec %s -- ls /workspace", id), 0, "%s", g_err);
  cr_expect_str_eq(g_out, "", "a denied detach or session call ran");
  cr_assert_eq(cli("exec --detach %s -- sleep 30", id), 0, "%s", g_err);
  char handle[64];
  snprintf(handle, sizeof handle, "%.63s", g_out);
  chomp(handle);
  cr_expect_eq(cli("proc kill %s %s", id, handle), 0, "%s", g_err);
  cr_expect_eq(cli("extend %s 1m", id), 0, "%s", g_err);
  cr_expect_eq(cli("session stop %s s", id), 0, "%s", g_err);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "session_start"));
  cr_expect_not_null(find_op(&r, "approval", "session_run"));
  cr_expect_not_null(find_op(&r, "approval", "extend"));
  yajl_val sr = find_op(&r, "session_run", NULL);
  cr_expect(sr && !strcmp(mstr(sr, "code") ?: "", "echo fine") && !strcmp(mstr(sr, "session") ?: "", "s"),
            "session_run record");
  cr_expect_not_null(find_op(&r, "session_start", NULL));
  cr_expect_not_null(find_op(&r, "session_stop", NULL));
  bool detached = false;
  for (size_t i = 0; i < r.n; i++)
    if (!strcmp(mstr(r.v[i], "op") ?: "", "exec") && YAJL_IS_TRUE(member(r.v[i], "detach")) &&
        strv_has(member(r.v[i], "argv"), "sleep"))
      detached = true;
  cr_expect(detached, "no exec record with detach: true");
  cr_expect_not_null(find_op(&r, "proc_kill", NULL));
  cr_expect_not_null(find_op(&r, "extend", NULL));
  recs_free(&r);
  cli("destroy %s", id);
}

/* A live egress change is asked of the hook and recorded. */
Test(approval, a_network_change_is_asked_and_audited) {
  need_image();
  const char *h = hook("hook.sh", DENY_ON_FORBIDDEN);
  char *id = create_with_hook(h, "--network allowlist --allow pkg.example");
  cr_expect_eq(cli("network %s --allow forbidden.example", id), 125, "%s", g_err);
  cr_expect(strstr(g_err, "denied by approval hook: no forbidden words"), "%s", g_err);
  cr_assert_eq(cli("network %s --allow ok.example", id), 0, "%s", g_err);
  cr_assert_eq(cli("network %s", id), 0, "%s", g_err);
  cr_expect(strstr(g_out, "ok.example") && !strstr(g_out, "forbidden.example"), "%s", g_out);
  struct recs r;
  struct an_audit_filter f = {.sandbox = id};
  read_all(&r, &f);
  cr_expect_not_null(find_op(&r, "approval", "network_change"));
  yajl_val nc = find_op(&r, "network_change", NULL);
  cr_expect(nc && strv_has(member(nc, "allow"), "ok.example"), "network_change record");
  recs_free(&r);
  cli("destroy %s", id);
}
