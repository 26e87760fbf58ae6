/* server/server_stream.c — JSON Lines responses of the streaming operations
 * (AN_API_OP_STREAMS: exec, run_code) of `agentnest serve`, asked for with
 * "Accept: application/x-ndjson" or "stream": true.  The lines are the
 * CLI's --stream format (src/cli/agentnest/stream.h):
 *   {"type":"stdout"|"stderr","data":"<text>"}               a chunk as it comes
 *   {"type":"stdout"|"stderr","data":"<b64>","encoding":"base64"}  one not UTF-8
 *   {"type":"result", <the members of the exec result>}      last, or
 *   {"type":"error","status":125,"error":{"code":"<ERRNO>","message":"..."}}
 * The worker sends its output chunks on the result pipe as they come
 * (an_api_job_take_output); libmicrohttpd's content reader (a thread per
 * connection: it may block) turns them into lines, sent chunked.  A client
 * that hangs up cancels the call (its command's cgroup is killed). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/evp.h>
#include "server_internal.h"
#include "util/json_tree.h"

struct srv_stream {
  struct srv *s;
  struct an_api_ctx ctx;       /* the job's context: must outlive it */
  struct an_api_job *job;
  int sock;
  char *pend;                  /* lines not sent yet */
  size_t plen, pcap, poff;
  bool finished;
  long hold_token;             /* >= 0: a max-sandboxes slot to give back at the end */
  long token;                  /* the caller's token: its --max-concurrent admission */
};

static void pend_add(struct srv_stream *x, const unsigned char *b, size_t n) {
  if (x->plen + n + 1 > x->pcap) {
    size_t nc = (x->plen + n + 1) * 2;
    char *p = realloc(x->pend, nc);
    if (!p) return;
    x->pend = p;
    x->pcap = nc;
  }
  memcpy(x->pend + x->plen, b, n);
  x->plen += n;
  x->pend[x->plen++] = '\n';
}

static void kv(yajl_gen g, const char *k, const char *v, size_t n) {
  yajl_gen_string(g, (const unsigned char *) k, strlen(k));
  yajl_gen_string(g, (const unsigned char *) v, n);
}

/* One output chunk: a text line, or base64 when it is not UTF-8. */
static void on_chunk(void *data, int stream, const char *buf, size_t len) {
  struct srv_stream *x = data;
  const char *type = stream == 2 ? "stderr" : "stdout";
  for (int b64 = 0; b64 < 2; b64++) {
    yajl_gen g = yajl_gen_alloc(NULL);
    if (!g) return;
    yajl_gen_config(g, yajl_gen_validate_utf8, 1);
    yajl_gen_map_open(g);
    kv(g, "type", type, strlen(type));
    yajl_gen_status st;
    if (!b64) {
      yajl_gen_string(g, (const unsigned char *) "data", 4);
      st = yajl_gen_string(g, (const unsigned char *) buf, len);
    } else {
      char *enc = malloc((len + 2) / 3 * 4 + 1);
      if (!enc) { yajl_gen_free(g); return; }
      int n = EVP_EncodeBlock((unsigned char *) enc, (const unsigned char *) buf, (int) len);
      kv(g, "data", enc, (size_t) n);
      free(enc);
      st = yajl_gen_status_ok;
      kv(g, "encoding", "base64", 6);
    }
    const unsigned char *out = NULL;
    size_t olen = 0;
    if (st == yajl_gen_status_ok && yajl_gen_map_close(g) == yajl_gen_status_ok &&
        yajl_gen_get_buf(g, &out, &olen) == yajl_gen_status_ok) {
      pend_add(x, out, olen);
      yajl_gen_free(g);
      return;
    }
    yajl_gen_free(g);
  }
}

/* The last line: the result with "type" first, or the error. */
static void finish(struct srv_stream *x) {
  char *out = NULL;
  size_t olen = 0;
  an_error_t err = NULL;
  an_api_job_take_output(x->job, on_chunk, x);
  int r = an_api_job_finish(x->job, &out, &olen, NULL, &err);
  yajl_val v = NULL;
  if (r >= 0 && an_json_parse(out, olen, "result", &v, &err) < 0) r = -EPROTO;
  yajl_gen g = yajl_gen_alloc(NULL);
  if (g) {
    yajl_gen_map_open(g);
    if (r >= 0 && YAJL_IS_OBJECT(v)) {
      kv(g, "type", "result", 6);
      for (size_t i = 0; i < v->u.object.len; i++) {
        yajl_gen_string(g, (const unsigned char *) v->u.object.keys[i], strlen(v->u.object.keys[i]));
        an_api_gen_value(g, v->u.object.values[i]);
      }
    } else {
      const char *code = an_errno_name(err ? err->errnum : EPROTO);
      const char *msg = err && err->msg ? err->msg : "failed";
      kv(g, "type", "error", 5);
      yajl_gen_string(g, (const unsigned char *) "status", 6);
      yajl_gen_integer(g, 125);
      yajl_gen_string(g, (const unsigned char *) "error", 5);
      yajl_gen_map_open(g);
      kv(g, "code", code, strlen(code));
      kv(g, "message", msg, strlen(msg));
      yajl_gen_map_close(g);
    }
    yajl_gen_map_close(g);
    const unsigned char *b = NULL;
    size_t n = 0;
    if (yajl_gen_get_buf(g, &b, &n) == yajl_gen_status_ok) pend_add(x, b, n);
    yajl_gen_free(g);
  }
  yajl_tree_free(v);
  free(out);
  an_error_free(&err);
  x->finished = true;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  struct srv_stream *x = cls;
  (void) pos;
  for (;;) {
    if (x->poff < x->plen) {
      size_t n = x->plen - x->poff < max ? x->plen - x->poff : max;
      memcpy(buf, x->pend + x->poff, n);
      x->poff += n;
      return (ssize_t) n;
    }
    x->plen = x->poff = 0;
    if (x->finished) return MHD_CONTENT_READER_END_OF_STREAM;
    an_error_t err = NULL;
    int r = an_api_job_pump(x->job, &err);
    an_error_free(&err);
    an_api_job_take_output(x->job, on_chunk, x);
    if (x->plen) continue;
    if (r != 0) { finish(x); continue; }
    struct pollfd p[2] = {{.fd = an_api_job_fd(x->job), .events = POLLIN}, {.fd = x->sock, .events = POLLRDHUP}};
    int n = poll(p, x->sock >= 0 ? 2 : 1, 500);
    if (n > 0 && x->sock >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) an_api_job_cancel(x->job, 2000);
    an_api_job_tick(x->job);
  }
}

static void stream_free(void *cls) {
  struct srv_stream *x = cls;
  an_api_job_free(x->job);   /* cancels a worker still running (its exec ends; a one-shot run gets its grace) */
  if (x->hold_token >= 0) srv_unhold(x->s, x->hold_token);
  srv_release(x->s, x->token);
  free(x->pend);
  free(x);
}

int srv_stream_respond(struct srv *s, struct MHD_Connection *c, const struct an_api_ctx *ctx,
                       const struct an_api_op *op, const char *in, size_t inlen, long token, long hold_token,
                       enum MHD_Result *ret, an_error_t *err) {
  struct srv_stream *x = calloc(1, sizeof *x);
  if (!x) return an_error_set(err, ENOMEM, "%s: stream", op->name);
  x->s = s;
  x->hold_token = -1;
  x->ctx = *ctx;
  int r = an_api_job_start(&x->ctx, op, in, inlen, &x->job, err);
  if (r < 0) {
    free(x);
    return r;
  }
  x->ctx.may_use_data = x->ctx.may_audit_data = NULL;   /* the worker has its copy */
  x->ctx.may_use = x->ctx.may_audit = NULL;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  x->sock = ci ? ci->connect_fd : -1;
  x->hold_token = hold_token;   /* from here stream_free gives the slot back */
  x->token = token;             /* and the call's admission */
  struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, x, stream_free);
  if (!resp) {
    stream_free(x);
    *ret = MHD_NO;
    return 0;
  }
  MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
  MHD_add_response_header(resp, "Cache-Control", "no-store");
  *ret = MHD_queue_response(c, 200, resp);
  MHD_destroy_response(resp);
  return 0;
}
