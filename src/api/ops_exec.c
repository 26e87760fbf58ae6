/* api/ops_exec.c — the operations that run code: exec (an argv in a live
 * sandbox) and run_code (Python or shell source, in a live sandbox or in a
 * one-shot sandbox made and destroyed for the call).  Both are cancellable:
 * the worker's cancel pipe is the exec's cancel_fd (agentnest/sandbox.h).
 * With "stream": true their output goes to the front end as it comes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include "api_internal.h"

/* An output chunk as a frame on the result pipe (worker.c's protocol). */
static void stream_frame(void *data, enum an_stream stream, const char *buf, size_t len) {
  int fd = *(const int *) data;
  char head[16];
  int n = snprintf(head, sizeof head, "D%d%08zx\n", stream == AN_STREAM_STDERR ? 2 : 1, len);
  struct iovec iov[2] = {{head, (size_t) n}, {(void *) buf, len}};
  size_t left = (size_t) n + len;
  int i = 0;
  while (left > 0) {
    ssize_t w = writev(fd, iov + i, 2 - i);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;   /* the front end is gone: the worker dies with it */
    left -= (size_t) w;
    while (i < 2 && (size_t) w >= iov[i].iov_len) w -= (ssize_t) iov[i++].iov_len;
    if (i < 2) iov[i].iov_base = (char *) iov[i].iov_base + w, iov[i].iov_len -= (size_t) w;
  }
}

int an_api_exec_in(struct an_api_call *call, yajl_val in, struct an_api_exec_in *x,
                   an_error_t *err) {
  memset(x, 0, sizeof *x);
  x->stdin_fd = -1;
  int64_t t = an_api_in_int(in, "timeout_s", 0);
  if (t > 0) x->eo.timeout_ms = (uint64_t) t * 1000;
  x->eo.workdir = an_api_in_str(in, "workdir");
  if (x->eo.workdir && x->eo.workdir[0] != '/')
    return an_error_set(err, EINVAL, "input \"workdir\" %s: must be an absolute path", x->eo.workdir);
  yajl_val env = an_api_in_object(in, "env");
  if (env && env->u.object.len) {
    if (!(x->env = calloc(env->u.object.len + 1, sizeof *x->env))) return an_error_set(err, ENOMEM, "env");
    for (size_t i = 0; i < env->u.object.len; i++) {
      yajl_val v = env->u.object.values[i];
      if (asprintf(&x->env[i], "%s=%s", env->u.object.keys[i], YAJL_IS_STRING(v) ? v->u.string : "") < 0) {
        x->env[i] = NULL;
        return an_error_set(err, ENOMEM, "env");
      }
    }
    x->eo.env = x->env;
  }
  const char *stdin_text = an_api_in_str(in, "stdin");
  if (stdin_text) {
    /* a sealed-size memfd read by the command directly, never a pipe that could fill */
    x->stdin_fd = memfd_create("agentnest-api-stdin", MFD_CLOEXEC);
    size_t n = strlen(stdin_text);
    if (x->stdin_fd < 0 || (n && write(x->stdin_fd, stdin_text, n) != (ssize_t) n) ||
        lseek(x->stdin_fd, 0, SEEK_SET) < 0)
      return an_error_set(err, errno ? errno : EIO, "input \"stdin\": memfd");
    x->eo.has_stdin = true;
    x->eo.stdin_fd = x->stdin_fd;
  }
  x->eo.kill_grace_ms = 500;
  if (an_api_in_bool(in, "stream", false) && call->stream_fd >= 0) {
    x->eo.on_data = stream_frame;
    x->eo.on_data_arg = &call->stream_fd;
  }
  x->eo.has_cancel_fd = true;
  x->eo.cancel_fd = call->cancel_fd;
  return 0;
}

void an_api_exec_in_release(struct an_api_exec_in *x) {
  for (size_t i = 0; x->env && x->env[i]; i++) free(x->env[i]);
  free(x->env);
  if (x->stdin_fd >= 0) close(x->stdin_fd);
  x->env = NULL;
  x->stdin_fd = -1;
}

static int exec_in_sandbox(struct an_api_call *c, yajl_val in, char *const *argv, yajl_gen out,
                           an_error_t *err) {
  struct an_sandbox *sb = NULL;
  int r = an_api_open_sandbox(c, in, &sb, err);
  if (r < 0) return r;
  struct an_api_exec_in x;
  struct an_exec_result res = {0};
  if ((r = an_api_exec_in(c, in, &x, err)) >= 0 && (r = an_sandbox_exec(sb, argv, &x.eo, &res, err)) >= 0) {
    an_api_gen_exec_result(out, an_sandbox_id(sb), &res);
    an_exec_result_release(&res);
  }
  an_api_exec_in_release(&x);
  an_sandbox_close(sb);
  return r;
}

int an_api_op_exec(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  yajl_val a = an_api_in_array(in, "argv");
  size_t n = a ? a->u.array.len : 0;
  if (!n) return an_error_set(err, EINVAL, "exec: \"argv\" is empty");
  char **argv = calloc(n + 1, sizeof *argv);
  if (!argv) return an_error_set(err, ENOMEM, "exec: argv");
  for (size_t i = 0; i < n; i++) argv[i] = a->u.array.values[i]->u.string;  /* validated strings */
  int r = exec_in_sandbox(c, in, argv, out, err);
  free(argv);
  return r;
}

int an_api_op_run_code(struct an_api_call *c, yajl_val in, yajl_gen out, an_error_t *err) {
  const char *lang = an_api_in_str(in, "language");
  const char *code = an_api_in_str(in, "code");
  char *py[] = {"python3", "-c", (char *) code, NULL};
  char *sh[] = {"sh", "-c", (char *) code, NULL};
  char **argv = lang && !strcmp(lang, "shell") ? sh : py;
  if (an_api_in_str(in, "sandbox")) return exec_in_sandbox(c, in, argv, out, err);
  if (an_api_in_str(in, "workdir"))
    return an_error_set(err, EINVAL, "run_code: \"workdir\" needs \"sandbox\" (a one-shot runs in the profile's workdir)");
  /* one-shot: a sandbox of the server's profile (else the python image) for this call only */
  struct an_sandbox_opts *o = NULL;
  int r = an_sandbox_opts_new_ctx(c->ctx->lib, &o, err);
  if (r < 0) return r;
  if (c->ctx->profile) r = an_sandbox_opts_load_profile(o, c->ctx->profile, NULL, err);
  if (r >= 0 && !an_sandbox_opts_image(o)) r = an_sandbox_opts_set_image(o, "python", err);
  if (r >= 0 && c->ctx->max_lifetime_ms && an_sandbox_opts_lifetime(o) > c->ctx->max_lifetime_ms)
    r = an_sandbox_opts_set_lifetime(o, c->ctx->max_lifetime_ms, err);
  struct an_api_exec_in x = {.stdin_fd = -1};
  struct an_exec_result res = {0};
  char *id = NULL;
  if (r >= 0 && (r = an_api_exec_in(c, in, &x, err)) >= 0 &&
      (r = an_sandbox_run_once(c->ctx->store_root, o, argv, &x.eo, &res, &id, err)) >= 0) {
    an_api_gen_exec_result(out, NULL, &res);
    an_exec_result_release(&res);
  }
  free(id);
  an_api_exec_in_release(&x);
  an_sandbox_opts_free(o);
  return r;
}
