/* tests/integration/batch_test.c — black-box tests of `agentnest batch`
 * through the built binary ($AN_TEST_BUILD/agentnest): a 200-job file
 * mixing Python, shell, failures, timeouts, an OOM kill, a fork bomb,
 * artifacts and a malformed line, checked record by record and through the
 * JUnit report parsed by a real XML parser (python3's xml.etree); shards
 * 1/3, 2/3, 3/3 covering every job once; refusals of bad files (each bad
 * line reported once, with the file, line and cause); memory
 * bounded on a 100 MB file; and after each test nothing left on the host
 * from its store (tests/lib/batch_fixture.h).  Crash safety is in
 * batch_crash_test.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "batch_fixture.h"
#include "util.h"

TestSuite(batch, .init = bf_setup, .fini = bf_teardown, .timeout = 300);

/* ---- the 200-job file --------------------------------------------------------------------- */

enum kind { K_SHELL, K_PYTHON, K_FAIL, K_TIMEOUT, K_OOM, K_BOMB, K_GET, K_BAD, K_XML };

static enum kind kind_of(int i) {
  if (i == 100) return K_BAD;
  if (i == 7) return K_OOM;
  if (i == 9) return K_BOMB;
  if (i == 2) return K_XML;
  if (i % 10 == 3) return K_FAIL;
  if (i % 40 == 5) return K_TIMEOUT;
  if (i % 40 == 11) return K_GET;
  if (i % 4 == 0) return K_PYTHON;
  return K_SHELL;
}

static void write_200(const char *name) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", bf_work, name);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < 200; i++) {
    switch (kind_of(i)) {
    case K_BAD: fprintf(f, "{\"id\":\"j%d\",\"cmd\":\"not-an-array\"}\n", i); break;
    case K_OOM:
      fprintf(f, "{\"id\":\"j%d\",\"python\":\"a = bytearray(400 << 20); print(len(a))\",\"memory\":\"64m\"}\n", i);
      break;
    case K_BOMB:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"b() { b | b & }; b; sleep 30\",\"pids\":32,\"timeout\":\"2s\"}\n", i);
      break;
    case K_XML:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"printf '<a&b>\\\\001\\\"\\\\n'\"}\n", i);
      break;
    case K_FAIL:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"echo failing >&2; exit %d\"}\n", i, i % 7 + 1);
      break;
    case K_TIMEOUT:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"cmd\":[\"sleep\",\"30\"],\"timeout\":\"1s\"}\n", i);
      break;
    case K_GET:
      fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"mkdir -p out; printf art-%d > out/a%d.txt\",\"get\":[\"out/*.txt\"]}\n", i, i, i);
      break;
    case K_PYTHON: fprintf(f, "{\"id\":\"j%d\",\"python\":\"print(%d * %d)\"}\n", i, i, i); break;
    case K_SHELL: fprintf(f, "{\"id\":\"j%d\",\"image\":\"busybox\",\"shell\":\"echo line-%d\"}\n", i, i); break;
    }
    if (i == 50) fputs("\n", f);   /* a blank line is no job */
  }
  fclose(f);
}

static const char junit_py[] =
    "import json, sys, xml.etree.ElementTree as ET\n"
    "top = ET.parse(sys.argv[1]).getroot()\n"
    "s = top.find('testsuite')\n"
    "o = {'top': top.tag, 'tests': int(s.get('tests')), 'failures': int(s.get('failures')),\n"
    "     'errors': int(s.get('errors')), 'cases': {}, 'out': {}}\n"
    "for c in s.findall('testcase'):\n"
    "    f, e = c.find('failure'), c.find('error')\n"
    "    o['cases'][c.get('name')] = 'failure:' + f.get('type') if f is not None else ('error' if e is not None else 'passed')\n"
    "    so = c.find('system-out')\n"
    "    o['out'][c.get('name')] = so.text if so is not None else ''\n"
    "print(json.dumps(o))\n";

Test(batch, two_hundred_jobs_results_and_junit_line_by_line) {
  bf_import_image("python");
  write_200("jobs.jsonl");
  /* strict (the default): the malformed line refuses the file before anything runs */
  cr_assert_eq(bf_an("batch -j2 --results strict.jsonl jobs.jsonl"), 125, "%s", bf_err);
  cr_expect(strstr(bf_err, "line 102") && strstr(bf_err, "member \"cmd\""), "%s", bf_err);
  char *strict = bf_read_work("strict.jsonl");
  cr_expect_str_eq(strict, "", "records were written although the file was refused");
  free(strict);

  int st = bf_an("batch -j2 --lenient --results res.jsonl --junit junit.xml --output-dir outd jobs.jsonl");
  cr_assert_eq(st, 1, "exit %d: %s", st, bf_err);
  /* off a terminal: a line per finished job, then the summary table */
  cr_expect(strstr(bf_err, "batch: [200/200] "), "%.2000s", bf_err);
  cr_expect(strstr(bf_err, "\n  total             200") && strstr(bf_err, "slowest: "), "summary table");
  char *text = bf_read_work("res.jsonl");
  static yajl_val recs[400];
  size_t n = bf_parse_records(text, recs, 400);
  free(text);
  cr_assert_eq(n, 200, "%zu records", n);
  int counts[8] = {0};
  for (int i = 0; i < 200; i++) {
    char id[16];
    snprintf(id, sizeof id, "j%d", i);
    yajl_val r = bf_find_record(recs, n, id);
    cr_assert_not_null(r, "no record of %s", id);
    const char *res = bf_jstr(r, "result");
    cr_assert_not_null(res, "%s: no result", id);
    cr_expect_eq(bf_jint(r, "attempt", 0), 1, "%s attempt", id);
    cr_expect_eq(bf_jint(r, "line", 0), i < 51 ? i + 1 : i + 2, "%s line", id);
    cr_expect(bf_jstr(r, "started") && bf_jstr(r, "ended"), "%s: times", id);
    const char *out = bf_jstr(r, "stdout");
    char want[64];
    switch (kind_of(i)) {
    case K_SHELL:
      cr_expect_str_eq(res, "passed", "%s", id);
      snprintf(want, sizeof want, "line-%d\n", i);
      cr_expect_str_eq(out ? out : "", want, "%s stdout", id);
      counts[0]++;
      break;
    case K_PYTHON:
      cr_expect_str_eq(res, "passed", "%s: %s", id, bf_jstr(r, "reason"));
      snprintf(want, sizeof want, "%d\n", i * i);
      cr_expect_str_eq(out ? out : "", want, "%s stdout", id);
      counts[1]++;
      break;
    case K_XML: cr_expect_str_eq(res, "passed", "%s", id); break;
    case K_FAIL:
      cr_expect_str_eq(res, "failed", "%s", id);
      cr_expect_eq(bf_jint(r, "exit_code", -1), i % 7 + 1, "%s exit code", id);
      cr_expect_str_eq(bf_jstr(r, "stderr"), "failing\n", "%s stderr", id);
      snprintf(want, sizeof want, "exit code %d", i % 7 + 1);
      cr_expect_str_eq(bf_jstr(r, "reason"), want, "%s reason", id);
      counts[2]++;
      break;
    case K_TIMEOUT:
      cr_expect_str_eq(res, "timed_out", "%s", id);
      cr_expect(bf_jtrue(r, "timed_out"), "%s", id);
      cr_expect_eq(bf_jint(r, "status", 0), 124, "%s", id);
      counts[3]++;
      break;
    case K_OOM:
      cr_expect_str_eq(res, "oom_killed", "%s: %s", id, bf_jstr(r, "reason"));
      cr_expect(bf_jtrue(r, "oom_killed"), "%s", id);
      break;
    case K_BOMB:
      /* contained by pids: it cannot pass, and its sandbox is gone (checked below) */
      cr_expect(!strcmp(res, "timed_out") || !strcmp(res, "failed"), "%s: %s", id, res);
      break;
    case K_GET: {
      cr_expect_str_eq(res, "passed", "%s: %s", id, bf_jstr(r, "reason"));
      const char *ap[] = {"artifacts", NULL};
      yajl_val arts = yajl_tree_get(r, ap, yajl_t_array);
      cr_assert(arts && arts->u.array.len == 1, "%s: artifacts", id);
      yajl_val a = arts->u.array.values[0];
      char path[64], content[64], sha[65];
      snprintf(path, sizeof path, "out/a%d.txt", i);
      snprintf(content, sizeof content, "art-%d", i);
      bf_sha256_hex(content, sha);
      cr_expect_str_eq(bf_jstr(a, "path"), path);
      cr_expect_eq(bf_jint(a, "size", -1), (long long) strlen(content));
      cr_expect_str_eq(bf_jstr(a, "sha256"), sha, "%s sha256", id);
      cr_expect(bf_jtrue(a, "copied"));
      char rel[128];
      snprintf(rel, sizeof rel, "outd/%s/artifacts/%s", id, path);
      char *copy = bf_read_work(rel);
      cr_expect_str_eq(copy, content, "%s: the copied artifact", rel);
      free(copy);
      counts[4]++;
      break;
    }
    case K_BAD:
      cr_expect_str_eq(res, "error", "%s", id);
      cr_expect(bf_jstr(r, "reason") && strstr(bf_jstr(r, "reason"), "line 102") &&
                strstr(bf_jstr(r, "reason"), "member \"cmd\""), "%s reason: %s", id, bf_jstr(r, "reason"));
      cr_expect_eq(bf_jint(r, "status", 0), 125);
      break;
    }
    /* the output directory has the full streams */
    if (kind_of(i) == K_SHELL && i < 20) {
      char rel[64];
      snprintf(rel, sizeof rel, "outd/%s/stdout", id);
      char *o = bf_read_work(rel);
      snprintf(want, sizeof want, "line-%d\n", i);
      cr_expect_str_eq(o, want, "%s", rel);
      free(o);
    }
  }
  cr_expect_eq(counts[2], 20);
  cr_expect_eq(counts[3], 5);
  cr_expect_eq(counts[4], 5);
  /* the summary table's failed row: the 20 failing jobs, and the fork bomb
   * when pids ended it before its timeout did (either result is right) */
  const char *bomb = bf_jstr(bf_find_record(recs, n, "j9"), "result");
  char failed_row[64];
  snprintf(failed_row, sizeof failed_row, "\n  failed             %d\n",
           20 + (bomb && !strcmp(bomb, "failed")));
  cr_expect(strstr(bf_err, failed_row) && strstr(bf_err, "\n  timed_out"), "no row \"%s\" (fork bomb: %s): %s",
            failed_row + 1, bomb, strstr(bf_err, "batch summary") ? strstr(bf_err, "batch summary") : bf_err);

  /* JUnit through a real XML parser: one test case per job, failures typed */
  bf_write_text("junit.py", junit_py);
  cr_assert_eq(an_test_sh("cd '%s' && python3 junit.py junit.xml > junit.json 2> junit.err", bf_work), 0,
               "JUnit does not parse: %s", bf_read_work("junit.err"));
  char *jt = bf_read_work("junit.json");
  char e[256] = "";
  yajl_val j = yajl_tree_parse(jt, e, sizeof e);
  cr_assert_not_null(j, "%s", jt);
  free(jt);
  cr_expect_str_eq(bf_jstr(j, "top"), "testsuites");
  cr_expect_eq(bf_jint(j, "tests", 0), 200);
  /* failures: 20 failed + 5 timed out + OOM + the fork bomb; errors: the bad line */
  cr_expect_eq(bf_jint(j, "failures", 0), 27);
  cr_expect_eq(bf_jint(j, "errors", 0), 1);
  const char *cp[] = {"cases", NULL};
  yajl_val cases = yajl_tree_get(j, cp, yajl_t_object);
  cr_assert(cases && cases->u.object.len == 200, "JUnit test cases");
  for (int i = 0; i < 200; i++) {
    char id[16];
    snprintf(id, sizeof id, "j%d", i);
    const char *c = bf_jstr(cases, id);
    const char *res = bf_jstr(bf_find_record(recs, n, id), "result");
    cr_assert(c && res, "%s", id);
    if (!strcmp(res, "passed")) cr_expect_str_eq(c, "passed", "%s", id);
    else if (!strcmp(res, "error")) cr_expect_str_eq(c, "error", "%s", id);
    else {
      char want[64];
      snprintf(want, sizeof want, "failure:%s", res);
      cr_expect_str_eq(c, want, "%s", id);
    }
  }
  /* XML-hostile output is escaped (a control character becomes U+FFFD) */
  const char *op[] = {"out", "j2", NULL};
  yajl_val o2 = yajl_tree_get(j, op, yajl_t_string);
  cr_expect(o2 && !strcmp(o2->u.string, "<a&b>\xEF\xBF\xBD\"\n"), "j2 system-out: %s", o2 ? o2->u.string : "none");
  yajl_tree_free(j);
  bf_free_records(recs, n);
  bf_assert_nothing_left();
}

/* ---- sharding and refusals ----------------------------------------------------------------- */

Test(batch, shards_1_2_3_of_3_cover_every_job_once) {
  char p[700];
  snprintf(p, sizeof p, "%s/jobs.jsonl", bf_work);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  for (int i = 0; i < 31; i++) fprintf(f, "{\"id\":\"s%d\",\"image\":\"busybox\",\"cmd\":[\"true\"]}\n", i);
  fclose(f);
  for (int k = 1; k <= 3; k++)
    cr_assert_eq(bf_an("batch -j2 --shard %d/3 --results shard%d.jsonl jobs.jsonl", k, k), 0, "%s", bf_err);
  /* shard result files merge by concatenation */
  cr_assert_eq(an_test_sh("cd '%s' && cat shard1.jsonl shard2.jsonl shard3.jsonl > all.jsonl", bf_work), 0);
  char *text = bf_read_work("all.jsonl");
  static yajl_val recs[100];
  size_t n = bf_parse_records(text, recs, 100);
  free(text);
  cr_expect_eq(n, 31);
  for (int i = 0; i < 31; i++) {
    char id[16];
    snprintf(id, sizeof id, "s%d", i);
    cr_expect_not_null(bf_find_record(recs, n, id), "%s in no shard", id);
  }
  bf_free_records(recs, n);
  char *s1 = bf_read_work("shard1.jsonl");
  int lines = 0;
  for (char *q = s1; *q; q++) lines += *q == '\n';
  free(s1);
  cr_expect_eq(lines, 11, "shard 1/3 of 31 jobs");
  cr_expect_eq(bf_an("batch --shard 4/3 jobs.jsonl"), 125);
  cr_expect(strstr(bf_err, "--shard 4/3"), "%s", bf_err);
  bf_assert_nothing_left();
}

Test(batch, duplicate_id_and_unknown_member_refuse_the_file) {
  bf_write_text("dup.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n{\"id\":\"b\",\"cmd\":[\"true\"],\"memroy\":\"1g\"}\n"
                          "{\"id\":\"a\",\"cmd\":[\"true\"]}\n");
  /* an earlier run's results are kept, and no journal is made */
  bf_write_text("r.jsonl", "{\"id\":\"earlier\"}\n");
  cr_assert_eq(bf_an("batch --image busybox --results r.jsonl dup.jsonl"), 125);
  cr_expect(strstr(bf_err, "line 2: member \"memroy\": unknown"), "%s", bf_err);
  cr_expect(strstr(bf_err, "line 3: member \"id\": \"a\" repeats the id of line 1"), "%s", bf_err);
  char *r = bf_read_work("r.jsonl");
  cr_expect_str_eq(r, "{\"id\":\"earlier\"}\n");
  free(r);
  char jp[700];
  snprintf(jp, sizeof jp, "%s/r.jsonl.journal", bf_work);
  cr_expect_neq(access(jp, F_OK), 0, "a journal was made for a refused file");
  cr_expect_eq(bf_an("batch --help"), 0);
  cr_expect(strstr(bf_out, "Usage: agentnest batch"), "%s", bf_out);
  cr_expect_eq(bf_an("batch --resume jobs.jsonl"), 125);
  cr_expect(strstr(bf_err, "--resume needs --results"), "%s", bf_err);
  bf_assert_nothing_left();
}

/* The JOBS file is streamed: a 100 MB file (25,000 jobs of 4 KB) is
 * validated and sharded with the batch's peak RSS far below its size. */
Test(batch, memory_stays_bounded_on_a_100_mb_file) {
  char p[700];
  snprintf(p, sizeof p, "%s/big.jsonl", bf_work);
  FILE *f = fopen(p, "we");
  cr_assert_not_null(f);
  static char pad[4001];
  memset(pad, 'x', 4000);
  for (int i = 0; i < 25000; i++)
    fprintf(f, "{\"id\":\"b%d\",\"image\":\"busybox\",\"cmd\":[\"true\"],\"env\":{\"PAD\":\"%s\"}}\n", i, pad);
  cr_assert_eq(fclose(f), 0);
  const char *args[] = {"--shard", "1/12500", "--results", "r.jsonl", "big.jsonl", NULL};
#ifdef __SANITIZE_ADDRESS__
  /* an ASan build keeps freed memory in quarantine (256 MB by default) */
  const char *ao = getenv("ASAN_OPTIONS");
  char opts[512];
  snprintf(opts, sizeof opts, "%s%squarantine_size_mb=0", ao ? ao : "", ao && *ao ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
#endif
  pid_t pid = bf_start_batch(args);
  int st;
  struct rusage ru;
  cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d: %s", st, bf_read_work(".berr"));
  char *text = bf_read_work("r.jsonl");
  static yajl_val recs[4];
  size_t n = bf_parse_records(text, recs, 4);
  free(text);
  cr_expect_eq(n, 2, "shard 1/12500 of 25000 jobs: %zu records", n);
  bf_free_records(recs, n);
  cr_expect_lt(ru.ru_maxrss, 48 * 1024, "peak RSS %ld KiB for a 100 MB file", ru.ru_maxrss);
  unlink(p);
  bf_assert_nothing_left();
}

/* A malformed line of a strict batch is reported once on stderr, with the
 * file, the line and the cause (before: the per-line report and then the
 * final error repeated it); the exit status stays 125 and nothing ran. */
Test(batch, malformed_line_is_reported_once) {
  bf_write_text("bad.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\n{\"id\":\"b\",\"cmd\":[\"true\"],\"memroy\":\"1g\"}\n");
  cr_assert_eq(bf_an("batch --image busybox --results r.jsonl bad.jsonl"), 125, "%s", bf_err);
  const char *cause = "member \"memroy\": unknown";
  int k = 0;
  for (const char *s = bf_err; (s = strstr(s, cause)); s += strlen(cause)) k++;
  cr_expect_eq(k, 1, "the cause is reported %d times: %s", k, bf_err);
  cr_expect(strstr(bf_err, "JOBS bad.jsonl line 2: member \"memroy\": unknown"), "%s", bf_err);
  cr_expect(strstr(bf_err, "nothing was run"), "%s", bf_err);
  char *r = bf_read_work("r.jsonl");
  cr_expect_str_eq(r, "", "a job ran although the file was refused");
  free(r);
  /* standard input is named so */
  bf_write_text("jobs.jsonl", "{\"id\":\"a\",\"cmd\":[\"true\"]}\nnot json\n");
  cr_assert_eq(bf_an_pipe("batch --image busybox -"), 125, "%s", bf_err);
  cr_expect(strstr(bf_err, "JOBS (standard input) line 2: "), "%s", bf_err);
  cr_expect(!strstr(bf_err, "line 2: line 2"), "%s", bf_err);
  bf_assert_nothing_left();
}
