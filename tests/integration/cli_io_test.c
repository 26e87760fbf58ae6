/* tests/integration/cli_io_test.c — black-box tests of the I/O of the
 * `agentnest` commands that run something (run, shell, python, exec),
 * through the built binary ($AN_TEST_BUILD/agentnest): `--stream` JSON
 * Lines (order within a stream, one final result line, base64 for bytes
 * that are not UTF-8, UTF-8 sequences never cut), the JSON error document
 * of a runtime failure (125) under --json/--stream, the `--` rule, Python
 * unbuffered by default, stdin (`exec -i`, `--stdin FILE`, FIFOs refused)
 * and terminals (`exec -t` driven through tmux(1): tty, resize, Ctrl-C,
 * TIOCSTI), and --json accepted by the commands whose output is JSON anyway.
 *
 * The driver is tests/lib/cli_fixture.h (tag "cli-io"): one state root per
 * run with the busybox and python images, a scratch directory per test. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>
#include "rm_tree.h"
#include "util.h"
#define AN_CLI_SHORT_NAMES   /* an(), out_text, root, ... (tests/lib/cli_fixture.h) */
#include "cli_fixture.h"

static void setup(void) {
  an_cli_setup("cli-io", 0700);
  an_cli_import("busybox");
  an_cli_import("python");
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats) {
  (void) stats;
  an_cli_remove_root("cli-io");
  /* a test killed by its timeout skipped its .fini: its tmux server and
   * scratch dir are still there */
  char pat[128];
  snprintf(pat, sizeof pat, "/tmp/an-cli-io-%d-*/tmux.sock", (int) getpid());
  glob_t gl;
  if (glob(pat, 0, NULL, &gl) == 0) {
    for (size_t i = 0; i < gl.gl_pathc; i++) {
      char cmd[PATH_MAX + 64];
      snprintf(cmd, sizeof cmd, "tmux -S '%s' kill-server >/dev/null 2>&1", gl.gl_pathv[i]);
      if (system(cmd) < 0) {}   /* best effort, no assertion outside a test */
      char *slash = strrchr(gl.gl_pathv[i], '/');
      *slash = 0;
      an_test_rm_tree(gl.gl_pathv[i]);
    }
    globfree(&gl);
  }
}

static char tsock[400];   /* this test's tmux server, if any */

static void tmux_stop(void) {
  if (tsock[0]) an_test_sh("tmux -S '%s' kill-server >/dev/null 2>&1", tsock);
  tsock[0] = 0;
}

static void teardown(void) {
  tmux_stop();
  an_cli_teardown();
}

TestSuite(cli_io, .init = setup, .fini = teardown, .timeout = 120);

static char *create_sandbox(const char *image) {
  cr_assert_eq(an("create --image %s </dev/null", image), 0, "%s", err_text);
  char *id = strdup(out_text);
  chomp(id);
  cr_assert_gt(strlen(id), 0);
  return id;
}

/* ---- --stream ------------------------------------------------------------------------------ */

/* The lines of a --stream output, parsed; the concatenated text of each
 * stream's chunks (base64 ones decoded). */
struct lines {
  yajl_val v[256];
  size_t n;
  char out[4096], err[4096];
  size_t nout, nerr;
  int base64_chunks;
};

static size_t b64_decode(const char *in, unsigned char *out) {
  static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n = 0;
  unsigned acc = 0;
  int bits = 0;
  for (const char *p = in; *p && *p != '='; p++) {
    const char *k = strchr(al, *p);
    cr_assert_not_null(k, "not base64: %s", in);
    acc = (acc << 6) | (unsigned) (k - al);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (unsigned char) (acc >> bits);
    }
  }
  return n;
}

static void parse_lines(const char *text, struct lines *l) {
  memset(l, 0, sizeof *l);
  char *copy = strdup(text), *save = NULL;
  cr_assert(strlen(text) > 0 && text[strlen(text) - 1] == '\n', "output does not end a line: %s", text);
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    cr_assert_lt(l->n, 256);
    yajl_val v = parse_json(line);
    cr_assert(YAJL_IS_OBJECT(v), "not an object: %s", line);
    l->v[l->n++] = v;
    const char *type = jstr(jget(v, "type", yajl_t_string));
    if (strcmp(type, "stdout") && strcmp(type, "stderr")) continue;
    bool is_err = !strcmp(type, "stderr");
    const char *data = jstr(jget(v, "data", yajl_t_string));
    char *dst = is_err ? l->err + l->nerr : l->out + l->nout;
    size_t k;
    yajl_val enc = jget(v, "encoding", yajl_t_string);
    if (enc) {
      cr_expect_str_eq(jstr(enc), "base64");
      l->base64_chunks++;
      k = b64_decode(data, (unsigned char *) dst);
    } else {
      k = strlen(data);
      memcpy(dst, data, k);
    }
    if (is_err) l->nerr += k;
    else l->nout += k;
    cr_assert_lt(l->nout + l->nerr, 4000);
  }
  free(copy);
}

static void free_lines(struct lines *l) {
  for (size_t i = 0; i < l->n; i++) yajl_tree_free(l->v[i]);
}

/* exactly one result line, and it is the last */
static yajl_val the_result(struct lines *l) {
  cr_assert_gt(l->n, 0);
  for (size_t i = 0; i + 1 < l->n; i++)
    cr_assert_str_neq(jstr(jget(l->v[i], "type", yajl_t_string)), "result", "result line %zu is not last", i);
  yajl_val r = l->v[l->n - 1];
  cr_assert_str_eq(jstr(jget(r, "type", yajl_t_string)), "result");
  return r;
}

Test(cli_io, stream_keeps_each_streams_order_and_ends_with_one_result_line) {
  cr_assert_eq(an("run --image busybox --stream -- sh -c 'for i in 1 2 3 4 5; do echo o$i; echo e$i >&2; done; exit 3'"
                  " </dev/null"), 3, "%s", err_text);
  struct lines l;
  parse_lines(out_text, &l);
  l.out[l.nout] = l.err[l.nerr] = 0;
  cr_expect_str_eq(l.out, "o1\no2\no3\no4\no5\n");
  cr_expect_str_eq(l.err, "e1\ne2\ne3\ne4\ne5\n");
  cr_expect_eq(l.base64_chunks, 0);
  yajl_val r = the_result(&l);
  /* the members of --json */
  yajl_val code = jget(r, "exit_code", yajl_t_number);
  cr_expect(code && YAJL_GET_INTEGER(code) == 3);
  cr_expect_str_eq(jstr(jget(r, "stdout", yajl_t_string)), "o1\no2\no3\no4\no5\n");
  cr_expect_not_null(jget(r, "id", yajl_t_string));
  cr_expect_not_null(jget(r, "artifacts", yajl_t_array));
  cr_expect_not_null(jget(r, "stderr_truncated", yajl_t_any));
  cr_expect_not_null(jget(r, "duration_ms", yajl_t_number));
  free_lines(&l);
  cr_expect_str_eq(err_text, "", "--stream writes nothing else: %s", err_text);
}

Test(cli_io, stream_marks_bytes_that_are_not_utf8_as_base64_and_never_cuts_a_sequence) {
  /* \xc3 and \xa9 (é) written apart: held back until complete, still text */
  cr_assert_eq(an("shell --image busybox --stream 'printf \"\\303\"; sleep 0.2; printf \"\\251\\n\"; "
                  "printf \"\\377\\376x\" >&2' </dev/null"), 0, "%s", err_text);
  struct lines l;
  parse_lines(out_text, &l);
  cr_expect_eq(l.nout, 3);
  cr_expect(!memcmp(l.out, "\xc3\xa9\n", 3), "stdout %.*s", (int) l.nout, l.out);
  cr_expect_eq(l.nerr, 3);
  cr_expect(!memcmp(l.err, "\xff\xfex", 3), "stderr bytes");
  cr_expect_eq(l.base64_chunks, 1, "only the stderr chunk is base64: %s", out_text);
  for (size_t i = 0; i + 1 < l.n; i++)
    if (!strcmp(jstr(jget(l.v[i], "type", yajl_t_string)), "stdout"))
      cr_expect_null(jget(l.v[i], "encoding", yajl_t_any), "stdout chunk %zu is text", i);
  the_result(&l);
  free_lines(&l);
}

Test(cli_io, exec_stream_and_python_stream) {
  char *id = create_sandbox("python");
  cr_assert_eq(an("exec %s --stream -- python3 -c 'print(1); import sys; print(2, file=sys.stderr)' </dev/null", id),
               0, "%s", err_text);
  struct lines l;
  parse_lines(out_text, &l);
  l.out[l.nout] = l.err[l.nerr] = 0;
  cr_expect_str_eq(l.out, "1\n");
  cr_expect_str_eq(l.err, "2\n");
  cr_expect_str_eq(jstr(jget(the_result(&l), "id", yajl_t_string)), id);
  free_lines(&l);
  cr_assert_eq(an("python --stream 'print(\"p\")' </dev/null"), 0, "%s", err_text);
  parse_lines(out_text, &l);
  l.out[l.nout] = 0;
  cr_expect_str_eq(l.out, "p\n");
  the_result(&l);
  free_lines(&l);
  cr_expect_eq(an("exec %s --json --stream -- true </dev/null", id), 125);
  cr_expect(strstr(err_text, "exclude") != NULL, "%s", err_text);
  an("destroy %s", id);
  free(id);
}

/* ---- JSON error documents ------------------------------------------------------------------ */

static void expect_error_doc(const char *text, const char *code) {
  char *copy = strdup(text);
  chomp(copy);
  cr_assert(strchr(copy, '\n') == NULL, "one line: %s", text);
  yajl_val v = parse_json(copy);
  cr_expect_str_eq(jstr(jget(v, "type", yajl_t_string)), "error");
  yajl_val st = jget(v, "status", yajl_t_number);
  cr_expect(st && YAJL_GET_INTEGER(st) == 125, "%s", text);
  const char *cp[] = {"error", "code", NULL}, *mp[] = {"error", "message", NULL};
  cr_expect_str_eq(jstr(yajl_tree_get(v, cp, yajl_t_string)), code, "%s", text);
  cr_expect(strlen(jstr(yajl_tree_get(v, mp, yajl_t_string))) > 0, "%s", text);
  yajl_tree_free(v);
  free(copy);
}

Test(cli_io, runtime_failure_prints_a_json_error_document) {
  cr_assert_eq(an("run --image no-such-image-io --json -- true </dev/null"), 125);
  expect_error_doc(out_text, "ENOENT");
  cr_expect(strstr(out_text, "no-such-image-io") != NULL, "%s", out_text);
  cr_expect(strstr(err_text, "no-such-image-io") != NULL, "stderr keeps the message: %s", err_text);
  cr_assert_eq(an("run --stream --image no-such-image-io -- true </dev/null"), 125);
  expect_error_doc(out_text, "ENOENT");
  cr_assert_eq(an("--json exec no-such-sandbox-io -- true </dev/null"), 125);
  expect_error_doc(out_text, "ENOENT");
  cr_assert_eq(an("exec no-such-sandbox-io --stream -- true </dev/null"), 125);
  expect_error_doc(out_text, "ENOENT");
  cr_assert_eq(an("shell --json --memory 0 'true' </dev/null"), 125);
  expect_error_doc(out_text, "EINVAL");
  cr_assert_eq(an("python --stream --bogus 'print(1)' </dev/null"), 125);
  expect_error_doc(out_text, "usage");
  /* without --json/--stream: nothing on stdout */
  cr_assert_eq(an("run --image no-such-image-io -- true </dev/null"), 125);
  cr_expect_str_eq(out_text, "");
}

/* ---- the -- rule ----------------------------------------------------------------------------- */

Test(cli_io, our_options_after_the_command_need_dashdash) {
  cr_assert_eq(an("run --image busybox echo hi --json </dev/null"), 125);
  cr_expect(strstr(err_text, "'--json'") && strstr(err_text, "'--'"), "%s", err_text);
  cr_expect_str_eq(out_text, "");
  cr_assert_eq(an("run --image busybox -- echo hi --json </dev/null"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "hi --json\n");
  /* options that are not ours pass */
  cr_assert_eq(an("run --image busybox ls -d / </dev/null"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "/\n");
  cr_assert_eq(an("shell --image busybox 'echo $1' --timeout=5 </dev/null"), 125);
  cr_expect(strstr(err_text, "'--timeout=5'") != NULL, "%s", err_text);
  cr_assert_eq(an("shell --image busybox -- 'echo $1' --timeout=5 </dev/null"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "--timeout=5\n");
  cr_assert_eq(an("python --image python 'print(1)' --put x </dev/null"), 125);
  cr_expect(strstr(err_text, "'--put'") != NULL, "%s", err_text);
  /* a command starting with '-' needs -- and the parser says so */
  cr_assert_eq(an("run --image busybox -x </dev/null"), 125);
  cr_expect(strstr(err_text, "'-x'") && strstr(err_text, "must follow '--'"), "%s", err_text);
  cr_assert_eq(an("run --image busybox --no-such-cmd </dev/null"), 125);
  cr_expect(strstr(err_text, "must follow '--'") != NULL, "%s", err_text);

  char *id = create_sandbox("busybox");
  cr_assert_eq(an("exec %s echo --env A=1 </dev/null", id), 125);
  cr_expect(strstr(err_text, "'--env'") != NULL, "%s", err_text);
  cr_assert_eq(an("exec %s -- echo --env A=1 </dev/null", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "--env A=1\n");
  cr_assert_eq(an("exec %s echo -n x </dev/null", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "x");
  /* --detach with --timeout: refused, not accepted and ignored (new-user nu9) */
  cr_assert_eq(an("exec -d --timeout 1 %s -- sleep 3 </dev/null", id), 125);
  cr_expect(strstr(err_text, "--detach takes no --timeout"), "%s", err_text);
  cr_expect_str_eq(out_text, "");
  /* an absolute command path that does not exist says so */
  cr_assert_eq(an("exec %s -- /no/such/dir/cmd </dev/null", id), 127);
  cr_expect(strstr(err_text, "exec \"/no/such/dir/cmd\": no such file: ENOENT"), "%s", err_text);
  an("destroy %s", id);
  free(id);
}

/* ---- Python unbuffered ------------------------------------------------------------------------ */

Test(cli_io, python_output_is_unbuffered_unless_the_caller_says_otherwise) {
  const char *code = "'import os; print(os.environ.get(\"PYTHONUNBUFFERED\"))'";
  cr_assert_eq(an("python %s </dev/null", code), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "1\n");
  cr_assert_eq(an("python --env PYTHONUNBUFFERED= %s </dev/null", code), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "\n");
  char *id = create_sandbox("python");
  cr_assert_eq(an("exec %s -- python3 -c %s </dev/null", id, code), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "1\n");
  cr_assert_eq(an("exec %s --env PYTHONUNBUFFERED=0 -- python3 -c %s </dev/null", id, code), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "0\n");
  /* exec --detach too: `proc logs --follow` of a Python server shows its prints as they come */
  cr_assert_eq(an("exec %s --detach -- python3 -c %s </dev/null", id, code), 0, "%s", err_text);
  char h[64];
  snprintf(h, sizeof h, "%s", out_text);
  chomp(h);
  cr_assert_eq(an("proc wait %s %s </dev/null", id, h), 0, "%s", err_text);
  cr_assert_eq(an("proc logs %s %s </dev/null", id, h), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "1\n", "exec --detach: PYTHONUNBUFFERED=1 as in every other mode");
  an("destroy %s", id);
  free(id);
  /* unbuffered: a print before a crash reaches the caller in order */
  cr_assert_eq(an("python 'import os; print(\"before\"); os._exit(4)' </dev/null"), 4, "%s", err_text);
  cr_expect_str_eq(out_text, "before\n");
}

/* ---- stdin ----------------------------------------------------------------------------------- */

static void write_work_file(const char *name, const char *text) {
  char p[400];
  snprintf(p, sizeof p, "%s/%s", work, name);
  an_test_write_file(p, text, strlen(text), 0644);
}

Test(cli_io, exec_i_passes_stdin_and_its_eof_through_a_pipe) {
  char *id = create_sandbox("busybox");
  write_work_file("in.txt", "hello\nworld\n");
  /* cat ends only when EOF arrives: without it, the timeout (124) */
  cr_assert_eq(an("exec %s -i --timeout 60 -- sh -c 'cat; echo done; readlink /proc/self/fd/0' <in.txt", id), 0,
               "%s", err_text);
  cr_expect(!strncmp(out_text, "hello\nworld\ndone\npipe:[", 23), "the host file is never the command's: %s", out_text);
  /* more than a pipe buffer, every byte */
  char big[400];
  snprintf(big, sizeof big, "%s/big", work);
  size_t n = 1048577;
  char *zeros = calloc(1, n);
  cr_assert_not_null(zeros);
  an_test_write_file(big, zeros, n, 0644);
  free(zeros);
  cr_assert_eq(an("exec %s -i --timeout 60 -- wc -c <big", id), 0, "%s", err_text);
  cr_expect_eq(atol(out_text), 1048577, "%s", out_text);
  /* default: /dev/null */
  cr_assert_eq(an("exec %s --timeout 60 -- cat <in.txt", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "");
  /* `shell ID` with stdin not a terminal: a shell reading commands from it */
  write_work_file("script.sh", "echo from-stdin; pwd\n");
  cr_assert_eq(an("shell %s <script.sh", id), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "from-stdin\n/workspace\n");
  an("destroy %s </dev/null", id);
  free(id);
}

Test(cli_io, stdin_file_is_read_and_a_fifo_is_refused) {
  char *id = create_sandbox("busybox");
  write_work_file("in.txt", "a\nb\nc\n");
  cr_assert_eq(an("exec %s --stdin in.txt -- wc -l </dev/null", id), 0, "%s", err_text);
  cr_expect_eq(atoi(out_text), 3, "%s", out_text);
  cr_expect_eq(an("exec %s -i --stdin in.txt -- true </dev/null", id), 125);
  cr_expect(strstr(err_text, "exclude") != NULL, "%s", err_text);
  char fifo[400];
  snprintf(fifo, sizeof fifo, "%s/fifo", work);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  /* refused at once (opening a FIFO with no writer would block) */
  cr_expect_eq(an("exec %s --stdin fifo -- cat </dev/null", id), 125);
  cr_expect(strstr(err_text, "fifo") && strstr(err_text, "not a regular file (FIFO)"), "%s", err_text);
  cr_expect_eq(an("exec %s --stdin /dev/zero -- cat </dev/null", id), 125);
  cr_expect(strstr(err_text, "character device") != NULL, "%s", err_text);
  cr_expect_eq(an("exec %s --stdin no-such-file -- cat </dev/null", id), 125);
  cr_expect(strstr(err_text, "no-such-file") && strstr(err_text, "ENOENT"), "%s", err_text);
  /* one-shots: refused before a sandbox is made */
  cr_expect_eq(an("shell --image busybox --stdin fifo 'cat' </dev/null"), 125);
  cr_expect(strstr(err_text, "not a regular file (FIFO)") != NULL, "%s", err_text);
  an("destroy %s </dev/null", id);
  free(id);
}

Test(cli_io, one_shots_take_stdin_with_i_or_stdin_file) {
  write_work_file("in.txt", "one-shot input\n");
  cr_assert_eq(an("run --image busybox -i -- sh -c 'cat; echo eof' <in.txt"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "one-shot input\neof\n");
  cr_assert_eq(an("python --stdin in.txt 'import sys; print(sys.stdin.read().upper(), end=\"\")' </dev/null"), 0,
               "%s", err_text);
  cr_expect_str_eq(out_text, "ONE-SHOT INPUT\n");
  cr_assert_eq(an("shell --image busybox 'cat' <in.txt"), 0, "%s", err_text);
  cr_expect_str_eq(out_text, "", "default stdin is /dev/null");
}

/* ---- output escape sequences ----------------------------------------------------------------- */

Test(cli_io, json_and_stream_escape_terminal_sequences) {
  cr_assert_eq(an("run --image busybox --json -- printf '\\033]0;title\\007\\033[2J' </dev/null"), 0, "%s", err_text);
  cr_expect(strchr(out_text, '\033') == NULL && strchr(out_text, '\007') == NULL, "raw control bytes: %s", out_text);
  cr_expect(strstr(out_text, "\\u001B]0;title\\u0007\\u001B[2J") != NULL, "%s", out_text);
  cr_assert_eq(an("run --image busybox --stream -- printf '\\033[2J' </dev/null"), 0, "%s", err_text);
  cr_expect(strchr(out_text, '\033') == NULL, "raw ESC: %s", out_text);
}

/* ---- terminals, through a real one: tmux(1) ------------------------------------------------- */

/* A detached tmux server of this test's own (socket in the scratch dir)
 * whose one pane, cols x rows, runs an interactive sh in the scratch dir. */
static void tmux_start(int cols, int rows) {
  if (an_test_sh("command -v tmux >/dev/null 2>&1") != 0) cr_skip_test("tmux not installed (make deps)");
  snprintf(tsock, sizeof tsock, "%s/tmux.sock", work);
  cr_assert_eq(an_test_sh("cd '%s' && tmux -S '%s' -f /dev/null new-session -d -x %d -y %d 'ENV= PS1=\"$ \" sh'",
                          work, tsock, cols, rows), 0);
}

/* tmux send-keys ARGS (key names: Enter, C-c; -l for literal text) */
static void tmux_keys(const char *keys) {
  cr_assert_eq(an_test_sh("tmux -S '%s' send-keys %s", tsock, keys), 0, "send-keys %s", keys);
}

/* Type `sh FILE` into the pane, FILE holding `script` (so no quoting
 * through tmux), with the CLI's path and root as $AN and $R. */
static void tmux_run_script(const char *name, const char *script) {
  char text[8192];
  snprintf(text, sizeof text, "AN='%s'; R='%s'\n%s\n", an_bin, root, script);
  write_work_file(name, text);
  char keys[600];
  snprintf(keys, sizeof keys, "-l 'sh %s'", name);
  tmux_keys(keys);
  tmux_keys("Enter");
}

/* The content of scratch file `name` once it contains `needle`, waiting
 * for it (bounded: 60 s in 20 ms steps); NULL if it never did. */
static char *wait_for(const char *name, const char *needle) {
  char p[400];
  snprintf(p, sizeof p, "%s/%s", work, name);
  for (int i = 0; i < 3000; i++) {
    char *t = an_test_read_file(p, NULL);
    if (t && strstr(t, needle)) return t;
    free(t);
    usleep(20000);
  }
  return NULL;
}

static int wait_status(const char *name) {
  char *t = wait_for(name, "\n");
  cr_assert_not_null(t, "%s never written", name);
  int st = atoi(t);
  free(t);
  return st;
}

/* The pane's terminal is cooked again: ask the pane's own shell. */
static void expect_terminal_restored(const char *tag) {
  char keys[300];
  snprintf(keys, sizeof keys, "-l 'stty -a > stty-%s.txt; echo done > stty-%s.done'", tag, tag);
  tmux_keys(keys);
  tmux_keys("Enter");
  char done[64];
  snprintf(done, sizeof done, "stty-%s.done", tag);
  free(wait_for(done, "done"));
  char f[64];
  snprintf(f, sizeof f, "stty-%s.txt", tag);
  char *t = wait_for(f, "icanon");
  cr_assert_not_null(t, "stty -a after %s", tag);
  cr_expect(!strstr(t, "-icanon") && !strstr(t, "-isig") && !strstr(t, "-opost") && strstr(t, " echo "),
            "terminal left raw after %s: %s", tag, t);
  free(t);
}

Test(cli_io, tty_is_the_sandboxs_own_pty_and_follows_a_resize) {
  char *id = create_sandbox("busybox");
  tmux_start(100, 30);
  char script[2048];
  snprintf(script, sizeof script,
           "\"$AN\" --root \"$R\" exec -i -t %s -- sh -c 'tty; ls -1 /dev/pts; stty size; "
           "while read x; do stty size; [ \"$x\" = q ] && break; done' >out 2>err; echo $? >status", id);
  tmux_run_script("t1.sh", script);
  char *o = wait_for("out", "30 100");
  cr_assert_not_null(o, "no size printed");
  cr_expect(strstr(o, "/dev/pts/0\r\n0\r\nptmx\r\n30 100\r\n") != NULL, "%s", o);
  free(o);
  /* a resize of the caller's terminal reaches the sandbox's pty */
  cr_assert_eq(an_test_sh("tmux -S '%s' resize-window -x 120 -y 40", tsock), 0);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; i++) {
    tmux_keys("Enter");
    usleep(50000);
    char p[400];
    snprintf(p, sizeof p, "%s/out", work);
    char *t = an_test_read_file(p, NULL);
    seen = t && strstr(t, "40 120\r\n");
    free(t);
  }
  cr_expect(seen, "stty size never showed 40 120");
  tmux_keys("q Enter");
  cr_expect_eq(wait_status("status"), 0);
  expect_terminal_restored("resize");
  tmux_stop();
  an("destroy %s </dev/null", id);
  free(id);
}

/* -t without -i (and -t with --stdin FILE): the caller's input is not the
 * pty's, but the pty still has the caller's terminal size, as with docker
 * exec -t (it was 0x0: `stty size` said "0 0"). */
Test(cli_io, tty_without_i_has_the_callers_terminal_size) {
  char *id = create_sandbox("busybox");
  tmux_start(90, 25);
  char script[2048];
  snprintf(script, sizeof script,
           "\"$AN\" --root \"$R\" exec -t %s -- stty size >out 2>err; echo input > in.txt; "
           "\"$AN\" --root \"$R\" exec -t --stdin in.txt %s -- sh -c 'stty size; read x; echo got-$x' >out2 2>err2; "
           "echo $? >status", id, id);
  tmux_run_script("t5.sh", script);
  cr_expect_eq(wait_status("status"), 0);
  char p[400];
  snprintf(p, sizeof p, "%s/out", work);
  char *o = an_test_read_file(p, NULL);
  cr_expect(o && strstr(o, "25 90"), "exec -t: stty size said %s", o ? o : "(nothing)");
  free(o);
  snprintf(p, sizeof p, "%s/out2", work);
  o = an_test_read_file(p, NULL);
  cr_expect(o && strstr(o, "25 90") && strstr(o, "got-input"), "exec -t --stdin: %s", o ? o : "(nothing)");
  free(o);
  tmux_stop();
  an("destroy %s </dev/null", id);
  free(id);
}

Test(cli_io, ctrl_c_reaches_the_sandboxed_foreground_process_not_the_cli) {
  char *id = create_sandbox("busybox");
  tmux_start(80, 24);
  char script[2048];
  /* a trap inside proves the signal arrived there, and the CLI went on */
  snprintf(script, sizeof script,
           "\"$AN\" --root \"$R\" exec -i -t %s -- sh -c 'trap \"echo caught-int; exit 7\" INT; echo ready; "
           "while :; do sleep 1; done' >out 2>err; echo $? >status", id);
  tmux_run_script("t2.sh", script);
  free(wait_for("out", "ready"));
  tmux_keys("C-c");
  cr_expect_eq(wait_status("status"), 7);
  char *o = wait_for("out", "caught-int");
  cr_expect_not_null(o, "the trap did not run");
  free(o);
  expect_terminal_restored("trap");
  /* sleep as the foreground process: killed by SIGINT, the CLI reports 130 */
  snprintf(script, sizeof script,
           "\"$AN\" --root \"$R\" exec -i -t %s -- sh -c 'echo ready; exec sleep 1000' >out2 2>err2; echo $? >status2",
           id);
  tmux_run_script("t3.sh", script);
  free(wait_for("out2", "ready"));
  tmux_keys("C-c");
  cr_expect_eq(wait_status("status2"), 130);
  char p[400];
  snprintf(p, sizeof p, "%s/err2", work);
  char *e = an_test_read_file(p, NULL);
  cr_expect(e && !strstr(e, "was ended"), "the CLI was signalled instead: %s", e ? e : "");
  free(e);
  expect_terminal_restored("sleep");
  /* the sandbox lives on, nothing of the command is left in it */
  cr_expect_eq(an("exec %s -- sh -c 'ps | grep -c \"[s]leep 1000\"' </dev/null", id), 1, "%s", out_text);
  tmux_stop();
  an("destroy %s </dev/null", id);
  free(id);
}

Test(cli_io, tiocsti_from_inside_never_reaches_the_callers_terminal) {
  char *id = create_sandbox("python");
  tmux_start(80, 24);
  char script[4096];
  /* -t: the sandbox's own pty; -i alone: a pipe.  Either way the injected
   * line would run in the pane's shell after the CLI ends if it reached
   * the caller's terminal. */
  snprintf(script, sizeof script,
           "\"$AN\" --root \"$R\" exec -i -t %s -- python3 -c 'import fcntl, termios\n"
           "try:\n  [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) for c in b\"touch %s/pwned-t\\n\"]; print(\"sti-done\")\n"
           "except OSError as e: print(\"sti-refused\", e.errno)' >out 2>err; echo $? >status\n"
           "\"$AN\" --root \"$R\" exec -i %s -- python3 -c 'import fcntl, termios\n"
           "try:\n  [fcntl.ioctl(0, termios.TIOCSTI, bytes([c])) for c in b\"touch %s/pwned-i\\n\"]; print(\"sti-done\")\n"
           "except OSError as e: print(\"sti-refused\", e.errno)' >out2 2>err2; echo $? >status2",
           id, work, id, work);
  tmux_run_script("t4.sh", script);
  cr_expect_eq(wait_status("status"), 0);
  cr_expect_eq(wait_status("status2"), 0);
  char *o2 = wait_for("out2", "sti-");
  cr_expect(o2 && strstr(o2, "sti-refused"), "TIOCSTI on a pipe: %s", o2 ? o2 : "");
  free(o2);
  /* whatever was pushed into the pane's terminal comes before this line */
  tmux_keys("-l 'echo marker > marker'");
  tmux_keys("Enter");
  free(wait_for("marker", "marker"));
  char p[400];
  snprintf(p, sizeof p, "%s/pwned-t", work);
  cr_expect(access(p, F_OK) != 0, "TIOCSTI under -t reached the caller's terminal");
  snprintf(p, sizeof p, "%s/pwned-i", work);
  cr_expect(access(p, F_OK) != 0, "TIOCSTI under -i reached the caller's terminal");
  tmux_stop();
  an("destroy %s </dev/null", id);
  free(id);
}

Test(cli_io, shell_id_on_a_terminal_is_a_login_shell_on_a_pty) {
  char *id = create_sandbox("busybox");
  tmux_start(90, 20);
  char script[1024];
  snprintf(script, sizeof script, "\"$AN\" --root \"$R\" shell %s >out 2>err; echo $? >status", id);
  tmux_run_script("t5.sh", script);
  /* typed ahead: the pty's input queue keeps it until the shell reads it */
  tmux_keys("-l 'tty; echo login=$0; exit 3'");
  tmux_keys("Enter");
  cr_expect_eq(wait_status("status"), 3);
  char *o = wait_for("out", "login=");
  cr_assert_not_null(o);
  cr_expect(strstr(o, "/dev/pts/0\r\n") != NULL, "%s", o);
  cr_expect(strstr(o, "login=-sh") || strstr(o, "login=sh"), "%s", o);
  free(o);
  expect_terminal_restored("shell");
  /* the sandbox lives on */
  cr_expect_eq(an("exec %s -- true </dev/null", id), 0, "%s", err_text);
  tmux_stop();
  an("destroy %s </dev/null", id);
  free(id);
}

/* A script passing --json to every command got "unknown option '--json'" from the ones whose
 * output is JSON anyway (inspect, events, prune, audit config); they accept it now, and their
 * --help says so. */
Test(cli_io, json_is_accepted_where_the_output_is_json_already) {
  char *id = create_sandbox("busybox");
  cr_assert_eq(an("inspect %s --json", id), 0, "%s", err_text);
  yajl_val v = an_cli_json(out_text);
  cr_expect(YAJL_IS_OBJECT(v), "inspect --json: %s", out_text);
  yajl_tree_free(v);
  cr_assert_eq(an("events --json %s", id), 0, "%s", err_text);
  char *nl = strchr(out_text, '\n');
  if (nl) *nl = 0;
  v = an_cli_json(out_text);
  cr_expect(YAJL_IS_OBJECT(v), "events --json: %s", out_text);
  yajl_tree_free(v);
  cr_assert_eq(an("audit config --json"), 0, "%s", err_text);
  v = an_cli_json(out_text);
  cr_expect(YAJL_IS_OBJECT(v), "audit config --json: %s", out_text);
  yajl_tree_free(v);
  static const char *const helps[] = {"inspect", "events", "prune"};
  for (size_t i = 0; i < 3; i++) {
    cr_assert_eq(an("%s --help", helps[i]), 0);
    cr_expect(strstr(out_text, "--json"), "%s --help: %s", helps[i], out_text);
  }
  cr_expect_eq(an("destroy --wait %s", id), 0, "%s", err_text);
  free(id);
}
