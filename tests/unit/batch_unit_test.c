/* tests/unit/batch_unit_test.c — the pieces of `batch` below the scheduler
 * (src/sandbox/batch_internal.h), without sandboxes: a JOBS line parsed
 * into argv and options or refused with the member named; the line reader
 * (NUL bytes, over-long lines, a last line without its newline); the id set;
 * a record written and read back. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sandbox/batch_internal.h"

static struct an_batch_job parse_ok(const char *line) {
  struct an_batch_job j;
  an_error_t err = NULL;
  int r = an_batch_job_parse(line, strlen(line), 7, NULL, &j, &err);
  cr_assert_eq(r, 0, "%s: %s", line, err ? err->msg : "");
  return j;
}

static void argv_is(const struct an_batch_job *j, const char *const *want) {
  size_t i = 0;
  for (; want[i]; i++) {
    cr_assert_not_null(j->argv[i], "argv[%zu] missing", i);
    cr_expect_str_eq(j->argv[i], want[i]);
  }
  cr_expect_null(j->argv[i]);
}

Test(batch_unit, each_command_kind_becomes_its_argv) {
  struct an_batch_job j = parse_ok("{\"id\":\"a\",\"cmd\":[\"ls\",\"-l\"]}");
  argv_is(&j, (const char *[]) {"ls", "-l", NULL});
  cr_expect_eq(j.line, 7);
  cr_expect_eq(j.attempt, 1);
  cr_expect_str_eq(an_sandbox_opts_image(j.opts), "python");   /* the default image */
  an_batch_job_clear(&j);
  j = parse_ok("{\"id\":\"b\",\"shell\":\"echo $1\",\"image\":\"busybox\"}");
  argv_is(&j, (const char *[]) {"sh", "-c", "echo $1", NULL});
  cr_expect_str_eq(an_sandbox_opts_image(j.opts), "busybox");
  an_batch_job_clear(&j);
  j = parse_ok("{\"id\":\"c\",\"python\":\"print(1)\"}");
  argv_is(&j, (const char *[]) {"python3", "-c", "print(1)", NULL});
  an_batch_job_clear(&j);
  j = parse_ok("{\"id\":\"d\",\"file\":\"dir/t.py\"}");
  argv_is(&j, (const char *[]) {"python3", "t.py", NULL});
  cr_expect_str_eq(j.file, "dir/t.py");
  an_batch_job_clear(&j);
  j = parse_ok("{\"id\":\"e\",\"file\":\"run.sh\",\"put\":[\"a:b\"],\"get\":[\"out/**\"]}");
  argv_is(&j, (const char *[]) {"sh", "run.sh", NULL});
  cr_expect_str_eq(j.puts[0], "a:b");
  cr_expect_str_eq(j.gets[0], "out/**");
  an_batch_job_clear(&j);
}

Test(batch_unit, members_set_options_and_timeout_raises_the_lifetime) {
  struct an_batch_job j = parse_ok("{\"id\":\"a\",\"cmd\":[\"true\"],\"memory\":\"256m\",\"pids\":64,"
                                   "\"cpus\":0.5,\"timeout\":\"20m\",\"env\":{\"K\":\"V\"}}");
  cr_expect_eq(an_sandbox_opts_memory(j.opts), 256u << 20);
  cr_expect_eq(an_sandbox_opts_pids(j.opts), 64);
  cr_expect_eq(an_sandbox_opts_cpus(j.opts), 500);
  cr_expect_eq(j.timeout_ms, 20 * 60 * 1000);
  cr_expect_geq(an_sandbox_opts_lifetime(j.opts), j.timeout_ms + 30000);
  an_batch_job_clear(&j);
}

Test(batch_unit, a_bad_line_names_the_member_at_fault) {
  static const char *const bad[][2] = {
      {"{\"id\":\"a\"}", "no command"},
      {"{\"cmd\":[\"true\"]}", "member \"id\": missing"},
      {"{\"id\":\"a b\",\"cmd\":[\"true\"]}", "member \"id\""},
      {"{\"id\":\"..\",\"cmd\":[\"true\"]}", "member \"id\""},
      {"{\"id\":\"a\",\"cmd\":[]}", "member \"cmd\": must not be empty"},
      {"{\"id\":\"a\",\"cmd\":[1]}", "member \"cmd\""},
      {"{\"id\":\"a\",\"shell\":\"x\",\"cmd\":[\"y\"]}", "give only one command"},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"memroy\":\"1g\"}", "member \"memroy\": unknown"},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"memory\":\"lots\"}", "member \"memory\""},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"memory\":true}", "member \"memory\": must be a string or a number"},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"env\":{\"K\":1}}", "member \"env\""},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"secrets\":[\"X=@/etc/shadow\"]}", "member \"secrets\""},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"get\":[\"../x\"]}", "member \"get\""},
      {"{\"id\":\"a\",\"cmd\":[\"true\"],\"timeout\":\"soon\"}", "member \"timeout\""},
      {"[1,2]", "not a JSON object"},
      {"{\"id\":\"a\",", "invalid JSON"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    struct an_batch_job j;
    an_error_t err = NULL;
    int r = an_batch_job_parse(bad[i][0], strlen(bad[i][0]), 1, NULL, &j, &err);
    cr_expect_eq(r, -EINVAL, "%s", bad[i][0]);
    cr_expect(err && strstr(err->msg, bad[i][1]), "%s: %s (want %s)", bad[i][0], err ? err->msg : "no error",
              bad[i][1]);
    an_error_free(&err);
    an_batch_job_clear(&j);
  }
}

Test(batch_unit, the_line_reader_keeps_nul_bytes_caps_length_and_sees_a_cut_last_line) {
  static const char data[] = "ab\0c\nxxxxxxxxxx\n\nlast";
  FILE *f = fmemopen((void *) data, sizeof data - 1, "r");
  cr_assert_not_null(f);
  char *buf = NULL;
  size_t cap = 0, len = 0;
  bool too_long, eol;
  cr_assert_eq(an_batch_read_line(f, &buf, &cap, &len, 8, &too_long, &eol), 1);
  cr_expect_eq(len, 4);
  cr_expect(!memcmp(buf, "ab\0c", 4) && eol && !too_long);
  cr_assert_eq(an_batch_read_line(f, &buf, &cap, &len, 8, &too_long, &eol), 1);
  cr_expect(too_long && eol && len == 8, "a line over the cap is marked, the rest skipped");
  cr_assert_eq(an_batch_read_line(f, &buf, &cap, &len, 8, &too_long, &eol), 1);
  cr_expect(len == 0 && eol);
  cr_assert_eq(an_batch_read_line(f, &buf, &cap, &len, 8, &too_long, &eol), 1);
  cr_expect(len == 4 && !memcmp(buf, "last", 4) && !eol, "the last line has no newline");
  cr_expect_eq(an_batch_read_line(f, &buf, &cap, &len, 8, &too_long, &eol), 0);
  free(buf);
  fclose(f);
}

Test(batch_unit, the_id_set_finds_every_id_it_holds_and_no_other) {
  struct an_batch_idset s = {0};
  char id[32];
  for (int i = 0; i < 20000; i++) {
    snprintf(id, sizeof id, "job-%d", i);
    cr_assert_eq(an_batch_idset_put(&s, id, (uint32_t) i), 0);
  }
  cr_expect_eq(s.n, 20000);
  for (int i = 0; i < 20000; i++) {
    uint32_t v = 0;
    snprintf(id, sizeof id, "job-%d", i);
    cr_assert(an_batch_idset_get(&s, id, &v) && v == (uint32_t) i, "%s", id);
    snprintf(id, sizeof id, "job-%d.", i);
    cr_assert(!an_batch_idset_get(&s, id, NULL), "%s", id);
  }
  cr_assert_eq(an_batch_idset_put(&s, "job-5", 99), 0);   /* replace, not add */
  uint32_t v = 0;
  cr_expect(an_batch_idset_get(&s, "job-5", &v) && v == 99 && s.n == 20000);
  an_batch_idset_free(&s);
}

Test(batch_unit, an_error_record_reads_back) {
  char *line = NULL;
  size_t len = 0;
  cr_assert_eq(an_batch_error_record("line-3", 3, 2, "line 3: member \"cmd\": bad \xff", &line, &len), 0);
  cr_assert(len > 0 && line[len - 1] == '\n' && !memchr(line, '\n', len - 1), "one line: %s", line);
  yajl_val t = NULL;
  struct an_batch_rec rec;
  an_error_t err = NULL;
  cr_assert_eq(an_batch_rec_parse(line, len - 1, &t, &rec, &err), 0, "%s", err ? err->msg : "");
  cr_expect_str_eq(rec.id, "line-3");
  cr_expect_eq(rec.result, AN_BATCH_ERROR);
  /* the byte that is not UTF-8 became U+FFFD */
  cr_expect_str_eq(rec.reason, "line 3: member \"cmd\": bad \xEF\xBF\xBD");
  yajl_tree_free(t);
  free(line);
}
