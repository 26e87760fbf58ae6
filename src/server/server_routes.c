/* server/server_routes.c — one HTTP request of `agentnest serve`: body
 * collection under the cap, authentication, routing generated from the
 * operations table (method + "/v1" + http_path, "{sandbox}" a path
 * segment), the call in its worker (cancelled when the client hangs up),
 * per-token ownership, JSON errors with HTTP statuses, and the raw file
 * routes (server.h). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>
#include "server_internal.h"
#include "agentnest/sandbox.h"
#include "mcp/mcp.h"
#include "util/json_tree.h"
#include "util/sha256.h"

struct srv_req {
  char *body;
  size_t len, cap;
  bool too_big;
  long token;
};

struct owned_view { char (*ids)[16]; size_t n; };

static bool view_may_use(void *data, const char *id) {
  const struct owned_view *v = data;
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->ids[i], id)) return true;
  return false;
}

static void srv_log(struct srv *s, struct srv_req *q, const char *method, const char *url, unsigned status) {
  if (s->o->log_fd < 0) return;
  char line[1200];
  const char *who = q && q->token >= 0 ? s->tokens[q->token].name : "-";
  int n = snprintf(line, sizeof line, "serve: %s %s %.900s -> %u\n", who, method, url, status);
  if (n > 0 && write(s->o->log_fd, line, (size_t) n < sizeof line ? (size_t) n : sizeof line - 1) < 0) {}
}

static enum MHD_Result respond(struct MHD_Connection *c, unsigned status, const char *type, char *buf,
                               size_t len, const char *hname, const char *hval) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
  if (!r) { free(buf); return MHD_NO; }
  MHD_add_response_header(r, "Content-Type", type);
  MHD_add_response_header(r, "Cache-Control", "no-store");
  if (hname) MHD_add_response_header(r, hname, hval);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static const char *http_reason(unsigned st) {
  switch (st) {
  case 400: return "bad request";
  case 401: return "unauthorized";
  case 403: return "forbidden";
  case 404: return "not found";
  case 405: return "method not allowed";
  case 409: return "conflict";
  case 410: return "gone";
  case 413: return "payload too large";
  case 429: return "too many requests";
  case 503: return "unavailable";
  default: return "error";
  }
}

static enum MHD_Result respond_error(struct srv *s, struct srv_req *q, struct MHD_Connection *c,
                                     const char *method, const char *url, unsigned status, int errnum,
                                     const char *msg, const char *hname, const char *hval) {
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) return MHD_NO;
  yajl_gen_map_open(g);
  yajl_gen_string(g, (const unsigned char *) "error", 5);
  yajl_gen_map_open(g);
  yajl_gen_string(g, (const unsigned char *) "code", 4);
  yajl_gen_integer(g, status);
  if (errnum) {
    const char *e = an_errno_name(errnum);
    yajl_gen_string(g, (const unsigned char *) "errno", 5);
    yajl_gen_string(g, (const unsigned char *) e, strlen(e));
  }
  yajl_gen_string(g, (const unsigned char *) "message", 7);
  if (!msg) msg = http_reason(status);
  if (yajl_gen_string(g, (const unsigned char *) msg, strlen(msg)) != yajl_gen_status_ok)
    yajl_gen_string(g, (const unsigned char *) http_reason(status), strlen(http_reason(status)));
  yajl_gen_map_close(g);
  yajl_gen_map_close(g);
  const unsigned char *b = NULL;
  size_t len = 0;
  yajl_gen_get_buf(g, &b, &len);
  char *copy = malloc(len + 1);
  if (copy) memcpy(copy, b, len), copy[len] = '\n';
  yajl_gen_free(g);
  srv_log(s, q, method, url, status);
  if (!copy) return MHD_NO;
  return respond(c, status, "application/json", copy, len + 1, hname, hval);
}

static unsigned status_of(int errnum) {
  switch (errnum) {
  case EINVAL: case EXDEV: case ELOOP: case ENOTDIR: case EISDIR: case ENAMETOOLONG: case E2BIG: return 400;
  case EPERM: case EACCES: return 403;
  case ENOENT: return 404;
  case EEXIST: case ESRCH: case EBUSY: return 409;
  case ETIME: case ESTALE: return 410;
  case EFBIG: return 413;
  case ECANCELED: case EAGAIN: return 503;
  case ENOSPC: case EDQUOT: return 507;
  case EOPNOTSUPP: return 501;
  default: return 500;
  }
}

/* ---- ownership ---------------------------------------------------------------------------- */

static size_t owned_count(struct srv *s, long token) {
  size_t n = 0;
  for (size_t i = 0; i < s->nown; i++) n += s->own[i].token == (size_t) token;
  return n;
}

static void owned_add(struct srv *s, const char *id, long token, pid_t keeper) {
  pthread_mutex_lock(&s->mu);
  if (s->nown == s->capown) {
    size_t nc = s->capown ? s->capown * 2 : 32;
    struct srv_owned *n = realloc(s->own, nc * sizeof *n);
    if (n) s->own = n, s->capown = nc;
  }
  if (s->nown < s->capown) {
    snprintf(s->own[s->nown].id, sizeof s->own[s->nown].id, "%s", id);
    s->own[s->nown].token = (size_t) token;
    s->own[s->nown++].keeper = keeper;
    keeper = 0;
  }
  pthread_mutex_unlock(&s->mu);
  if (keeper > 0) kill(keeper, SIGKILL), waitpid(keeper, NULL, 0);
}

static void owned_remove(struct srv *s, const char *id) {
  pid_t keeper = 0;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nown; i++)
    if (!strcmp(s->own[i].id, id)) {
      keeper = s->own[i].keeper;
      if (s->ngone == s->capgone) {
        size_t nc = s->capgone ? s->capgone * 2 : 32;
        struct srv_owned *n = realloc(s->gone, nc * sizeof *n);
        if (n) s->gone = n, s->capgone = nc;
      }
      if (s->ngone < s->capgone) s->gone[s->ngone] = s->own[i], s->gone[s->ngone++].keeper = 0;
      s->own[i] = s->own[--s->nown];
      break;
    }
  pthread_mutex_unlock(&s->mu);
  if (keeper > 0) kill(keeper, SIGKILL), waitpid(keeper, NULL, 0);
}

/* Forget the token's sandboxes that ended on their own (lifetime, dead monitor): they no
 * longer count against max-sandboxes, and DELETE of one answers 404 without dropping it. */
static void owned_prune(struct srv *s, long token) {
  char (*ids)[16] = NULL;
  size_t n = 0;
  pthread_mutex_lock(&s->mu);
  ids = calloc(s->nown + 1, sizeof *ids);
  for (size_t i = 0; ids && i < s->nown; i++)
    if (s->own[i].token == (size_t) token) memcpy(ids[n++], s->own[i].id, 16);
  pthread_mutex_unlock(&s->mu);
  for (size_t i = 0; i < n; i++) {
    struct an_sandbox *sb = NULL;
    an_error_t e = NULL;
    int r = an_sandbox_open_ctx(s->ctx.lib, s->ctx.store_root, ids[i], &sb, &e);
    an_sandbox_close(sb);
    an_error_free(&e);
    if (r == -ENOENT || r == -ETIME || r == -ESRCH) owned_remove(s, ids[i]);
  }
  free(ids);
}

/* A copy of the token's ids for the worker (which must not take locks);
 * with `gone` also those it destroyed (for audit). */
static int owned_view_of(struct srv *s, long token, bool gone, struct owned_view *v) {
  pthread_mutex_lock(&s->mu);
  v->n = 0;
  v->ids = calloc(s->nown + (gone ? s->ngone : 0) + 1, sizeof *v->ids);
  for (size_t i = 0; v->ids && i < s->nown; i++)
    if (s->own[i].token == (size_t) token) memcpy(v->ids[v->n++], s->own[i].id, 16);
  for (size_t i = 0; gone && v->ids && i < s->ngone; i++)
    if (s->gone[i].token == (size_t) token) memcpy(v->ids[v->n++], s->gone[i].id, 16);
  pthread_mutex_unlock(&s->mu);
  return v->ids ? 0 : -ENOMEM;
}
static int owned_view(struct srv *s, long token, struct owned_view *v) { return owned_view_of(s, token, false, v); }

/* --max-concurrent admission (server_internal.h) */
bool srv_admit(struct srv *s, long t) {
  pthread_mutex_lock(&s->mu);
  unsigned live = 0;
  for (size_t u = 0; u < s->ntokens; u++) live += !s->tokens[u].revoked;
  unsigned share = live && s->max_concurrent >= live;   /* one slot promised to each token */
  unsigned free_slots = s->max_concurrent > s->inflight ? s->max_concurrent - s->inflight : 0, owed = 0;
  for (size_t u = 0; u < s->ntokens; u++)
    if ((long) u != t && !s->tokens[u].revoked && s->tokens[u].inflight < share) owed += share - s->tokens[u].inflight;
  bool ok = s->tokens[t].inflight < share ? free_slots > 0 : free_slots > owed;
  if (ok) {
    s->inflight++;
    s->tokens[t].inflight++;
  }
  pthread_mutex_unlock(&s->mu);
  return ok;
}

void srv_release(struct srv *s, long t) {
  pthread_mutex_lock(&s->mu);
  if (s->inflight) s->inflight--;
  if (s->tokens[t].inflight) s->tokens[t].inflight--;
  pthread_mutex_unlock(&s->mu);
}

/* Take a slot of token t's max-sandboxes for a call that holds a sandbox
 * (an_api_call_holds_sandbox): its sandboxes plus the calls holding one now
 * are counted and the slot reserved in one step under s->mu, so concurrent
 * requests (REST and /mcp alike) cannot all pass.  true: reserved (or no
 * cap); srv_unhold gives it back when the call ends. */
bool srv_hold(struct srv *s, long t) {
  if (!s->tokens[t].max_sandboxes) return true;
  owned_prune(s, t);
  pthread_mutex_lock(&s->mu);
  bool ok = owned_count(s, t) + s->tokens[t].creating < s->tokens[t].max_sandboxes;
  if (ok) s->tokens[t].creating++;
  pthread_mutex_unlock(&s->mu);
  return ok;
}

void srv_unhold(struct srv *s, long t) {
  if (!s->tokens[t].max_sandboxes) return;
  pthread_mutex_lock(&s->mu);
  if (s->tokens[t].creating) s->tokens[t].creating--;
  pthread_mutex_unlock(&s->mu);
}

/* The token's snapshot directory name: hex of SHA-256 of its name (32 digits), so
 * one token's snapshot digest restores nothing for another (api.h snapshot_owner). */
static void snapshot_owner(const struct srv *s, long token, char out[33]) {
  unsigned char h[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  const char *name = s->tokens[token].name;
  out[0] = 0;
  if (EVP_Digest(name, strlen(name), h, &len, an_sha256_md(), NULL) != 1 || len < 16) return;
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* ---- calls -------------------------------------------------------------------------------- */

/* Run op on input in a worker; cancelled when the client hangs up. */
static int run_call(struct srv *s, struct MHD_Connection *c, long token, const struct an_api_op *op,
                    const char *input, size_t inlen, char **out, size_t *outlen, an_error_t *err) {
  struct owned_view v = {0}, hist = {0};
  if (owned_view(s, token, &v) < 0 || owned_view_of(s, token, true, &hist) < 0) {
    free(v.ids);
    return an_error_set(err, ENOMEM, "request");
  }
  struct an_api_ctx ctx = s->ctx;
  ctx.may_use = view_may_use;
  ctx.may_use_data = &v;
  ctx.may_audit = view_may_use;
  ctx.may_audit_data = &hist;
  char owner[33];
  snapshot_owner(s, token, owner);
  if (!*owner) { free(v.ids); free(hist.ids); return an_error_set(err, EIO, "request: SHA-256"); }
  ctx.snapshot_owner = owner;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  int sock = ci ? ci->connect_fd : -1;
  struct an_api_job *job = NULL;
  int r = an_api_job_start(&ctx, op, input, inlen, &job, err);
  free(v.ids);   /* the worker has its copy */
  free(hist.ids);
  if (r < 0) return r;
  while ((r = an_api_job_pump(job, err)) == 0) {
    struct pollfd p[2] = {{.fd = an_api_job_fd(job), .events = POLLIN}, {.fd = sock, .events = POLLRDHUP}};
    int n = poll(p, sock >= 0 ? 2 : 1, 500);
    if (n > 0 && sock >= 0 && (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) an_api_job_cancel(job, 2000);
    an_api_job_tick(job);
  }
  pid_t keeper = 0;
  if (r >= 0) r = an_api_job_finish(job, out, outlen, &keeper, err);
  an_api_job_free(job);
  if (r >= 0 && (op->flags & (AN_API_OP_CREATES | AN_API_OP_DESTROYS))) {
    yajl_val res = NULL;
    an_error_t e = NULL;
    const char *id = NULL;
    if (an_json_parse(*out, *outlen, "result", &res, &e) >= 0) id = an_json_member_str(res, "id");
    if (id && (op->flags & AN_API_OP_CREATES)) owned_add(s, id, token, keeper), keeper = 0;
    if (id && (op->flags & AN_API_OP_DESTROYS)) owned_remove(s, id);
    yajl_tree_free(res);
    an_error_free(&e);
  }
  if (keeper > 0) kill(keeper, SIGKILL), waitpid(keeper, NULL, 0);
  return r;
}

/* The input document: {"sandbox": seg?, ...body members}. */
static int make_input(const char *sandbox, const char *body, size_t len, const char *raw_path,
                      const char *b64, bool accept_stream, bool *streaming, char **in, size_t *inlen,
                      char *msg, size_t msgsize) {
  yajl_val v = NULL;
  *streaming = false;
  if (len) {
    an_error_t err = NULL;
    if (an_json_parse(body, len, "request body", &v, &err) < 0 || !YAJL_IS_OBJECT(v)) {
      snprintf(msg, msgsize, "%s", err ? err->msg : "request body: must be a JSON object");
      an_error_free(&err);
      yajl_tree_free(v);
      return -EINVAL;
    }
    if (sandbox && an_json_member(v, "sandbox")) {
      snprintf(msg, msgsize, "request body: \"sandbox\" is given by the path");
      yajl_tree_free(v);
      return -EINVAL;
    }
  }
  yajl_gen g = yajl_gen_alloc(NULL);
  if (!g) { yajl_tree_free(v); return -ENOMEM; }
  yajl_gen_map_open(g);
  if (sandbox) yajl_gen_string(g, (const unsigned char *) "sandbox", 7), yajl_gen_string(g, (const unsigned char *) sandbox, strlen(sandbox));
  if (raw_path) yajl_gen_string(g, (const unsigned char *) "path", 4), yajl_gen_string(g, (const unsigned char *) raw_path, strlen(raw_path));
  if (raw_path) {
    yajl_gen_string(g, (const unsigned char *) "encoding", 8);
    yajl_gen_string(g, (const unsigned char *) "base64", 6);
  }
  if (b64) yajl_gen_string(g, (const unsigned char *) "content", 7), yajl_gen_string(g, (const unsigned char *) b64, strlen(b64));
  /* Accept: application/x-ndjson means "stream": true unless the body says otherwise */
  yajl_val st = v ? an_json_member(v, "stream") : NULL;
  if (accept_stream && !st) yajl_gen_string(g, (const unsigned char *) "stream", 6), yajl_gen_bool(g, 1);
  *streaming = st ? YAJL_IS_TRUE(st) : accept_stream;
  for (size_t i = 0; v && i < v->u.object.len; i++) {
    yajl_gen_string(g, (const unsigned char *) v->u.object.keys[i], strlen(v->u.object.keys[i]));
    an_api_gen_value(g, v->u.object.values[i]);
  }
  yajl_gen_map_close(g);
  yajl_tree_free(v);
  const unsigned char *b = NULL;
  size_t n = 0;
  int r = yajl_gen_get_buf(g, &b, &n) == yajl_gen_status_ok ? 0 : -EINVAL;
  if (r == 0 && (*in = malloc(n + 1))) memcpy(*in, b, n), (*in)[n] = 0, *inlen = n;
  else if (r == 0) r = -ENOMEM;
  if (r == -EINVAL) snprintf(msg, msgsize, "request: a string is not UTF-8");
  yajl_gen_free(g);
  return r;
}

/* Does `pattern` ("/sandboxes/{sandbox}/exec") match path (after /v1)? */
static bool route_match(const char *pattern, const char *path, char *sandbox, size_t size) {
  while (*pattern && *path) {
    if (!strncmp(pattern, "{sandbox}", 9)) {
      const char *e = strchr(path, '/');
      size_t n = e ? (size_t) (e - path) : strlen(path);
      if (!n || n >= size) return false;
      memcpy(sandbox, path, n);
      sandbox[n] = 0;
      pattern += 9;
      path += n;
      continue;
    }
    if (*pattern++ != *path++) return false;
  }
  return !*pattern && !*path;
}

/* 503 for a call srv_admit turned away */
static enum MHD_Result respond_busy(struct srv *s, struct srv_req *q, struct MHD_Connection *c, const char *method,
                                    const char *url) {
  return respond_error(s, q, c, method, url, 503, 0,
                       "too many calls in flight (--max-concurrent, shared fairly between tokens); retry",
                       "Retry-After", "1");
}

static enum MHD_Result call_and_respond(struct srv *s, struct srv_req *q, struct MHD_Connection *c,
                                        const char *method, const char *url, const struct an_api_op *op,
                                        const char *sandbox, const char *raw_path, bool raw_put) {
  char msg[512];
  if (!srv_admit(s, q->token)) return respond_busy(s, q, c, method, url);
  bool admitted = true;
  enum MHD_Result ret;
  char *in = NULL, *out = NULL, *b64 = NULL;
  size_t inlen = 0, outlen = 0;
  an_error_t err = NULL;
  int r = 0;
  bool reserved = false;
  if (raw_put) {
    if (!(b64 = malloc((q->len + 2) / 3 * 4 + 1))) { ret = MHD_NO; goto done; }
    EVP_EncodeBlock((unsigned char *) b64, (const unsigned char *) (q->body ? q->body : ""), (int) q->len);
  }
  bool body_json = !raw_put && !raw_path && !strcmp(method, "POST");
  bool streams = op->flags & AN_API_OP_STREAMS, streaming = false;
  const char *accept = streams ? MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept") : NULL;
  r = make_input(sandbox, body_json ? q->body : NULL, body_json ? q->len : 0, raw_path, b64,
                 accept && strstr(accept, "application/x-ndjson"), &streaming, &in, &inlen, msg, sizeof msg);
  if (r < 0) {
    ret = respond_error(s, q, c, method, url, r == -EINVAL ? 400 : 500, -r, msg, NULL, NULL);
    goto done;
  }
  /* a create, a fork or a one-shot run holds a sandbox while it runs: it takes a slot of the
   * token's max-sandboxes, counted and reserved in one step (concurrent calls must not all
   * pass the check); a create's sandbox is in the owned list when the slot is given back */
  if (s->tokens[q->token].max_sandboxes) {
    yajl_val parsed = in ? yajl_tree_parse(in, NULL, 0) : NULL;
    bool holds = an_api_call_holds_sandbox(op, parsed);
    yajl_tree_free(parsed);
    if (holds && !(reserved = srv_hold(s, q->token))) {
      snprintf(msg, sizeof msg, "this token may hold at most %zu sandboxes; destroy one first",
               s->tokens[q->token].max_sandboxes);
      ret = respond_error(s, q, c, method, url, 403, 0, msg, NULL, NULL);
      goto done;
    }
  }
  if (streams && streaming) {
    struct owned_view v = {0};
    if (owned_view(s, q->token, &v) < 0) { ret = MHD_NO; goto done; }
    struct an_api_ctx ctx = s->ctx;
    ctx.may_use = view_may_use;
    ctx.may_use_data = &v;
    r = srv_stream_respond(s, c, &ctx, op, in, inlen, q->token, reserved ? q->token : -1, &ret, &err);
    if (r >= 0) reserved = admitted = false;   /* the stream gives both back when it ends */
    free(v.ids);   /* the worker has its copy */
    if (r < 0) ret = respond_error(s, q, c, method, url, status_of(-r), -r, err && err->msg ? err->msg : NULL, NULL, NULL);
    else srv_log(s, q, method, url, 200);
    goto done;
  }
  r = run_call(s, c, q->token, op, in, inlen, &out, &outlen, &err);
  if (r < 0) {
    ret = respond_error(s, q, c, method, url, status_of(-r), -r, err && err->msg ? err->msg : NULL, NULL, NULL);
    goto done;
  }
  if (raw_path && !raw_put) {
    /* download: the base64 content as bytes */
    yajl_val v = NULL;
    an_error_t e = NULL;
    const char *content = NULL;
    if (an_json_parse(out, outlen, "result", &v, &e) >= 0) content = an_json_member_str(v, "content");
    an_error_free(&e);
    size_t clen = content ? strlen(content) : 0;
    unsigned char *bytes = malloc(clen / 4 * 3 + 1);
    int n = bytes ? EVP_DecodeBlock(bytes, (const unsigned char *) (content ? content : ""), (int) clen) : -1;
    if (n >= 0 && clen && content[clen - 1] == '=') n--;
    if (n >= 0 && clen > 1 && content[clen - 2] == '=') n--;
    yajl_tree_free(v);
    if (n < 0) {
      free(bytes);
      ret = respond_error(s, q, c, method, url, 500, EIO, "download: bad result", NULL, NULL);
      goto done;
    }
    srv_log(s, q, method, url, 200);
    ret = respond(c, 200, "application/octet-stream", (char *) bytes, (size_t) n, NULL, NULL);
    goto done;
  }
  srv_log(s, q, method, url, 200);
  ret = respond(c, 200, "application/json", out, outlen, NULL, NULL);
  out = NULL;
done:
  if (reserved) srv_unhold(s, q->token);   /* a successful create is in the owned list by now */
  if (admitted) srv_release(s, q->token);
  free(in);
  free(out);
  free(b64);
  an_error_free(&err);
  return ret;
}

/* ---- MCP Streamable HTTP at /mcp ----------------------------------------------------------- */

struct mcp_hook { struct srv *s; long token; };
static void mcp_created(void *data, const char *id, pid_t keeper) {
  struct mcp_hook *h = data;
  owned_add(h->s, id, h->token, keeper);
}
static void mcp_destroyed(void *data, const char *id) { owned_remove(((struct mcp_hook *) data)->s, id); }
static bool mcp_admit(void *data) {
  struct mcp_hook *h = data;
  return srv_hold(h->s, h->token);
}
static void mcp_release(void *data) {
  struct mcp_hook *h = data;
  srv_unhold(h->s, h->token);
}

static enum MHD_Result mcp_post(struct srv *s, struct srv_req *q, struct MHD_Connection *c, const char *method,
                                const char *url) {
  if (strcmp(method, "POST"))   /* no server-initiated SSE stream, no session to delete */
    return respond_error(s, q, c, method, url, 405, 0, "this server answers POST /mcp only", "Allow", "POST");
  if (!srv_admit(s, q->token)) return respond_busy(s, q, c, method, url);
  struct owned_view v = {0}, hist = {0};
  enum MHD_Result ret = MHD_NO;
  if (s->tokens[q->token].max_sandboxes) owned_prune(s, q->token);
  if (owned_view(s, q->token, &v) < 0 || owned_view_of(s, q->token, true, &hist) < 0) goto out;
  const char **ids = calloc(v.n + 1, sizeof *ids);
  if (!ids) goto out;
  for (size_t i = 0; i < v.n; i++) ids[i] = v.ids[i];
  struct mcp_hook hook = {s, q->token};
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  struct an_mcp_http h = {.api = s->ctx, .max_sandboxes = s->tokens[q->token].max_sandboxes,
                          .owned = ids, .nowned = v.n, .cancel_fd = ci ? ci->connect_fd : -1,
                          .cancel_events = POLLRDHUP, .log_fd = -1, .on_created = mcp_created,
                          .on_destroyed = mcp_destroyed, .admit = mcp_admit, .release = mcp_release,
                          .hook_data = &hook};
  h.api.may_use = view_may_use;
  h.api.may_use_data = &v;
  h.api.may_audit = view_may_use;
  h.api.may_audit_data = &hist;
  char owner[33];
  snapshot_owner(s, q->token, owner);
  if (!*owner) { free(ids); goto out; }
  h.api.snapshot_owner = owner;
  char *resp = NULL;
  size_t rlen = 0;
  an_error_t err = NULL;
  int r = an_mcp_http_message(&h, q->body ? q->body : "", q->len, &resp, &rlen, &err);
  free(ids);
  if (r < 0) {
    ret = respond_error(s, q, c, method, url, 500, -r, err ? err->msg : NULL, NULL, NULL);
    an_error_free(&err);
  } else if (!rlen) {
    free(resp);
    srv_log(s, q, method, url, 202);
    ret = respond(c, 202, "application/json", NULL, 0, NULL, NULL);
  } else {
    char sid[33] = "";
    if (strstr(resp, "\"serverInfo\"")) {   /* the initialize response: a session id */
      unsigned char rnd[16];
      FILE *f = fopen("/dev/urandom", "re");
      if (f && fread(rnd, 1, sizeof rnd, f) == sizeof rnd)
        for (int i = 0; i < 16; i++) snprintf(sid + 2 * i, 3, "%02x", rnd[i]);
      if (f) fclose(f);
    }
    srv_log(s, q, method, url, 200);
    ret = respond(c, 200, "application/json", resp, rlen, *sid ? "Mcp-Session-Id" : NULL, sid);
  }
out:
  free(v.ids);
  free(hist.ids);
  srv_release(s, q->token);
  return ret;
}

static enum MHD_Result route(struct srv *s, struct srv_req *q, struct MHD_Connection *c, const char *method,
                             const char *url) {
  if (!strcmp(url, "/mcp")) return mcp_post(s, q, c, method, url);
  const char *path = url + 3;   /* after "/v1" */
  char sandbox[80];
  /* raw files: /v1/sandboxes/{sandbox}/files/{path...} with GET or PUT */
  if (!strncmp(path, "/sandboxes/", 11) && (!strcmp(method, "GET") || !strcmp(method, "PUT"))) {
    const char *sb = path + 11, *slash = strchr(sb, '/');
    if (slash && !strncmp(slash, "/files/", 7) && slash[7] && (size_t) (slash - sb) < sizeof sandbox) {
      memcpy(sandbox, sb, (size_t) (slash - sb));
      sandbox[slash - sb] = 0;
      bool put = !strcmp(method, "PUT");
      return call_and_respond(s, q, c, method, url, an_api_op_find(put ? "write_file" : "read_file"), sandbox,
                              slash + 7, put);
    }
  }
  size_t n = 0;
  const struct an_api_op *ops = an_api_ops(&n);
  char allow[64] = "";
  for (size_t i = 0; i < n; i++) {
    if (!route_match(ops[i].http_path, path, sandbox, sizeof sandbox)) continue;
    if (!strcmp(ops[i].http_method, method))
      return call_and_respond(s, q, c, method, url, &ops[i],
                              strstr(ops[i].http_path, "{sandbox}") ? sandbox : NULL, NULL, false);
    if (strlen(allow) + strlen(ops[i].http_method) + 3 < sizeof allow)
      strcat(strcat(allow, *allow ? ", " : ""), ops[i].http_method);
  }
  if (*allow) return respond_error(s, q, c, method, url, 405, 0, NULL, "Allow", allow);
  return respond_error(s, q, c, method, url, 404, 0, "no such route (see /v1/openapi.json)", NULL, NULL);
}

enum MHD_Result srv_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                           const char *version, const char *upload, size_t *upload_size, void **con_cls) {
  struct srv *s = cls;
  struct srv_req *q = *con_cls;
  if (!q) {
    if (!(q = calloc(1, sizeof *q))) return MHD_NO;
    q->token = -1;
    *con_cls = q;
    if (!strcmp(url, "/v1/openapi.json")) {
      if (strcmp(method, "GET")) return respond_error(s, q, c, method, url, 405, 0, NULL, "Allow", "GET");
      char *doc = malloc(s->openapi_len);
      if (!doc) return MHD_NO;
      memcpy(doc, s->openapi, s->openapi_len);
      srv_log(s, q, method, url, 200);
      return respond(c, 200, "application/json", doc, s->openapi_len, NULL, NULL);
    }
    long t = srv_token_find(s, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"));
    if (t < 0)
      return respond_error(s, q, c, method, url, 401, 0, "missing or unknown bearer token", "WWW-Authenticate",
                           "Bearer realm=\"agentnest\"");
    q->token = t;
    if (s->tokens[t].revoked) return respond_error(s, q, c, method, url, 403, 0, "this token is revoked", NULL, NULL);
    if (!srv_conn_claim(s, c, t))
      return respond_error(s, q, c, method, url, 503, 0,
                           "this token holds its share of --max-connections (each token is promised one); "
                           "close idle connections or retry later", "Connection", "close");
    unsigned wait = srv_rate_take(s, t);
    if (wait) {
      char msg[96], after[16];
      snprintf(msg, sizeof msg, "over this token's max-rate=%u/s; retry later", s->tokens[t].max_rate);
      snprintf(after, sizeof after, "%u", wait);
      return respond_error(s, q, c, method, url, 429, 0, msg, "Retry-After", after);
    }
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > s->max_body)
      return respond_error(s, q, c, method, url, 413, EFBIG, "request body over --max-body", NULL, NULL);
    if (strncmp(url, "/v1/", 4) && strcmp(url, "/mcp"))
      return respond_error(s, q, c, method, url, 404, 0, "no such route (see /v1/openapi.json)", NULL, NULL);
    return MHD_YES;
  }
  if (*upload_size) {
    size_t n = *upload_size;
    *upload_size = 0;
    if (q->too_big || q->len + n > s->max_body) {
      q->too_big = true;   /* chunked bodies have no Content-Length: counted here */
      return MHD_YES;
    }
    if (q->len + n > q->cap) {
      size_t nc = q->cap ? q->cap : 4096;
      while (nc < q->len + n) nc *= 2;
      char *nb = realloc(q->body, nc + 1);
      if (!nb) return MHD_NO;
      q->body = nb;
      q->cap = nc;
    }
    memcpy(q->body + q->len, upload, n);
    q->len += n;
    return MHD_YES;
  }
  if (q->too_big) return respond_error(s, q, c, method, url, 413, EFBIG, "request body over --max-body", NULL, NULL);
  return route(s, q, c, method, url);
}

void srv_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t) {
  struct srv_req *q = *con_cls;
  if (!q) return;
  free(q->body);
  free(q);
  *con_cls = NULL;
}

void srv_destroy_all(struct srv *s) {
  const struct an_api_op *destroy = an_api_op_find("destroy");
  struct an_api_ctx ctx = s->ctx;
  ctx.may_use = NULL;
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < s->nown; i++) {
    char in[128], *out = NULL;
    an_error_t err = NULL;
    snprintf(in, sizeof in, "{\"sandbox\":\"%s\",\"grace_ms\":500}", s->own[i].id);
    an_api_call_sync(&ctx, destroy, in, strlen(in), -1, 0, &out, NULL, &err);
    free(out);
    an_error_free(&err);
    if (s->own[i].keeper > 0) kill(s->own[i].keeper, SIGKILL), waitpid(s->own[i].keeper, NULL, 0);
  }
  s->nown = 0;
  pthread_mutex_unlock(&s->mu);
}
