/* cli/agentnest/stream.c — the `--stream` JSON Lines writer and the JSON
 * error document of `--json`/`--stream` (see stream.h for the lines and
 * their members).  JSON through util/json_gen (yajl), base64 through
 * libcrypto's EVP_EncodeBlock, UTF-8 validity through an_utf8_sanitize
 * (output.h: RFC 3629, no surrogates or overlong forms). */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "stream.h"
#include "util/cleanup.h"
#include "util/json_gen.h"

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, buf, len);
    if (w < 0) {
      if (errno == EINTR) continue;
      return; /* a closed stdout: drop the rest */
    }
    buf += w;
    len -= (size_t) w;
  }
}

/* Finish `j` and write it as one line to fd 1.  Returns 0 or -errno. */
int cli_stream_line(struct an_jgen *j) {
  char *doc = NULL;
  size_t len = 0;
  int r = an_jgen_finish(j, &doc, &len);
  if (r < 0) return r;
  char *line = realloc(doc, len + 2);
  if (!line) {
    free(doc);
    return -ENOMEM;
  }
  line[len++] = '\n';
  line[len] = '\0';
  write_all(1, line, len);
  free(line);
  return 0;
}

/* Number of bytes at the end of buf[0..len) that start a UTF-8 sequence
 * not complete yet (0 to 3): a lead byte 110xxxxx, 1110xxxx or 11110xxx
 * followed by fewer continuation bytes than it announces. */
static size_t incomplete_tail(const unsigned char *buf, size_t len) {
  size_t back = 0;
  while (back < 3 && back < len && (buf[len - 1 - back] & 0xC0) == 0x80) back++;
  if (back == len) return 0;
  unsigned char lead = buf[len - 1 - back];
  size_t need = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 && lead <= 0xEF ? 3
              : lead >= 0xC2 && lead <= 0xDF ? 2 : 1;
  return back + 1 < need ? back + 1 : 0;
}

static bool valid_utf8(const char *buf, size_t len) {
  size_t n = 0;
  cleanup_free char *clean = an_utf8_sanitize(buf, len, &n);
  return clean && n == len && !memcmp(clean, buf, len);
}

/* One chunk line: text when valid UTF-8, else base64. */
static void emit_chunk(enum an_stream stream, const char *buf, size_t len) {
  if (!len) return;
  cleanup_jgen struct an_jgen j = {0};
  if (an_jgen_init(&j, false) < 0) return;
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "type", stream == AN_STREAM_STDERR ? "stderr" : "stdout");
  an_jgen_key(&j, "data");
  if (valid_utf8(buf, len)) {
    an_jgen_check(&j, yajl_gen_string(j.g, (const unsigned char *) buf, len));
  } else {
    if (len > (size_t) INT32_MAX / 2) return;
    cleanup_free unsigned char *b64 = malloc(4 * ((len + 2) / 3) + 1);
    if (!b64) return;
    int n = EVP_EncodeBlock(b64, (const unsigned char *) buf, (int) len);
    an_jgen_check(&j, yajl_gen_string(j.g, b64, (size_t) n));
    an_jgen_kv_str(&j, "encoding", "base64");
  }
  an_jgen_map_close(&j);
  cli_stream_line(&j);
}

void cli_stream_data(void *data, enum an_stream stream, const char *buf, size_t len) {
  struct cli_stream *s = data;
  int i = stream == AN_STREAM_STDERR;
  cleanup_free unsigned char *all = malloc(len + sizeof s->held[i]);
  if (!all) return;
  memcpy(all, s->held[i], s->nheld[i]);
  memcpy(all + s->nheld[i], buf, len);
  size_t n = s->nheld[i] + len;
  size_t tail = incomplete_tail(all, n);
  emit_chunk(stream, (const char *) all, n - tail);
  memcpy(s->held[i], all + n - tail, tail);
  s->nheld[i] = tail;
}

void cli_stream_flush(struct cli_stream *s) {
  for (int i = 0; s && i < 2; i++) {
    emit_chunk(i ? AN_STREAM_STDERR : AN_STREAM_STDOUT, (const char *) s->held[i], s->nheld[i]);
    s->nheld[i] = 0;
  }
}

int cli_stream_result(const char *cmd, struct cli_stream *s, const char *id,
                      const struct an_exec_result *res, const struct an_artifact_list *arts) {
  cli_stream_flush(s);
  cleanup_jgen struct an_jgen j = {0};
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "type", "result");
  an_jgen_kv_str(&j, "id", id);
  if (j.g && j.st == yajl_gen_status_ok) an_jgen_check(&j, an_exec_result_json_fields(j.g, res, arts));
  an_jgen_map_close(&j);
  int r = cli_stream_line(&j);
  if (r < 0) {
    fprintf(stderr, "agentnest %s: result line: JSON: %s\n", cmd, an_errno_name(-r));
    return AN_EXIT_RUNTIME;
  }
  return 0;
}

/* ---- error documents ------------------------------------------------------------------- */

/* one command per process: whether to print, and whether one was printed */
static bool g_error_json, g_error_printed;

void cli_error_json_set(bool on) { g_error_json = on; }

void cli_error_json_print(const char *code, const char *message) {
  if (!g_error_json || g_error_printed) return;
  g_error_printed = true;
  cleanup_jgen struct an_jgen j = {0};
  if (an_jgen_init(&j, false) < 0) return;
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "type", "error");
  an_jgen_kv_i64(&j, "status", AN_EXIT_RUNTIME);
  an_jgen_key(&j, "error");
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "code", code);
  an_jgen_key(&j, "message");
  const char *m = message ? message : "unknown error";
  if (j.g) an_jgen_check(&j, an_json_escape_output(j.g, m, strlen(m)));
  an_jgen_map_close(&j);
  an_jgen_map_close(&j);
  fflush(stdout);
  cli_stream_line(&j);
}

/* ---- Python output --------------------------------------------------------------------- */

static bool has_key(char *const *env, const char *key) {
  size_t kl = strlen(key);
  for (size_t i = 0; env && env[i]; i++)
    if (!strncmp(env[i], key, kl) && env[i][kl] == '=') return true;
  return false;
}

int cli_env_python_unbuffered(const char *cmd, char ***env, size_t *n, char *const *sandbox_env) {
  if (has_key(*env, "PYTHONUNBUFFERED") || has_key(sandbox_env, "PYTHONUNBUFFERED")) return 0;
  return cli_env_add(cmd, env, n, "PYTHONUNBUFFERED=1");
}

void cli_note_truncated(const char *cmd, const struct an_exec_result *res) {
  const struct an_output *o = &res->output;
  if (!o->stdout_truncated && !o->stderr_truncated) return;
  fflush(stdout);
  fprintf(stderr,
          "agentnest %s: output over --max-output, the rest dropped: stdout %zu of %llu bytes shown, "
          "stderr %zu of %llu\n",
          cmd, o->stdout_len, (unsigned long long) o->stdout_read, o->stderr_len,
          (unsigned long long) o->stderr_read);
}
