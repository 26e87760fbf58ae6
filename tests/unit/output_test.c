/* Tests for agentnest/output.h: capped concurrent capture (BL-45), secret
 * redaction across reads, UTF-8-safe truncation and JSON encoding.  The
 * "exec" is a forked child of the test writing into pipes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>
#include "agentnest/output.h"

#define MiB ((size_t) 1 << 20)

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t kl = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') v = atol(line + kl + 1);
  if (f) fclose(f);
  return v;
}

static void write_pattern(int fd, char c, size_t total, bool newlines) {
  static char buf[65536];
  memset(buf, c, sizeof buf);
  if (newlines)
    for (size_t i = 9; i < sizeof buf; i += 10) buf[i] = '\n';
  while (total > 0) {
    size_t n = total < sizeof buf ? total : sizeof buf;
    ssize_t w = write(fd, buf, n);
    if (w <= 0) _exit(3);
    total -= (size_t) w;
  }
}

struct child {
  pid_t pid;
  int out, err;
};

/* Fork a writer with stdout/stderr pipes; fn runs in the child. */
static struct child spawn(void (*fn)(int out, int err)) {
  int po[2], pe[2];
  cr_assert_eq(pipe2(po, O_CLOEXEC), 0);
  cr_assert_eq(pipe2(pe, O_CLOEXEC), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(po[0]);
    close(pe[0]);
    fn(po[1], pe[1]);
    _exit(0);
  }
  close(po[1]);
  close(pe[1]);
  return (struct child){pid, po[0], pe[0]};
}

static int reap(pid_t pid) {
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  return st;
}

/* Both streams flood at once; stdout starts with one 50 MB line without a
 * newline, then `yes`-like lines; stderr is `yes >&2`. */
static void flood(int out, int err) {
  pid_t g = fork();
  if (g == 0) {
    write_pattern(err, 'y', 200 * MiB, true);
    _exit(0);
  }
  write_pattern(out, 'A', 50 * MiB, false);
  write_pattern(out, 'y', 150 * MiB, true);
  int st;
  waitpid(g, &st, 0);
  _exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 4);
}

Test(output, bl_45_flooding_both_streams_is_capped_drained_and_memory_bounded) {
  alarm(120); /* hang guard: a deadlock would kill the test */
  long rss_before = status_kib("VmRSS");
  struct child c = spawn(flood);
  struct an_output_opts o = {.max_total = 2 * MiB, .max_stdout = MiB, .max_stderr = MiB};
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, -1, &o, &out, &err), 0, "%s", err ? err->msg : "");
  long hwm_after = status_kib("VmHWM");
  int st = reap(c.pid);
  alarm(0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer was blocked or failed: %x", st);
  cr_assert_eq(out.stdout_read, 200 * MiB, "stdout fully drained");
  cr_assert_eq(out.stderr_read, 200 * MiB, "stderr fully drained");
  cr_assert_leq(out.stdout_len, MiB);
  cr_assert_leq(out.stderr_len, MiB);
  cr_assert_gt(out.stdout_len, MiB - 8);
  cr_assert(out.stdout_truncated);
  cr_assert(out.stderr_truncated);
  cr_assert_eq(out.stdout_buf[0], 'A');
  close(c.out);
  close(c.err);
  an_output_release(&out);
  long growth_kib = hwm_after - rss_before;
  cr_log_info("peak RSS growth %ld KiB for 2 MiB of caps", growth_kib);
#ifndef __SANITIZE_ADDRESS__ /* ASan's redzones and quarantine inflate RSS */
  cr_assert_leq(growth_kib, (long) (2 * MiB / 1024) + 2048, "peak RSS grew by %ld KiB", growth_kib);
#endif
}

static void urandom_out(int out, int err) {
  int fd = open("/dev/urandom", O_RDONLY);
  char buf[65536];
  for (int i = 0; i < 64; i++) {
    if (read(fd, buf, sizeof buf) != (ssize_t) sizeof buf) _exit(5);
    if (write(out, buf, sizeof buf) != (ssize_t) sizeof buf) _exit(6);
  }
  _exit(0);
}

static char *to_json(const struct an_output *out, size_t *len) {
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  cr_assert_eq(yajl_gen_map_open(g), yajl_gen_status_ok);
  cr_assert_eq(an_output_json_fields(g, out), yajl_gen_status_ok);
  cr_assert_eq(yajl_gen_map_close(g), yajl_gen_status_ok);
  const unsigned char *buf;
  yajl_gen_get_buf(g, &buf, len);
  char *copy = strndup((const char *) buf, *len);
  yajl_gen_free(g);
  return copy;
}

Test(output, bl_45_binary_output_cut_at_cap_gives_valid_json) {
  alarm(60);
  struct child c = spawn(urandom_out);
  struct an_output_opts o = {.max_total = MiB};
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, -1, &o, &out, &err), 0);
  reap(c.pid);
  alarm(0);
  cr_assert_leq(out.stdout_len, MiB);
  cr_assert(out.stdout_truncated);
  size_t jl;
  char *json = to_json(&out, &jl);
  char ebuf[256];
  yajl_val v = yajl_tree_parse(json, ebuf, sizeof ebuf);
  cr_assert_not_null(v, "invalid JSON: %s", ebuf);
  const char *path[] = {"stdout", NULL};
  cr_assert(YAJL_IS_STRING(yajl_tree_get(v, path, yajl_t_string)));
  const char *tp[] = {"stdout_truncated", NULL};
  cr_assert(YAJL_IS_TRUE(yajl_tree_get(v, tp, yajl_t_any)));
  yajl_tree_free(v);
  free(json);
  close(c.out);
  close(c.err);
  an_output_release(&out);
}

static void euro_out(int out, int err) {
  /* "€" is 3 bytes (E2 82 AC); 1 MiB is not a multiple of 3. */
  static char buf[3 * 21846];
  for (size_t i = 0; i < sizeof buf; i += 3) memcpy(buf + i, "\xE2\x82\xAC", 3);
  for (int i = 0; i < 40; i++)
    if (write(out, buf, sizeof buf) != (ssize_t) sizeof buf) _exit(5);
  _exit(0);
}

Test(output, bl_45_cut_at_cap_never_splits_a_utf8_sequence) {
  alarm(60);
  struct child c = spawn(euro_out);
  struct an_output_opts o = {.max_stdout = MiB};
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, -1, &o, &out, &err), 0);
  reap(c.pid);
  alarm(0);
  cr_assert(out.stdout_truncated);
  cr_assert_eq(out.stdout_len % 3, 0, "kept %zu bytes: a sequence was cut", out.stdout_len);
  cr_assert_geq(out.stdout_len, MiB - 3);
  size_t n;
  char *clean = an_utf8_sanitize(out.stdout_buf, out.stdout_len, &n);
  cr_assert_eq(n, out.stdout_len, "kept bytes are valid UTF-8");
  free(clean);
  close(c.out);
  close(c.err);
  an_output_release(&out);
}

static void close_stdout_keep_running(int out, int err) {
  (void) !write(out, "bye\n", 4);
  close(out);
  (void) !write(err, "still here\n", 11);
  for (;;) pause();
}

Test(output, bl_45_process_closing_stdout_but_running_returns_on_stop_fd) {
  alarm(30);
  struct child c = spawn(close_stdout_keep_running);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  struct itimerspec its = {.it_value = {.tv_nsec = 200 * 1000 * 1000}};
  cr_assert_eq(timerfd_settime(tfd, 0, &its, NULL), 0);
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, tfd, NULL, &out, &err), 0);
  alarm(0);
  kill(c.pid, SIGKILL);
  reap(c.pid);
  cr_assert_str_eq(out.stdout_buf, "bye\n");
  cr_assert_str_eq(out.stderr_buf, "still here\n");
  cr_assert_not(out.stdout_truncated);
  close(tfd);
  close(c.out);
  close(c.err);
  an_output_release(&out);
}

/* Feed `text` in pieces of `step` bytes and return the kept stdout. */
static char *redact_in_pieces(const struct an_secret *s, size_t ns, const char *text, size_t step) {
  an_output_capture_t *c = NULL;
  an_error_t err = NULL;
  struct an_output_opts o = {.secrets = s, .nsecrets = ns};
  cr_assert_eq(an_output_capture_new(&o, &c, &err), 0);
  size_t len = strlen(text);
  for (size_t i = 0; i < len; i += step)
    cr_assert_eq(an_output_capture_feed(c, AN_STREAM_STDOUT, text + i, len - i < step ? len - i : step, &err), 0);
  struct an_output out;
  cr_assert_eq(an_output_capture_finish(c, &out, &err), 0);
  an_output_capture_free(c);
  free(out.stderr_buf);
  return out.stdout_buf;
}

Test(output, secrets_are_redacted_even_when_split_across_reads) {
  const struct an_secret s[] = {{"API_KEY", "sk-12345"}, {"TOKEN", "tok"}, {"LONG", "tok-and-more"}};
  const char *text = "a sk-12345 b tok c tok-and-more d sk-1234 e to\nsk-12345";
  const char *want = "a [REDACTED:API_KEY] b [REDACTED:TOKEN] c [REDACTED:LONG] d sk-1234 e to\n"
                     "[REDACTED:API_KEY]";
  for (size_t step = 1; step <= strlen(text); step++) {
    char *got = redact_in_pieces(s, 3, text, step);
    cr_assert_str_eq(got, want, "read size %zu", step);
    free(got);
  }
  /* a held-back prefix at end of stream is emitted, not lost */
  char *got = redact_in_pieces(s, 3, "ends with sk-123", 5);
  cr_assert_str_eq(got, "ends with sk-123");
  free(got);
}

static void secret_through_pipe(int out, int err) {
  (void) !write(out, "key=sk-12", 9);
  usleep(50000);
  (void) !write(out, "345 done", 8);
  (void) !write(err, "sk-12345", 8);
  _exit(0);
}

Test(output, secrets_split_across_pipe_writes_never_appear) {
  alarm(30);
  struct child c = spawn(secret_through_pipe);
  const struct an_secret s[] = {{"API_KEY", "sk-12345"}};
  struct an_output_opts o = {.secrets = s, .nsecrets = 1};
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, -1, &o, &out, &err), 0);
  reap(c.pid);
  alarm(0);
  cr_assert_str_eq(out.stdout_buf, "key=[REDACTED:API_KEY] done");
  cr_assert_str_eq(out.stderr_buf, "[REDACTED:API_KEY]");
  close(c.out);
  close(c.err);
  an_output_release(&out);
}

Test(output, bad_secrets_are_refused) {
  an_output_capture_t *c = NULL;
  an_error_t err = NULL;
  const struct an_secret empty[] = {{"X", ""}};
  struct an_output_opts o = {.secrets = empty, .nsecrets = 1};
  cr_assert_eq(an_output_capture_new(&o, &c, &err), -EINVAL);
  cr_assert(strstr(err->msg, "secret X: empty value"), "%s", err->msg);
  an_error_free(&err);
}

Test(output, json_replaces_invalid_utf8_and_escapes_controls) {
  const char raw[] = "ok \xC3\xA9 bad \xFF\xC3 nul \0 ctl \x1b end \xED\xA0\x80";
  yajl_gen g = yajl_gen_alloc(NULL);
  yajl_gen_config(g, yajl_gen_validate_utf8, 1);
  cr_assert_eq(an_json_escape_output(g, raw, sizeof raw - 1), yajl_gen_status_ok);
  const unsigned char *buf;
  size_t len;
  yajl_gen_get_buf(g, &buf, &len);
  const char *want = "\"ok \xC3\xA9 bad \xEF\xBF\xBD\xEF\xBF\xBD nul \\u0000 ctl \\u001B end "
                     "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"";
  cr_assert_eq(len, strlen(want), "got %.*s", (int) len, buf);
  cr_assert_eq(memcmp(buf, want, len), 0, "got %.*s", (int) len, buf);
  yajl_gen_free(g);
}

static void endless(int out, int err) {
  (void) err;
  write_pattern(out, 'z', SIZE_MAX, true);
}

Test(output, stop_fd_returns_even_while_the_writer_keeps_flooding) {
  alarm(30);
  struct child c = spawn(endless);
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  struct itimerspec its = {.it_value = {.tv_nsec = 100 * 1000 * 1000}};
  cr_assert_eq(timerfd_settime(tfd, 0, &its, NULL), 0);
  struct an_output_opts o = {.max_total = MiB};
  struct an_output out;
  an_error_t err = NULL;
  cr_assert_eq(an_output_capture(c.out, c.err, tfd, &o, &out, &err), 0);
  alarm(0);
  kill(c.pid, SIGKILL);
  reap(c.pid);
  cr_assert(out.stdout_truncated);
  cr_assert_leq(out.stdout_len, MiB);
  close(tfd);
  close(c.out);
  close(c.err);
  an_output_release(&out);
}
