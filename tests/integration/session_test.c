/* tests/integration/session_test.c — sessions (agentnest/session.h) on the
 * real kernel: state kept between calls (python globals; shell cwd, env,
 * variables), structured errors, the final expression's value, timeouts
 * that interrupt and leave the session alive, a SIGINT-ignoring loop that
 * is session_lost, a session outliving the CLI that started it and dying
 * with destroy, several sessions at once, secret redaction in output,
 * value and error; extend of the lifetime.  Uses the python and busybox
 * images of the image cache (`make images`); skips without them. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "agentnest/session.h"
#include "store_fixture.h"
#include "util.h"
#include "sandbox/session_internal.h"
#define AN_SF_SHORT_NAMES   /* make_sb, destroy, start, call (tests/lib/session_fixture.h) */
#include "session_fixture.h"
#include "ctx_fixture.h"

SF_TEST_SUITE(session, "sesstest", true);

Test(session, python_globals_survive_calls) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result a = call(sb, "py", "x = 41\ndef f(v):\n    return v + 1\n", 0);
  cr_expect_eq(a.status, 0, "stderr: %s", a.output.stderr_buf);
  struct an_session_result b = call(sb, "py", "print(f(x))", 0);
  cr_expect_eq(b.status, 0, "stderr: %s", b.output.stderr_buf);
  cr_expect_str_eq(b.output.stdout_buf, "42\n");
  an_session_result_release(&a);
  an_session_result_release(&b);
  destroy(sb);
}

Test(session, shell_cwd_env_and_variables_survive_calls) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  start(sb, AN_SESSION_SHELL, "sh");
  struct an_session_result a = call(sb, "sh", "cd /tmp && V=shell-var && export E=env-var", 0);
  cr_expect_eq(a.status, 0, "stderr: %s", a.output.stderr_buf);
  struct an_session_result b = call(sb, "sh", "echo \"$PWD $V $E\"; sh -c 'echo child:$E'; exit_is=3; (exit $exit_is)", 0);
  cr_expect_str_eq(b.output.stdout_buf, "/tmp shell-var env-var\nchild:env-var\n");
  cr_expect_eq(b.status, 3, "the call's exit status");
  /* a syntax error is the call's status 2, not the end of the shell */
  struct an_session_result c = call(sb, "sh", "if", 0);
  cr_expect_eq(c.status, 2);
  cr_expect(!c.session_lost);
  struct an_session_result d = call(sb, "sh", "echo \"it's $V\"", 0);
  cr_expect_str_eq(d.output.stdout_buf, "it's shell-var\n");
  an_session_result_release(&a);
  an_session_result_release(&b);
  an_session_result_release(&c);
  an_session_result_release(&d);
  destroy(sb);
}

Test(session, python_error_is_structured) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result r = call(sb, "py", "def g():\n    return {}['k']\ng()", 0);
  cr_expect_eq(r.status, 1);
  cr_expect_str_eq(r.error_type, "KeyError");
  cr_expect_str_eq(r.error_message, "'k'");
  cr_assert(r.error_traceback);
  cr_expect(strstr(r.error_traceback, "Traceback (most recent call last)") &&
                strstr(r.error_traceback, "line 2, in g") && !strstr(r.error_traceback, "_run"),
            "traceback: %s", r.error_traceback);
  cr_expect(!r.value_repr);
  an_session_result_release(&r);
  destroy(sb);
}

Test(session, python_final_expression_value_repr_and_json) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result a = call(sb, "py", "d = {'a': [1, 2.5, None]}\nd", 0);
  cr_expect_str_eq(a.value_repr, "{'a': [1, 2.5, None]}");
  cr_expect_str_eq(a.value_json, "{\"a\": [1, 2.5, null]}");
  struct an_session_result b = call(sb, "py", "object", 0);
  cr_expect_str_eq(b.value_repr, "<class 'object'>");
  cr_expect(!b.value_json, "not JSON-serialisable: no JSON form");
  struct an_session_result c = call(sb, "py", "None", 0);
  cr_expect(!c.value_repr, "None is no value");
  an_session_result_release(&a);
  an_session_result_release(&b);
  an_session_result_release(&c);
  destroy(sb);
}

Test(session, timeout_interrupts_and_the_session_lives_on) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result a = call(sb, "py", "n = 7\nimport time\nwhile True: time.sleep(0.01)", 300);
  cr_expect(a.timed_out);
  cr_expect(!a.session_lost);
  cr_expect_eq(a.status, AN_EXEC_STATUS_TIMED_OUT);
  cr_expect_str_eq(a.error_type, "KeyboardInterrupt");
  struct an_session_result b = call(sb, "py", "n * 6", 0);
  cr_expect_str_eq(b.value_repr, "42");
  an_session_result_release(&a);
  an_session_result_release(&b);
  destroy(sb);
}

Test(session, shell_timeout_interrupts_the_foreground_command) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  start(sb, AN_SESSION_SHELL, "sh");
  struct an_session_result a = call(sb, "sh", "K=kept; sleep 30", 300);
  cr_expect(a.timed_out);
  cr_expect(!a.session_lost, "lost: %s", a.lost_reason ? a.lost_reason : "");
  struct an_session_result b = call(sb, "sh", "echo $K", 0);
  cr_expect_str_eq(b.output.stdout_buf, "kept\n");
  an_session_result_release(&a);
  an_session_result_release(&b);
  destroy(sb);
}

Test(session, sigint_ignoring_loop_is_session_lost) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result a =
      call(sb, "py", "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass", 300);
  cr_expect(a.timed_out);
  cr_expect(a.session_lost);
  cr_expect_eq(a.status, 125);
  an_session_result_release(&a);
  struct an_session_info *l = NULL;
  size_t n = 9;
  an_error_t err = NULL;
  cr_assert(an_session_list(sb, &l, &n, &err) == 0);
  cr_expect_eq(n, 0, "the lost session is gone");
  an_session_info_list_free(l, n);
  struct an_session_result b;
  cr_expect(an_session_run(sb, "py", "1", 1, NULL, &b, &err) == -ENOENT);
  an_error_free(&err);
  destroy(sb);
}

static int run_cli(const char *const *args) {
  pid_t p = fork();
  cr_assert(p >= 0);
  if (p == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execv(g_cli, (char *const *) args);
    _exit(127);
  }
  int st;
  waitpid(p, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(session, survives_the_cli_and_dies_with_destroy) {
  struct an_sandbox *sb = make_sb("python", NULL);
  const char *id = an_sandbox_id(sb);
  const char *a1[] = {g_cli, "--root", g_root, "session", "start", id, "--name", "cli", NULL};
  cr_assert_eq(run_cli(a1), 0);
  const char *a2[] = {g_cli, "--root", g_root, "session", "run", id, "cli", "kept = 'yes'", NULL};
  cr_assert_eq(run_cli(a2), 0);
  /* both CLIs are gone: the state is still there */
  struct an_session_result r = call(sb, "cli", "kept", 0);
  cr_expect_str_eq(r.value_repr, "'yes'");
  an_session_result_release(&r);
  struct an_session_info *l = NULL;
  size_t n = 0;
  an_error_t err = NULL;
  cr_assert(an_session_list(sb, &l, &n, &err) == 0);
  cr_assert_eq(n, 1);
  pid_t pid = l[0].pid;
  an_session_info_list_free(l, n);
  cr_assert(kill(pid, 0) == 0);
  destroy(sb);
  /* the helper was a child of the monitor, which is gone: no zombie left */
  cr_expect(kill(pid, 0) < 0 && errno == ESRCH, "helper %d outlived its sandbox", (int) pid);
}

Test(session, several_sessions_are_independent) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "a");
  start(sb, AN_SESSION_PYTHON, "b");
  start(sb, AN_SESSION_SHELL, "c");
  struct an_session_result r1 = call(sb, "a", "v = 'A'", 0);
  struct an_session_result r2 = call(sb, "b", "v = 'B'", 0);
  struct an_session_result r3 = call(sb, "a", "v", 0);
  struct an_session_result r4 = call(sb, "b", "v", 0);
  struct an_session_result r5 = call(sb, "c", "echo ${v:-unset}", 0);
  cr_expect_str_eq(r3.value_repr, "'A'");
  cr_expect_str_eq(r4.value_repr, "'B'");
  cr_expect_str_eq(r5.output.stdout_buf, "unset\n");
  an_error_t err = NULL;
  cr_expect(an_session_start(sb, AN_SESSION_PYTHON, "a", 0, NULL, &err) == -EEXIST);
  an_error_free(&err);
  cr_expect(an_session_stop(sb, "b", &err) == 0);
  struct an_session_info *l = NULL;
  size_t n = 0;
  cr_assert(an_session_list(sb, &l, &n, &err) == 0);
  cr_expect_eq(n, 2);
  an_session_info_list_free(l, n);
  struct an_session_result *all[] = {&r1, &r2, &r3, &r4, &r5};
  for (size_t i = 0; i < 5; i++) an_session_result_release(all[i]);
  destroy(sb);
}

Test(session, secret_is_redacted_in_output_value_and_error) {
  struct an_sandbox *sb = make_sb("python", "tok-5ecret-in-session");
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result r = call(sb, "py",
      "import os\nt = os.environ['API_TOKEN']\nprint(t)\nimport sys\nsys.stderr.write(t[:5]); sys.stderr.write(t[5:])\nt", 0);
  cr_expect(!strstr(r.output.stdout_buf, "5ecret"), "stdout: %s", r.output.stdout_buf);
  cr_expect(strstr(r.output.stdout_buf, "[REDACTED:API_TOKEN]"), "stdout: %s", r.output.stdout_buf);
  cr_expect(!strstr(r.output.stderr_buf, "5ecret"), "stderr: %s", r.output.stderr_buf);
  cr_assert(r.value_repr);
  cr_expect(!strstr(r.value_repr, "5ecret") && !strstr(r.value_json, "5ecret"), "value: %s", r.value_repr);
  struct an_session_result e = call(sb, "py", "raise ValueError(t)", 0);
  cr_assert(e.error_message);
  cr_expect(!strstr(e.error_message, "5ecret") && !strstr(e.error_traceback, "5ecret"),
            "error: %s", e.error_traceback);
  an_session_result_release(&r);
  an_session_result_release(&e);
  destroy(sb);
}

/* Fork a caller that opens the sandbox anew and runs `code` in its only
 * session "py" (it exits 0 when the call succeeded, 1 when it failed, 2 when
 * the open did); returns its pid once its call holds the session (asserts
 * it does within about 4 s). */
static pid_t busy_caller(struct an_sandbox *sb, const char *code) {
  pid_t p = fork();
  cr_assert(p >= 0);
  if (p == 0) {
    struct an_sandbox *sb2 = NULL;
    an_error_t err = NULL;
    if (an_sandbox_open_ctx(an_test_ctx(), g_root, an_sandbox_id(sb), &sb2, &err) < 0) _exit(2);
    struct an_session_result r;
    _exit(an_session_run(sb2, "py", code, strlen(code), NULL, &r, &err) == 0 ? 0 : 1);
  }
  bool busy = false;
  for (int i = 0; i < 400 && !busy; i++) {
    struct an_session_info *l = NULL;
    size_t n = 0;
    an_error_t err = NULL;
    cr_assert(an_session_list(sb, &l, &n, &err) == 0);
    busy = n == 1 && l[0].busy;
    an_session_info_list_free(l, n);
    if (!busy) usleep(10000);
  }
  cr_assert(busy, "the caller's call never held the session");
  return p;
}

Test(session, busy_session_refuses_a_second_caller) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  pid_t p = busy_caller(sb, "import time; time.sleep(3)");
  struct an_session_result r;
  an_error_t err = NULL;
  cr_expect(an_session_run(sb, "py", "1", 1, NULL, &r, &err) == -EBUSY);
  an_error_free(&err);
  int st;
  waitpid(p, &st, 0);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  destroy(sb);
}

Test(session, bad_names_and_a_missing_interpreter_are_refused) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  an_error_t err = NULL;
  cr_expect(an_session_start(sb, AN_SESSION_SHELL, "../x", 0, NULL, &err) == -EINVAL);
  an_error_free(&err);
  cr_expect(an_session_start(sb, AN_SESSION_PYTHON, NULL, 0, NULL, &err) == -ENOENT,
            "busybox has no python3: %s", err ? err->msg : "");
  cr_expect(err && strstr(err->msg, "python3"), "%s", err ? err->msg : "");
  an_error_free(&err);
  struct an_session_info *l = NULL;
  size_t n = 9;
  cr_assert(an_session_list(sb, &l, &n, &err) == 0);
  cr_expect_eq(n, 0, "a failed start leaves no session");
  an_session_info_list_free(l, n);
  destroy(sb);
}

/* item 7: extend re-arms the monitor's timer and is bounded by max_lifetime */
Test(session, extend_moves_the_deadline_and_is_bounded) {
  struct an_sandbox_opts *o = NULL;
  an_error_t err = NULL;
  cr_assert(an_sandbox_opts_new_ctx(an_test_ctx(), &o, &err) == 0);
  cr_assert(an_sandbox_opts_set_image(o, "busybox", &err) == 0);
  cr_assert(an_sandbox_opts_set_lifetime(o, 2000, &err) == 0);
  cr_assert(an_sandbox_opts_set_max_lifetime(o, 8000, &err) == 0);
  struct an_sandbox *sb = NULL;
  cr_assert(an_sandbox_create(g_root, o, &sb, &err) == 0, "create: %s", err ? err->msg : "");
  an_sandbox_opts_free(o);
  char id[AN_SANDBOX_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", an_sandbox_id(sb));
  uint64_t d0 = an_sandbox_deadline_ms(sb), d1 = 0;
  cr_assert(an_sandbox_extend(sb, 4000, &d1, &err) == 0, "extend: %s", err ? err->msg : "");
  cr_expect_eq(d1, d0 + 4000);
  /* over the maximum: refused, nothing changed */
  cr_expect(an_sandbox_extend(sb, 60000, NULL, &err) == -EINVAL);
  cr_expect(err && strstr(err->msg, "max_lifetime"), "%s", err ? err->msg : "");
  an_error_free(&err);
  struct an_sandbox *again = NULL;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err) == 0);
  cr_expect_eq(an_sandbox_deadline_ms(again), d1, "the record holds the new deadline");
  an_sandbox_close(again);
  /* past the first deadline it still runs ... */
  usleep(3000 * 1000);
  char *argv[] = {"true", NULL};
  struct an_exec_result res;
  cr_assert(an_sandbox_open_ctx(an_test_ctx(), g_root, id, &again, &err) == 0, "open after the old deadline: %s",
            err ? err->msg : "");
  cr_expect(an_sandbox_exec(again, argv, NULL, &res, &err) == 0, "exec: %s", err ? err->msg : "");
  an_exec_result_release(&res);
  an_sandbox_close(again);
  /* ... and the re-armed timer still ends it */
  bool gone = false;
  for (int i = 0; i < 200 && !gone; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/sandboxes/%s", g_root, id);
    gone = access(p, F_OK) != 0;
    if (!gone) usleep(50000);
  }
  cr_expect(gone, "the sandbox outlived its extended deadline");
  an_sandbox_close(sb);
}

/* A caller killed mid-call leaves the session dirty: the next call first
 * interrupts what is left (SIGINT), then runs; the state survives. */
Test(session, call_of_a_killed_caller_is_interrupted_by_the_next) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  struct an_session_result a = call(sb, "py", "kept = 5", 0);
  an_session_result_release(&a);
  pid_t p = busy_caller(sb, "import time\nwhile True: time.sleep(0.01)");
  kill(p, SIGKILL);
  waitpid(p, NULL, 0);
  struct an_session_result b = call(sb, "py", "kept + 1", 0);
  cr_expect(!b.session_lost, "lost: %s", b.lost_reason ? b.lost_reason : "");
  cr_expect_str_eq(b.value_repr, "6");
  an_session_result_release(&b);
  destroy(sb);
}

/* A caller that died after attaching but before sending its code leaves the
 * helper idle: the next call's interrupt finds it waiting ("idle"), and the
 * session is not taken as lost (python and shell). */
Test(session, abandoned_attach_without_a_call_is_not_a_lost_session) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  start(sb, AN_SESSION_SHELL, "sh");
  struct an_session_result a = call(sb, "py", "kept = 5", 0);
  struct an_session_result a2 = call(sb, "sh", "kept=7", 0);
  an_session_result_release(&a);
  an_session_result_release(&a2);
  const char *names[] = {"py", "sh"};
  for (int i = 0; i < 2; i++) {
    pid_t p = fork();
    cr_assert(p >= 0);
    if (p == 0) {
      int conn, fds[3];
      enum an_session_kind k;
      bool dirty;
      an_error_t err = NULL;
      _exit(an_session_attach(sb, names[i], &conn, fds, &k, &dirty, &err) == 0 ? 0 : 1);
    }
    int st;
    waitpid(p, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  struct an_session_result b = call(sb, "py", "kept + 1", 0);
  cr_expect(!b.session_lost, "python lost: %s", b.lost_reason ? b.lost_reason : "");
  cr_expect_str_eq(b.value_repr, "6");
  struct an_session_result c = call(sb, "sh", "echo $kept", 0);
  cr_expect(!c.session_lost, "shell lost: %s", c.lost_reason ? c.lost_reason : "");
  cr_expect_str_eq(c.output.stdout_buf, "7\n");
  an_session_result_release(&b);
  an_session_result_release(&c);
  destroy(sb);
}

/* `session run --stream`: JSON Lines, chunks then exactly one result line
 * with the --json members; `--json`: one document (the CLI's formats). */
Test(session, cli_stream_and_json_formats) {
  struct an_sandbox *sb = make_sb("python", NULL);
  start(sb, AN_SESSION_PYTHON, "py");
  char cmd[PATH_MAX * 2 + 256];
  snprintf(cmd, sizeof cmd,
           "%s --root %s session run %s py --stream "
           "'import sys; print(\"out\"); sys.stderr.write(\"err\\n\"); sys.stdout.buffer.write(b\"\\xff\\n\"); 6*7'",
           g_cli, g_root, an_sandbox_id(sb));
  FILE *f = popen(cmd, "r");
  cr_assert(f);
  char line[4096];
  int results = 0, chunks = 0;
  bool last_is_result = false, saw_b64 = false;
  while (fgets(line, sizeof line, f)) {
    yajl_val v = yajl_tree_parse(line, NULL, 0);
    cr_assert(v, "not JSON: %s", line);
    const char *path[] = {"type", NULL};
    const char *type = YAJL_GET_STRING(yajl_tree_get(v, path, yajl_t_string));
    cr_assert(type, "no type: %s", line);
    last_is_result = !strcmp(type, "result");
    if (last_is_result) {
      results++;
      const char *vp[] = {"value", "json", NULL};
      yajl_val j = yajl_tree_get(v, vp, yajl_t_number);
      cr_expect(j && YAJL_GET_INTEGER(j) == 42, "result: %s", line);
    } else {
      cr_expect(!strcmp(type, "stdout") || !strcmp(type, "stderr"), "%s", line);
      chunks++;
      const char *ep[] = {"encoding", NULL};
      if (yajl_tree_get(v, ep, yajl_t_string)) saw_b64 = true;
    }
    yajl_tree_free(v);
  }
  cr_expect_eq(pclose(f), 0);
  cr_expect_eq(results, 1);
  cr_expect(last_is_result);
  cr_expect(chunks >= 2);
  cr_expect(saw_b64, "the \\xff chunk is base64");
  snprintf(cmd, sizeof cmd, "%s --root %s session run %s py --json '1/0'", g_cli, g_root, an_sandbox_id(sb));
  f = popen(cmd, "r");
  cr_assert(f);
  static char doc[65536];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  doc[n] = '\0';
  cr_expect_eq(WEXITSTATUS(pclose(f)), 1);
  yajl_val v = yajl_tree_parse(doc, NULL, 0);
  cr_assert(v, "not JSON: %s", doc);
  const char *tp[] = {"error", "type", NULL};
  cr_expect_str_eq(YAJL_GET_STRING(yajl_tree_get(v, tp, yajl_t_string)), "ZeroDivisionError");
  yajl_tree_free(v);
  destroy(sb);
}
