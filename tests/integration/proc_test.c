/* tests/integration/proc_test.c — detached processes (agentnest/proc.h,
 * `exec --detach`, `proc ls|logs|kill|wait`) on the real kernel: a process
 * outlives the exec call that started it, in its own child cgroup; logs,
 * kill, wait; the ring keeps only the last ring_bytes; secrets redacted;
 * the process dies with the sandbox.  Busybox image from the cache. */
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
#include "agentnest.h"
#include "agentnest/sandbox.h"
#include "agentnest/proc.h"
#include "store_fixture.h"
#include "util.h"
#define AN_SF_SHORT_NAMES   /* make_sb, destroy, start, call (tests/lib/session_fixture.h) */
#include "session_fixture.h"

SF_TEST_SUITE(proc, "proctest", false);

static char *start_proc(struct an_sandbox *sb, const char *script, size_t ring, pid_t *pid) {
  char *argv[] = {"sh", "-c", (char *) script, NULL};
  char *h = NULL;
  an_error_t err = NULL;
  cr_assert(an_proc_start(sb, argv, NULL, NULL, ring, &h, pid, &err) == 0, "start: %s", err ? err->msg : "");
  return h;
}

static int wait_status(struct an_sandbox *sb, const char *h) {
  int st = -1;
  an_error_t err = NULL;
  cr_assert(an_proc_wait(sb, h, &st, &err) == 0, "wait: %s", err ? err->msg : "");
  return st;
}

Test(proc, detached_process_outlives_the_exec_call) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  /* started by a CLI that exits at once */
  pid_t p = fork();
  cr_assert(p >= 0);
  if (p == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    execl(g_cli, g_cli, "--root", g_root, "exec", "--detach", an_sandbox_id(sb), "--", "sh", "-c",
          "sleep 1; echo done-late; exit 7", (char *) NULL);
    _exit(127);
  }
  int st;
  waitpid(p, &st, 0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec --detach: %d", st);
  cr_expect_eq(wait_status(sb, "p1"), 7);
  struct an_proc_logs l;
  an_error_t err = NULL;
  cr_assert(an_proc_logs(sb, "p1", NULL, false, &l, &err) == 0);
  cr_expect_str_eq(l.data[0], "done-late\n");
  cr_expect(!l.running);
  an_proc_logs_release(&l);
  destroy(sb);
}

Test(proc, runs_in_its_own_child_cgroup_and_kill_reaches_it) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  pid_t pid = 0;
  char *h = start_proc(sb, "echo up; exec sleep 100", 0, &pid);
  char path[64], buf[512] = "";
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int) pid);
  FILE *f = fopen(path, "re");
  cr_assert(f);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  char want[128];
  snprintf(want, sizeof want, "sb-%s/proc-%s", an_sandbox_id(sb), h);
  cr_expect(strstr(buf, want), "cgroup of the process: %s", buf);
  struct an_proc_info *list = NULL;
  size_t cnt = 0;
  an_error_t err = NULL;
  cr_assert(an_proc_list(sb, &list, &cnt, &err) == 0);
  cr_assert_eq(cnt, 1);
  cr_expect(list[0].running);
  cr_expect_str_eq(list[0].command, "sh -c echo up; exec sleep 100");
  an_proc_info_list_free(list, cnt);
  cr_assert(an_proc_kill(sb, h, SIGTERM, &err) == 0, "kill: %s", err ? err->msg : "");
  cr_expect_eq(wait_status(sb, h), 128 + SIGTERM);
  cr_expect(an_proc_kill(sb, h, SIGTERM, &err) == -ESRCH, "kill after exit");
  an_error_free(&err);
  cr_expect(an_proc_wait(sb, "p99", &(int){0}, &err) == -ENOENT);
  /* the monitor's errno name is said once (new-user trial: "p99": ENOENT: ENOENT) */
  cr_expect(err && strstr(err->msg, "\"p99\": ENOENT") && !strstr(err->msg, "ENOENT: ENOENT"), "%s",
            err ? err->msg : "");
  an_error_free(&err);
  free(h);
  destroy(sb);
}

Test(proc, ring_keeps_only_the_last_bytes) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  char *h = start_proc(sb, "i=0; while [ $i -lt 100 ]; do printf '%099d\\n' $i; i=$((i+1)); done; echo LAST", 1024, NULL);
  cr_expect_eq(wait_status(sb, h), 0);
  struct an_proc_logs l;
  an_error_t err = NULL;
  cr_assert(an_proc_logs(sb, h, NULL, false, &l, &err) == 0);
  cr_expect_eq(strlen(l.data[0]), 1024, "ring of 1024: %zu bytes", strlen(l.data[0]));
  cr_expect_eq(l.dropped[0], 100 * 100 + 5 - 1024);
  cr_expect_eq(l.next[0], 100 * 100 + 5);
  size_t len = strlen(l.data[0]);
  cr_expect(len >= 5 && !strcmp(l.data[0] + len - 5, "LAST\n"));
  an_proc_logs_release(&l);
  /* from an offset: only what came after it */
  uint64_t from[2] = {100 * 100, 0};
  cr_assert(an_proc_logs(sb, h, from, false, &l, &err) == 0);
  cr_expect_str_eq(l.data[0], "LAST\n");
  an_proc_logs_release(&l);
  free(h);
  destroy(sb);
}

Test(proc, logs_are_redacted_and_follow_waits_for_output) {
  struct an_sandbox *sb = make_sb("busybox", "d3tached-s3cret");
  char *h = start_proc(sb, "sleep 0.5; echo \"tok=$API_TOKEN\"; sleep 0.5; echo two", 0, NULL);
  uint64_t from[2] = {0, 0};
  struct an_proc_logs l;
  an_error_t err = NULL;
  /* waiting: returns when there is output */
  cr_assert(an_proc_logs(sb, h, from, true, &l, &err) == 0);
  cr_expect(strlen(l.data[0]) > 0);
  cr_expect(!strstr(l.data[0], "s3cret"), "%s", l.data[0]);
  an_proc_logs_release(&l);
  cr_expect_eq(wait_status(sb, h), 0);
  cr_assert(an_proc_logs(sb, h, NULL, false, &l, &err) == 0);
  cr_expect_str_eq(l.data[0], "tok=[REDACTED:API_TOKEN]\ntwo\n");
  an_proc_logs_release(&l);
  free(h);
  destroy(sb);
}

Test(proc, dies_with_the_sandbox) {
  struct an_sandbox *sb = make_sb("busybox", NULL);
  pid_t pid = 0;
  char *h = start_proc(sb, "exec sleep 100", 0, &pid);
  cr_assert(kill(pid, 0) == 0);
  destroy(sb);
  cr_expect(kill(pid, 0) < 0 && errno == ESRCH, "process %d outlived its sandbox", (int) pid);
  free(h);
}
