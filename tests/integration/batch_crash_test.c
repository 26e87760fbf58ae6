/* tests/integration/batch_crash_test.c — crash safety of `agentnest
 * batch`: SIGKILL at random points then --resume, repeated, giving exactly
 * one record per job (a record cut short by the kill is repaired; the
 * killed run's sandboxes removed by prune or by the resume); SIGTERM ending
 * running jobs and --drain letting them finish; JOBS from a pipe with
 * --fail-fast then --resume; --max-memory admission; nothing left on the
 * host afterwards (tests/lib/batch_fixture.h). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"

TestSuite(batch_crash, .init = bf_setup, .fini = bf_teardown, .timeout = 300);

static void write_sleepers(const char *name, int njobs) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", bf_work, name);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < njobs; i++)
    fprintf(f, "{\"id\":\"k%d\",\"image\":\"busybox\",\"shell\":\"sleep 0.2; echo k%d; exit %d\"}\n", i, i,
            i % 9 == 0);
  fclose(f);
}

Test(batch_crash, sigkill_at_random_points_then_resume_records_each_job_once) {
  const int njobs = 60;
  write_sleepers("jobs.jsonl", njobs);
  srand((unsigned) time(NULL) ^ (unsigned) getpid());
  const char *first[] = {"-j2", "--results", "res.jsonl", "jobs.jsonl", NULL};
  const char *again[] = {"-j2", "--results", "res.jsonl", "--resume", "jobs.jsonl", NULL};
  for (int round = 0; round < 4; round++) {
    pid_t pid = bf_start_batch(round ? again : first);
    usleep(400000 + (useconds_t) (rand() % 900) * 1000);
    kill(pid, SIGKILL);
    /* on a fast host a late round may have finished the batch before the kill */
    int st = bf_wait_status(pid);
    cr_assert(st == 128 + SIGKILL || st == 0 || st == 1, "round %d: exit %d: %s", round, st, bf_read_work(".berr"));
    if (round == 1) {
      /* a record the kill cut short: resume must drop it, not fail or keep it */
      char p[400];
      snprintf(p, sizeof p, "%s/res.jsonl", bf_work);
      int fd = open(p, O_WRONLY | O_APPEND);
      cr_assert_geq(fd, 0);
      cr_assert_eq(write(fd, "{\"id\":\"k39\",\"line\":40,\"res", 26), 26);
      close(fd);
    }
    /* the killed batch's sandboxes are dead ones: prune removes them (rounds
     * 0 and 1); else the next --resume does, from its journal (rounds 2, 3) */
    usleep(100000);
    bf_remember_store_sandboxes();
    if (round < 2) cr_assert_eq(bf_an("prune"), 0, "%s", bf_err);
  }
  int fin = bf_wait_status(bf_start_batch(again));
  cr_assert_eq(fin, 1, "final run: exit %d: %s", fin, bf_read_work(".berr"));   /* k0, k9, ... fail */
  char *text = bf_read_work("res.jsonl");
  static yajl_val recs[200];
  size_t n = bf_parse_records(text, recs, 200);
  free(text);
  cr_expect_eq(n, (size_t) njobs, "%zu records for %d jobs", n, njobs);
  int retried = 0;
  for (int i = 0; i < njobs; i++) {
    char id[16];
    snprintf(id, sizeof id, "k%d", i);
    yajl_val r = bf_find_record(recs, n, id);   /* asserts: never twice */
    cr_assert_not_null(r, "no record of %s", id);
    cr_expect_str_eq(bf_jstr(r, "result"), i % 9 == 0 ? "failed" : "passed", "%s", id);
    if (bf_jint(r, "attempt", 0) > 1) retried++;
  }
  cr_expect_gt(retried, 0, "no job was interrupted and rerun (attempt 2)");
  bf_free_records(recs, n);
  bf_assert_nothing_left();
}

Test(batch_crash, sigterm_ends_running_jobs_and_leaves_nothing) {
  char jobs[2048] = "";
  for (int i = 0; i < 6; i++) {
    char l[160];
    snprintf(l, sizeof l, "{\"id\":\"t%d\",\"image\":\"busybox\",\"cmd\":[\"sleep\",\"60\"]}\n", i);
    strcat(jobs, l);
  }
  bf_write_text("jobs.jsonl", jobs);
  const char *args[] = {"-j2", "--results", "res.jsonl", "jobs.jsonl", NULL};
  pid_t pid = bf_start_batch(args);
  /* wait until both jobs run (their starts are journaled) */
  for (int k = 0; k < 300; k++) {
    char *jn = bf_read_work("res.jsonl.journal");
    int lines = 0;
    for (char *p = jn; *p; p++) lines += *p == '\n';
    free(jn);
    if (lines >= 2) break;
    usleep(50000);
  }
  usleep(500000);
  bf_remember_store_sandboxes();
  kill(pid, SIGTERM);
  cr_assert_eq(bf_wait_status(pid), 143, "%s", bf_read_work(".berr"));
  char *res = bf_read_work("res.jsonl");
  cr_expect_str_eq(res, "", "an interrupted job was recorded");
  free(res);
  /* no prune: the batch removed its sandboxes itself */
  bf_assert_nothing_left();
}

/* JOBS from a pipe (spooled, then streamed twice); --fail-fast stops
 * starting jobs after the first failure, and --resume later runs the rest. */
Test(batch_crash, jobs_from_standard_input_fail_fast_then_resume) {
  bf_write_text("jobs.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n{\"id\":\"b\",\"cmd\":[\"false\"]}\n"
                           "{\"id\":\"c\",\"cmd\":[\"true\"]}\n{\"id\":\"d\",\"cmd\":[\"true\"]}\n");
  cr_assert_eq(bf_an_pipe("batch -j1 --image busybox --fail-fast --results r.jsonl -"), 1, "%s", bf_err);
  cr_expect(strstr(bf_err, "--fail-fast"), "%s", bf_err);
  /* the summary counts the 4 jobs of the pipe (validated from the spool), 2 not run */
  cr_expect(strstr(bf_err, "\n  total               4") && strstr(bf_err, "\n  not run             2"),
            "%s", bf_err);
  char *text = bf_read_work("r.jsonl");
  static yajl_val recs[10];
  size_t n = bf_parse_records(text, recs, 10);
  free(text);
  cr_assert_eq(n, 2, "records after fail-fast: %zu", n);
  cr_expect_str_eq(bf_jstr(bf_find_record(recs, n, "b"), "result"), "failed");
  bf_free_records(recs, n);
  cr_assert_eq(bf_an_pipe("batch -j1 --image busybox --results r.jsonl --resume -"), 1, "%s", bf_err);
  text = bf_read_work("r.jsonl");
  n = bf_parse_records(text, recs, 10);
  free(text);
  cr_expect_eq(n, 4, "records after resume: %zu", n);
  /* a malformed line on a pipe refuses the batch before anything runs */
  bf_write_text("jobs.jsonl", "{\"id\":\"e\",\"cmd\":[\"true\"]}\n{\"id\":\"x\"}\n");
  cr_expect_eq(bf_an_pipe("batch -j1 --image busybox --results r2.jsonl -"), 125, "%s", bf_err);
  cr_expect(strstr(bf_err, "line 2: no command"), "%s", bf_err);
  char *r2 = bf_read_work("r2.jsonl");
  cr_expect_str_eq(r2, "", "a job ran although the file was refused");
  free(r2);
  const char *ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) cr_expect_not_null(bf_find_record(recs, n, ids[i]), "%s", ids[i]);
  bf_free_records(recs, n);
  bf_assert_nothing_left();
}

/* --max-memory admits a job only while the running jobs' memory limits fit:
 * 512m jobs under 1g run two at once even with -j4 (each job's interval,
 * started..ended, is taken by its own process before and after its sandbox,
 * and the next job forks only after a job process has ended, so this is an
 * order of events, not a measure of time); a limit above it alone is an
 * "error" record. */
Test(batch_crash, max_memory_admits_jobs_by_their_memory_limits) {
  char jobs[4096] = "";
  for (int i = 0; i < 6; i++) {
    char l[200];
    snprintf(l, sizeof l, "{\"id\":\"m%d\",\"image\":\"busybox\",\"memory\":\"512m\",\"cmd\":[\"sleep\",\"0.2\"]}\n", i);
    strcat(jobs, l);
  }
  strcat(jobs, "{\"id\":\"huge\",\"image\":\"busybox\",\"memory\":\"2g\",\"cmd\":[\"true\"]}\n");
  bf_write_text("jobs.jsonl", jobs);
  cr_assert_eq(bf_an("batch -j4 --max-memory 1g --results r.jsonl jobs.jsonl"), 1, "%s", bf_err);
  char *text = bf_read_work("r.jsonl");
  static yajl_val recs[20];
  size_t n = bf_parse_records(text, recs, 20);
  free(text);
  cr_assert_eq(n, 7);
  yajl_val h = bf_find_record(recs, n, "huge");
  cr_assert_not_null(h);
  cr_expect_str_eq(bf_jstr(h, "result"), "error");
  cr_expect(bf_jstr(h, "reason") && strstr(bf_jstr(h, "reason"), "exceeds --max-memory 1GiB"), "%s", bf_jstr(h, "reason"));
  int most = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(bf_jstr(recs[i], "id"), "huge")) continue;
    cr_expect_str_eq(bf_jstr(recs[i], "result"), "passed");
    const char *t = bf_jstr(recs[i], "started");
    int at = 0;   /* jobs running when job i started (itself included) */
    for (size_t k = 0; k < n; k++)
      if (strcmp(bf_jstr(recs[k], "id"), "huge") && strcmp(bf_jstr(recs[k], "started"), t) <= 0 &&
          strcmp(t, bf_jstr(recs[k], "ended")) < 0)
        at++;
    if (at > most) most = at;
  }
  cr_expect_leq(most, 2, "%d jobs of 512m ran at once under --max-memory 1g", most);
  bf_free_records(recs, n);
  bf_assert_nothing_left();
}

/* --drain: on SIGTERM no job starts, the running ones finish and are
 * recorded; the exit status is still 143. */
Test(batch_crash, drain_lets_running_jobs_finish_on_sigterm) {
  char jobs[2048] = "";
  for (int i = 0; i < 6; i++) {
    char l[160];
    snprintf(l, sizeof l, "{\"id\":\"d%d\",\"image\":\"busybox\",\"shell\":\"sleep 1; echo d%d\"}\n", i, i);
    strcat(jobs, l);
  }
  bf_write_text("jobs.jsonl", jobs);
  const char *args[] = {"-j2", "--drain", "--results", "res.jsonl", "jobs.jsonl", NULL};
  pid_t pid = bf_start_batch(args);
  for (int k = 0; k < 300; k++) {   /* until both jobs have started */
    char *jn = bf_read_work("res.jsonl.journal");
    int lines = 0;
    for (char *p = jn; *p; p++) lines += *p == '\n';
    free(jn);
    if (lines >= 2) break;
    usleep(50000);
  }
  kill(pid, SIGTERM);
  cr_assert_eq(bf_wait_status(pid), 143, "%s", bf_read_work(".berr"));
  char *text = bf_read_work("res.jsonl");
  static yajl_val recs[10];
  size_t n = bf_parse_records(text, recs, 10);
  free(text);
  cr_expect_eq(n, 2, "the 2 running jobs are recorded, no other starts: %zu", n);
  for (size_t i = 0; i < n; i++) cr_expect_str_eq(bf_jstr(recs[i], "result"), "passed", "%s", bf_jstr(recs[i], "id"));
  bf_free_records(recs, n);
  bf_assert_nothing_left();
}
