/* sandbox/batch_exec.c — one batch job in its own process (forked by
 * batch.c): a job with no files runs as a one-shot (an_sandbox_run_once);
 * one with "file", "put" or "get" gets a sandbox owned by this process (no
 * monitor, as a one-shot: if this process dies, prune sees its creator
 * gone), files put in, the command exec'd, artifacts listed (and copied to
 * OUTPUT_DIR/ID/artifacts/), the sandbox destroyed.  The record (batch.h
 * "RESULTS") is written with the exec result writer `run --json` uses
 * (an_exec_result_json_fields). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "util/utc.h"
#include "agentnest/pool.h"
#include "sandbox/batch_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/fdcopy.h"
#include "util/json_gen.h"
#include "util/units.h"

void an_batch_now_rfc3339(char buf[32]) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char s[24];
  an_utc_format(ts.tv_sec, s, sizeof s);
  snprintf(buf, 32, "%.19s.%03dZ", s, (int) (ts.tv_nsec / 1000000) % 1000);
}

enum an_batch_result an_batch_classify(const struct an_exec_result *res) {
  if (res->oom_killed) return AN_BATCH_OOM;
  if (res->timed_out) return AN_BATCH_TIMED_OUT;
  return res->status == 0 ? AN_BATCH_PASSED : AN_BATCH_FAILED;
}

char *an_batch_reason(const struct an_exec_result *res, const struct an_sandbox_opts *opts) {
  char *s = NULL, size[32];
  int n = 0;
  switch (an_batch_classify(res)) {
  case AN_BATCH_PASSED: return NULL;
  case AN_BATCH_OOM:
    n = asprintf(&s, "killed by the OOM killer (memory limit %s)",
                 an_format_size(an_sandbox_opts_memory(opts), size, sizeof size));
    break;
  case AN_BATCH_TIMED_OUT: n = asprintf(&s, "timed out after %llu ms", (unsigned long long) res->duration_ms); break;
  default:
    if (res->signal) n = asprintf(&s, "killed by signal %d (%s)", res->signal, strsignal(res->signal));
    else if (res->status == AN_EXEC_STATUS_NOT_FOUND) n = asprintf(&s, "exit code 127 (command not found)");
    else if (res->status == AN_EXEC_STATUS_NOT_EXECUTABLE) n = asprintf(&s, "exit code 126 (not executable)");
    else n = asprintf(&s, "exit code %d", res->exit_code);
  }
  return n < 0 ? NULL : s;
}

struct record {
  const char *id;
  uint64_t line;
  unsigned attempt;
  const char *sandbox;
  enum an_batch_result result;
  const char *reason, *error;
  const char *started, *ended;
  const struct an_exec_result *res;
  const struct an_artifact_list *arts;
  int pooled;   /* -1: no pool named; else 0/1 */
};

static int record_line(const struct record *r, char **line, size_t *len) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return -ENOMEM;
  struct an_jgen *g = &j;
  an_jgen_map_open(g);
  an_jgen_kv_str(g, "id", r->id);
  an_jgen_kv_u64(g, "line", r->line);
  an_jgen_kv_u64(g, "attempt", r->attempt);
  an_jgen_kv_str(g, "sandbox", r->sandbox);
  an_jgen_kv_str(g, "result", an_batch_result_name(r->result));
  an_jgen_key(g, "reason");
  if (r->reason && g->g) an_jgen_check(g, an_json_escape_output(g->g, r->reason, strlen(r->reason)));
  else an_jgen_null(g);
  an_jgen_kv_str(g, "started", r->started);
  an_jgen_kv_str(g, "ended", r->ended);
  if (g->g && g->st == yajl_gen_status_ok) an_jgen_check(g, an_exec_result_json_fields(g->g, r->res, r->arts));
  an_jgen_key(g, "error");
  if (r->error && g->g) an_jgen_check(g, an_json_escape_output(g->g, r->error, strlen(r->error)));
  else an_jgen_null(g);
  if (r->pooled >= 0) an_jgen_kv_bool(g, "pooled", r->pooled);
  an_jgen_map_close(g);
  char *doc = NULL;
  size_t n = 0;
  int rc = an_jgen_finish(g, &doc, &n);
  if (rc < 0) return rc;
  char *l = realloc(doc, n + 2);
  if (!l) {
    free(doc);
    return -ENOMEM;
  }
  l[n++] = '\n';
  l[n] = 0;
  *line = l;
  *len = n;
  return 0;
}

/* An exec result for a job that did not run: no exit code, status 125. */
static void not_run(struct an_exec_result *res) {
  memset(res, 0, sizeof *res);
  res->exit_code = -1;
  res->status = 125;
  res->output.stdout_buf = (char *) "";
  res->output.stderr_buf = (char *) "";
}

int an_batch_error_record(const char *id, uint64_t lineno, unsigned attempt, const char *reason,
                          char **line, size_t *len) {
  char now[32];
  an_batch_now_rfc3339(now);
  struct an_exec_result res;
  not_run(&res);
  struct record rec = {.id = id, .line = lineno, .attempt = attempt, .result = AN_BATCH_ERROR,
                       .reason = reason, .error = reason, .started = now, .ended = now, .res = &res,
                       .pooled = -1};
  return record_line(&rec, line, len);
}

/* Split "A[:B]" as run --put does: B follows the last ':' unless A names an
 * existing host path as a whole.  *first heap. */
static int split_put(const char *spec, char **first, const char **second) {
  struct stat st;
  const char *colon = strrchr(spec, ':');
  if (!colon || lstat(spec, &st) == 0) {
    *second = NULL;
    return (*first = strdup(spec)) ? 0 : -ENOMEM;
  }
  *second = colon[1] ? colon + 1 : NULL;
  return (*first = strndup(spec, (size_t) (colon - spec))) ? 0 : -ENOMEM;
}

/* A ready sandbox of the batch's pool when the job's options are exactly
 * the pool's (their JSON documents equal; no secrets), owned by this job
 * process; NULL otherwise or when the pool is empty. */
static struct an_sandbox *pooled_sandbox(const struct an_batch_exec_cfg *x, const struct an_batch_job *job) {
  if (!x->pool || an_sandbox_opts_secret_values(job->opts)[0]) return NULL;
  struct an_sandbox_opts *po = NULL;
  cleanup_free char *pj = NULL, *jj = NULL;
  an_error_t e = NULL;
  struct an_sandbox *sb = NULL;
  if (an_pool_options(x->store_root, x->pool, &po, &pj, &e) == 0 &&
      an_sandbox_opts_to_json(job->opts, &jj, &e) == 0 && !strcmp(pj, jj))
    an_pool_claim(x->store_root, x->pool, true, &sb, &e);
  an_error_free(&e);
  an_sandbox_opts_free(po);
  return sb;
}

static int with_files(const struct an_batch_exec_cfg *x, const struct an_batch_job *job,
                      struct an_sandbox *pooled, const struct an_exec_opts *eo,
                      struct an_exec_result *res, struct an_artifact_list *arts, char **sbid,
                      an_error_t *err) {
  struct an_sandbox *sb = pooled;
  int r = sb ? 0 : an_sb_create(x->store_root, job->opts, false, NULL, NULL, &sb, err);
  if (r < 0) return r;
  if (!(*sbid = strdup(an_sandbox_id(sb)))) r = an_error_set(err, ENOMEM, "job %s", job->id);
  if (r >= 0 && job->file) {
    const char *base = strrchr(job->file, '/');
    if ((r = an_sandbox_put(sb, job->file, base ? base + 1 : job->file, err)) < 0)
      an_error_prefix(err, "file %s", job->file);
  }
  for (char **p = job->puts; r >= 0 && p && *p; p++) {
    cleanup_free char *local = NULL;
    const char *dest = NULL;
    if (split_put(*p, &local, &dest) < 0) r = an_error_set(err, ENOMEM, "put");
    else if ((r = an_sandbox_put(sb, local, dest, err)) < 0) an_error_prefix(err, "put %s", *p);
  }
  if (r >= 0) r = an_sandbox_exec(sb, job->argv, eo, res, err);
  if (r >= 0 && job->gets) {
    size_t n = 0;
    while (job->gets[n]) n++;
    cleanup_free char *to = NULL;
    if (x->output_dir && asprintf(&to, "%s/%s/artifacts", x->output_dir, job->id) < 0) to = NULL;
    struct an_artifact_opts ao = {.to_dir = to, .skip_symlinks = true};
    if ((r = an_sandbox_artifacts(sb, (const char *const *) job->gets, n, &ao, arts, err)) < 0) {
      an_error_prefix(err, "get");
      an_exec_result_release(res);
    }
  }
  an_error_t e2 = NULL;
  /* a pooled sandbox is torn down by its monitor, in the background */
  int d = pooled ? an_sandbox_destroy_background(sb, &e2) : an_sandbox_destroy(sb, 0, &e2);
  if (d < 0 && pooled) {
    an_error_free(&e2);
    d = an_sandbox_destroy(sb, 0, &e2);
  }
  if (d < 0 && r >= 0) {
    *err = e2;
    e2 = NULL;
    r = d;
    an_exec_result_release(res);
    an_artifact_list_free(arts);
  }
  an_error_free(&e2);
  an_sandbox_close(sb);
  return r;
}

static int write_stream(const char *dir, const char *name, const char *buf, size_t len) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  cleanup_close int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  an_error_t e = NULL;
  int r = fd < 0 ? -errno : an_write_all(fd, buf, len, p, &e);
  an_error_free(&e);
  return r;
}

/* Keep at most max bytes of a stream in the record. */
static void cap_stream(char *buf, size_t *len, bool *truncated, size_t max) {
  if (*len <= max) return;
  size_t n = max;
  while (n > 0 && ((unsigned char) buf[n] & 0xC0) == 0x80) n--;   /* not inside a UTF-8 char */
  *len = n;
  buf[n] = 0;
  *truncated = true;
}

int an_batch_exec_job(const struct an_batch_exec_cfg *x, const struct an_batch_job *job,
                      int out_fd) {
  char started[32], ended[32];
  an_batch_now_rfc3339(started);
  size_t max = x->record_output_max ? x->record_output_max : 64 << 10;
  struct an_exec_opts eo = {.timeout_ms = job->timeout_ms};
  if (!x->output_dir) eo.max_stdout = eo.max_stderr = max;
  struct an_exec_result res = {0};
  struct an_artifact_list arts = {0};
  cleanup_free char *sbid = NULL, *reason = NULL, *dir = NULL;
  an_error_t err = NULL;
  struct an_sandbox *pooled = NULL;
  int r;
  if (x->output_dir && (asprintf(&dir, "%s/%s", x->output_dir, job->id) < 0 ||
                        (mkdir(dir, 0755) < 0 && errno != EEXIST)))
    r = an_error_set(&err, errno ? errno : ENOMEM, "output directory %s/%s", x->output_dir, job->id);
  else if ((pooled = pooled_sandbox(x, job)))
    r = with_files(x, job, pooled, &eo, &res, &arts, &sbid, &err);
  else if (!job->file && !job->puts && !job->gets)
    r = an_sandbox_run_once(x->store_root, job->opts, job->argv, &eo, &res, &sbid, &err);
  else r = with_files(x, job, NULL, &eo, &res, &arts, &sbid, &err);
  an_batch_now_rfc3339(ended);
  struct record rec = {.id = job->id, .line = job->line, .attempt = job->attempt,
                       .sandbox = sbid, .started = started, .ended = ended, .res = &res,
                       .arts = &arts, .pooled = x->pool ? pooled != NULL : -1};
  if (r < 0) {
    not_run(&res);
    rec.result = AN_BATCH_ERROR;
    rec.reason = rec.error = err ? err->msg : "error";
  } else {
    if (dir) {
      if (write_stream(dir, "stdout", res.output.stdout_buf, res.output.stdout_len) < 0 ||
          write_stream(dir, "stderr", res.output.stderr_buf, res.output.stderr_len) < 0)
        rec.error = "writing the output directory failed";
      cap_stream(res.output.stdout_buf, &res.output.stdout_len, &res.output.stdout_truncated, max);
      cap_stream(res.output.stderr_buf, &res.output.stderr_len, &res.output.stderr_truncated, max);
    }
    rec.result = an_batch_classify(&res);
    rec.reason = reason = an_batch_reason(&res, job->opts);
  }
  char *line = NULL;
  size_t len = 0;
  int w = record_line(&rec, &line, &len);
  if (r >= 0) an_exec_result_release(&res);
  an_artifact_list_free(&arts);
  an_error_free(&err);
  if (w < 0) return w;
  an_error_t e = NULL;
  w = an_write_all(out_fd, line, len, "job record", &e);
  an_error_free(&e);
  free(line);
  return w;
}
