/* cli/oci/log.c — runc-style logging (--log, --log-format text|json,
 * --debug) and failure reporting.  Log lines follow logrus, which runc uses:
 *   text: time="2024-01-02T03:04:05Z" level=error msg="container does not exist"
 *   json: {"level":"error","msg":"container does not exist","time":"2024-01-02T03:04:05Z"}
 * Container managers (containerd, cri-o) parse the JSON form from --log. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/oci/oci.h"
#include "util/cleanup.h"

static void rfc3339_now(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void write_line(FILE *out, enum oci_log_format fmt, const char *level, const char *msg) {
  char now[32];
  rfc3339_now(now, sizeof now);
  if (fmt == OCI_LOG_JSON) {
    cleanup_jgen struct an_jgen j;
    oci_json_init(&j, false);   /* a failure is reported below */
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "level", level);
    an_jgen_kv_str(&j, "msg", msg);
    an_jgen_kv_str(&j, "time", now);
    an_jgen_map_close(&j);
    cleanup_free char *line = NULL;
    int r = an_jgen_finish(&j, &line, NULL);
    if (r == 0) {
      fprintf(out, "%s\n", line);
      return;
    }
    /* the record must not be lost: say why on stderr, then write it as text */
    fprintf(stderr, "%s: log record as JSON: %s\n", OCI_PROG, an_errno_name(-r));
  }
  fprintf(out, "time=\"%s\" level=%s msg=\"", now, level);
  for (const char *p = msg; *p; p++) {
    if (*p == '"' || *p == '\\') fputc('\\', out);
    if (*p == '\n') { fputs("\\n", out); continue; }
    fputc(*p, out);
  }
  fputs("\"\n", out);
}

static void vlog(struct oci_ctx *ctx, const char *level, const char *fmt, va_list ap) {
  if (strcmp(level, "debug") == 0 && !ctx->debug) return;
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) return;
  write_line(ctx->log ? ctx->log : stderr, ctx->log_format, level, msg);
  free(msg);
}

void oci_log(struct oci_ctx *ctx, const char *level, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(ctx, level, fmt, ap);
  va_end(ap);
}

static int vfail(struct oci_ctx *ctx, const char *fmt, va_list ap) {
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) return 1;
  if (ctx->log) {
    /* runc's fatal(): the log gets the record, the user still sees the cause. */
    write_line(ctx->log, ctx->log_format, "error", msg);
    fprintf(stderr, "%s: %s\n", OCI_PROG, msg);
  } else if (ctx->log_format == OCI_LOG_JSON) {
    write_line(stderr, OCI_LOG_JSON, "error", msg);
  } else {
    fprintf(stderr, "%s: %s\n", OCI_PROG, msg);
  }
  free(msg);
  return 1;
}

int oci_fail(struct oci_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int r = vfail(ctx, fmt, ap);
  va_end(ap);
  return r;
}

int oci_fail_error(struct oci_ctx *ctx, an_error_t *err) {
  int r = oci_fail(ctx, "%s", err && *err ? (*err)->msg : "unknown error");
  an_error_free(err);
  return r;
}

int oci_usage_error(struct oci_ctx *ctx, const struct oci_command *cmd, const char *fmt, ...) {
  char *why = NULL;
  va_list ap;
  va_start(ap, fmt);
  if (vasprintf(&why, fmt, ap) < 0) why = NULL;
  va_end(ap);
  fprintf(stderr, "Incorrect Usage: %s\n\n", why ? why : "");
  oci_print_command_help(cmd, stderr);
  oci_fail(ctx, "%s", why ? why : "incorrect usage");
  free(why);
  return 1;
}
