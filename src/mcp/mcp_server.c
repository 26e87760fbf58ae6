/* mcp/mcp_server.c — the MCP stdio server's loop (mcp.h): read
 * newline-delimited JSON-RPC messages, dispatch them, run tools/call in
 * worker jobs (agentnest/api.h) while still reading (pings and
 * cancellations are answered mid-call), send progress, and on the client's
 * departure destroy every sandbox this server made.  The method handlers
 * that need no job are in mcp_methods.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "mcp_internal.h"
#include "agentnest/sandbox.h"
#include "util/json_tree.h"

#define MAX_LINE (64u << 20)       /* one message: a write_file of up to ~48 MiB in base64 */

static bool may_use(void *data, const char *id) {
  struct mcp_server *s = data;
  for (size_t i = 0; i < s->nown; i++)
    if (!strcmp(s->own[i].id, id)) return true;
  return false;
}

static bool may_audit(void *data, const char *id) {
  struct mcp_server *s = data;
  for (size_t i = 0; i < s->ngone; i++)
    if (!strcmp(s->gone[i], id)) return true;
  return may_use(data, id);
}

static void own_add(struct mcp_server *s, const char *id, pid_t keeper) {
  if (s->nown == s->capown) {
    size_t nc = s->capown ? s->capown * 2 : 16;
    struct mcp_owned *n = realloc(s->own, nc * sizeof *n);
    if (!n) return;
    s->own = n;
    s->capown = nc;
  }
  snprintf(s->own[s->nown].id, sizeof s->own[s->nown].id, "%s", id);
  s->own[s->nown++].keeper = keeper;
}

static void keeper_end(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
}

/* Drop own[i]: its keeper ends; its id stays readable for audit (gone). */
static void own_drop(struct mcp_server *s, size_t i) {
  keeper_end(s->own[i].keeper);
  if (s->ngone == s->capgone) {
    size_t nc = s->capgone ? s->capgone * 2 : 16;
    char (*n)[16] = realloc(s->gone, nc * sizeof *n);
    if (n) s->gone = n, s->capgone = nc;
  }
  if (s->ngone < s->capgone) memcpy(s->gone[s->ngone++], s->own[i].id, 16);
  s->own[i] = s->own[--s->nown];
}

static void own_remove(struct mcp_server *s, const char *id) {
  for (size_t i = 0; i < s->nown; i++)
    if (!strcmp(s->own[i].id, id)) {
      own_drop(s, i);
      return;
    }
}

/* Forget owned sandboxes that ended on their own (lifetime, dead monitor): they no longer
 * count against --max-sandboxes (their destroy would answer "no such sandbox"). */
static void own_prune(struct mcp_server *s) {
  for (size_t i = 0; i < s->nown;) {
    struct an_sandbox *sb = NULL;
    an_error_t e = NULL;
    int r = an_sandbox_open_ctx(s->ctx.lib, s->ctx.store_root, s->own[i].id, &sb, &e);
    an_sandbox_close(sb);
    an_error_free(&e);
    if (r == -ENOENT || r == -ETIME || r == -ESRCH) own_drop(s, i);
    else i++;
  }
}

void mcp_log(struct mcp_server *s, const char *fmt, ...) {
  if (s->o->log_fd < 0) return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t) n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  if (write(s->o->log_fd, line, (size_t) n) < 0) {}
}

int mcp_send(struct mcp_server *s, yajl_gen g) {
  int r = rpc_send(g, s->o->out_fd);
  if (r < 0) s->client_gone = true;
  return r;
}

bool mcp_tool_allowed(const struct mcp_server *s, const char *name) {
  if (!s->o->allow_tools) return true;
  for (size_t i = 0; s->o->allow_tools[i]; i++)
    if (!strcmp(s->o->allow_tools[i], name)) return true;
  return false;
}

/* ---- tools/call -------------------------------------------------------------------------- */

static void gstr(yajl_gen g, const char *v) { yajl_gen_string(g, (const unsigned char *) v, strlen(v)); }

/* A tool result: structuredContent + the same JSON as text, or isError. */
static void send_tool_result(struct mcp_server *s, const struct rpc_id *id, const char *json,
                             size_t len, const char *error) {
  yajl_gen g = rpc_begin();
  if (!g) return;
  gstr(g, "id");
  rpc_id_gen(g, id);
  gstr(g, "result");
  yajl_gen_map_open(g);
  gstr(g, "content");
  yajl_gen_array_open(g);
  yajl_gen_map_open(g);
  gstr(g, "type");
  gstr(g, "text");
  gstr(g, "text");
  if (error) gstr(g, error);
  else yajl_gen_string(g, (const unsigned char *) json, len);
  yajl_gen_map_close(g);
  yajl_gen_array_close(g);
  if (!error) {
    yajl_val v = NULL;
    an_error_t err = NULL;
    gstr(g, "structuredContent");
    if (an_json_parse(json, len, "result", &v, &err) < 0) {
      an_error_free(&err);
      yajl_gen_map_open(g), yajl_gen_map_close(g);
    } else {
      an_api_gen_value(g, v);
      yajl_tree_free(v);
    }
  }
  gstr(g, "isError");
  yajl_gen_bool(g, error != NULL);
  yajl_gen_map_close(g);
  mcp_send(s, g);
}

void mcp_tool_error(struct mcp_server *s, const struct rpc_id *id, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  send_tool_result(s, id, NULL, 0, msg);
}

/* Calls in flight that hold a sandbox (a create not yet in own[], a one-shot run_code). */
static size_t pending_holds(const struct mcp_server *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->ncalls; i++) n += s->calls[i].holds;
  return n;
}

void mcp_tools_call(struct mcp_server *s, const struct rpc_id *id, yajl_val params) {
  const char *name = an_json_member_str(params, "name");
  const struct an_api_op *op = name ? an_api_op_find(name) : NULL;
  if (!op || !mcp_tool_allowed(s, name)) {
    char msg[300];
    snprintf(msg, sizeof msg, "Unknown tool: %.200s", name ? name : "(no name)");
    rpc_send_error(s->o->out_fd, id, RPC_INVALID_PARAMS, msg);
    return;
  }
  yajl_val args = an_json_member(params, "arguments");
  if (args && !YAJL_IS_OBJECT(args)) {
    mcp_tool_error(s, id, "%s: arguments must be an object", name);
    return;
  }
  if (s->ncalls >= MCP_MAX_CALLS) {
    mcp_tool_error(s, id, "%s: too many calls in flight (at most %d)", name, MCP_MAX_CALLS);
    return;
  }
  /* Admission: a call that holds a sandbox (a create, a fork, a one-shot
   * run_code) takes a slot of --max-sandboxes now, checked and reserved in
   * one step, and gives it back when it ends (a create's sandbox is in own[]
   * by then).  Over HTTP the front end's count across the client's
   * concurrent requests decides (admit). */
  bool holds = s->o->max_sandboxes && an_api_call_holds_sandbox(op, args);
  if (holds) {
    bool ok;
    if (s->admit) ok = s->admit(s->hook_data);
    else {
      own_prune(s);
      ok = s->nown + pending_holds(s) < s->o->max_sandboxes;
    }
    if (!ok) {
      mcp_tool_error(s, id, "%s: this server allows at most %zu sandboxes at once (--max-sandboxes); "
                     "destroy one first", name, s->o->max_sandboxes);
      return;
    }
  }
  /* the arguments as the job's input document */
  yajl_gen g = yajl_gen_alloc(NULL);
  const unsigned char *in = NULL;
  size_t inlen = 0;
  if (!g) {
    if (holds && s->release) s->release(s->hook_data);
    return;
  }
  if (args) an_api_gen_value(g, args);
  else yajl_gen_map_open(g), yajl_gen_map_close(g);
  yajl_gen_get_buf(g, &in, &inlen);
  struct mcp_call *c = &s->calls[s->ncalls];
  memset(c, 0, sizeof *c);
  an_error_t err = NULL;
  if (an_api_job_start(&s->ctx, op, (const char *) in, inlen, &c->job, &err) < 0) {
    if (holds && s->release) s->release(s->hook_data);
    yajl_gen_free(g);
    mcp_tool_error(s, id, "%s: %s", name, err ? err->msg : "cannot start");
    an_error_free(&err);
    return;
  }
  yajl_gen_free(g);
  c->op = op;
  c->holds = holds;
  c->id = (struct rpc_id){.present = id->present, .is_str = id->is_str, .text = id->text ? strdup(id->text) : NULL};
  yajl_val meta = an_json_member_type(params, "_meta", yajl_t_object);
  if (meta) rpc_id_copy(&c->token, an_json_member(meta, "progressToken"));
  c->next_progress_ms = 1000;
  s->ncalls++;
  mcp_log(s, "mcp: tools/call %s started", name);
}

void mcp_cancel(struct mcp_server *s, yajl_val request_id) {
  for (size_t i = 0; i < s->ncalls; i++)
    if (rpc_id_equal(&s->calls[i].id, request_id) && !s->calls[i].cancelled) {
      s->calls[i].cancelled = true;
      an_api_job_cancel(s->calls[i].job, 2000);
      mcp_log(s, "mcp: tools/call %s cancelled", s->calls[i].op->name);
    }
}

static void call_release(struct mcp_server *s, size_t i) {
  struct mcp_call *c = &s->calls[i];
  an_api_job_free(c->job);
  if (c->holds && s->release) s->release(s->hook_data);
  rpc_id_free(&c->id);
  rpc_id_free(&c->token);
  s->calls[i] = s->calls[--s->ncalls];
}

/* A job has its whole result: track what it created or destroyed, answer. */
static void call_done(struct mcp_server *s, size_t i) {
  struct mcp_call *c = &s->calls[i];
  char *out = NULL;
  size_t len = 0;
  pid_t keeper = 0;
  an_error_t err = NULL;
  int r = an_api_job_finish(c->job, &out, &len, &keeper, &err);
  if (r >= 0 && (c->op->flags & (AN_API_OP_CREATES | AN_API_OP_DESTROYS))) {
    yajl_val v = NULL;
    an_error_t e2 = NULL;
    if (an_json_parse(out, len, "result", &v, &e2) >= 0) {
      const char *sid = an_json_member_str(v, "id");
      if (sid && (c->op->flags & AN_API_OP_CREATES)) {
        if (s->on_created) s->on_created(s->hook_data, sid, keeper), own_add(s, sid, 0);
        else own_add(s, sid, keeper);
        keeper = 0;
      }
      if (sid && (c->op->flags & AN_API_OP_DESTROYS)) {
        own_remove(s, sid);
        if (s->on_destroyed) s->on_destroyed(s->hook_data, sid);
      }
      yajl_tree_free(v);
    }
    an_error_free(&e2);
  }
  keeper_end(keeper);   /* a keeper of a sandbox that could not be tracked */
  mcp_log(s, "mcp: tools/call %s %s after %llu ms", c->op->name,
          c->cancelled ? "cancelled" : r >= 0 ? "ok" : "failed",
          (unsigned long long) an_api_job_elapsed_ms(c->job));
  /* a cancelled request gets no response (MCP cancellation) */
  if (!c->cancelled) {
    if (r >= 0) send_tool_result(s, &c->id, out, len, NULL);
    else mcp_tool_error(s, &c->id, "%s: %s", c->op->name, err && err->msg ? err->msg : "failed");
  }
  free(out);
  an_error_free(&err);
  call_release(s, i);
}

static void send_progress(struct mcp_server *s, struct mcp_call *c) {
  uint64_t el = an_api_job_elapsed_ms(c->job);
  if (s->no_progress || !c->token.present || c->cancelled || el < c->next_progress_ms) return;
  c->next_progress_ms = el + 1000;
  c->progress++;
  yajl_gen g = rpc_begin();
  if (!g) return;
  gstr(g, "method");
  gstr(g, "notifications/progress");
  gstr(g, "params");
  yajl_gen_map_open(g);
  gstr(g, "progressToken");
  rpc_id_gen(g, &c->token);
  gstr(g, "progress");
  yajl_gen_integer(g, c->progress);
  char msg[128];
  snprintf(msg, sizeof msg, "%s running for %llu s", c->op->name, (unsigned long long) (el / 1000));
  gstr(g, "message");
  gstr(g, msg);
  yajl_gen_map_close(g);
  mcp_send(s, g);
}

/* Run the calls in flight to their end (the Streamable HTTP transport: one
 * request, its response); cancelled when cancel_fd reports cancel_events. */
void mcp_finish_calls(struct mcp_server *s, int cancel_fd, short cancel_events) {
  while (s->ncalls) {
    struct pollfd p[MCP_MAX_CALLS + 1];
    for (size_t i = 0; i < s->ncalls; i++) p[i] = (struct pollfd){.fd = an_api_job_fd(s->calls[i].job), .events = POLLIN};
    p[s->ncalls] = (struct pollfd){.fd = cancel_fd, .events = cancel_events};
    int n = poll(p, s->ncalls + (cancel_fd >= 0), 500);
    bool gone = n > 0 && cancel_fd >= 0 && (p[s->ncalls].revents & (cancel_events | POLLHUP | POLLERR));
    for (size_t i = s->ncalls; i-- > 0;) {
      if (gone && !s->calls[i].cancelled) s->calls[i].cancelled = true, an_api_job_cancel(s->calls[i].job, 2000);
      an_error_t e = NULL;
      int r = an_api_job_pump(s->calls[i].job, &e);
      an_error_free(&e);
      an_api_job_tick(s->calls[i].job);
      if (r != 0) call_done(s, i);
    }
  }
}

/* ---- the loop ---------------------------------------------------------------------------- */

static void read_input(struct mcp_server *s) {
  for (;;) {
    if (s->incap - s->inlen < 65536) {
      size_t nc = s->incap ? s->incap * 2 : 131072;
      char *nb = realloc(s->in, nc + 1);
      if (!nb) { s->eof = true; return; }
      s->in = nb;
      s->incap = nc;
    }
    ssize_t n = read(s->o->in_fd, s->in + s->inlen, s->incap - s->inlen);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (n <= 0) { s->eof = true; break; }
    s->inlen += (size_t) n;
    if ((size_t) n < 65536) break;
  }
  /* every complete line is one message */
  size_t start = 0;
  for (size_t i = 0; i < s->inlen; i++) {
    if (s->in[i] != '\n') continue;
    s->in[i] = 0;
    if (!s->skipping && i > start) mcp_handle_message(s, s->in + start, i - start);
    s->skipping = false;
    start = i + 1;
  }
  memmove(s->in, s->in + start, s->inlen - start);
  s->inlen -= start;
  if (s->inlen > MAX_LINE) {
    rpc_send_error(s->o->out_fd, NULL, RPC_PARSE_ERROR, "message over 64 MiB");
    s->inlen = 0;
    s->skipping = true;
  }
}

static void destroy_owned(struct mcp_server *s) {
  const struct an_api_op *destroy = an_api_op_find("destroy");
  struct an_api_ctx ctx = s->ctx;
  ctx.may_use = NULL;
  for (size_t i = 0; i < s->nown; i++) {
    char in[128], *out = NULL;
    an_error_t err = NULL;
    snprintf(in, sizeof in, "{\"sandbox\":\"%s\",\"grace_ms\":500}", s->own[i].id);
    if (an_api_call_sync(&ctx, destroy, in, strlen(in), -1, 0, &out, NULL, &err) < 0)
      mcp_log(s, "mcp: destroy %s: %s (its monitor ends it with its owner)", s->own[i].id,
              err && err->msg ? err->msg : "failed");
    else mcp_log(s, "mcp: destroyed %s", s->own[i].id);
    free(out);
    an_error_free(&err);
  }
}

int an_mcp_serve(const struct an_mcp_opts *o, an_error_t *err) {
  struct mcp_server s = {.o = o, .ctx = o->api};
  int lifeline[2];
  if (pipe2(lifeline, O_CLOEXEC) < 0) return an_error_set(err, errno, "mcp: lifeline pipe");
  s.ctx.lifeline_fd = lifeline[0];
  s.ctx.may_use = may_use;
  s.ctx.may_use_data = &s;
  s.ctx.may_audit = may_audit;
  s.ctx.may_audit_data = &s;
  sigset_t sigs, old;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGHUP);
  sigprocmask(SIG_BLOCK, &sigs, &old);
  int sigfd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
  struct sigaction ign = {.sa_handler = SIG_IGN}, oldpipe;
  sigaction(SIGPIPE, &ign, &oldpipe);
  int fl = fcntl(o->in_fd, F_GETFL);
  if (fl >= 0) fcntl(o->in_fd, F_SETFL, fl | O_NONBLOCK);
  mcp_log(&s, "mcp: serving %s on stdio", an_mcp_versions[0]);

  while (!s.eof && !s.client_gone && !s.signalled) {
    struct pollfd p[MCP_MAX_CALLS + 2];
    p[0] = (struct pollfd){.fd = o->in_fd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = sigfd, .events = POLLIN};
    for (size_t i = 0; i < s.ncalls; i++) p[2 + i] = (struct pollfd){.fd = an_api_job_fd(s.calls[i].job), .events = POLLIN};
    int n = poll(p, 2 + s.ncalls, s.ncalls ? 200 : -1);
    if (n < 0 && errno != EINTR) break;
    if (n > 0 && p[1].revents) {
      struct signalfd_siginfo si;   /* consumed: not delivered when the mask is restored */
      while (read(sigfd, &si, sizeof si) == (ssize_t) sizeof si) s.signalled = true;
    }
    if (n > 0 && p[0].revents) read_input(&s);
    for (size_t i = s.ncalls; i-- > 0;) {
      an_error_t e = NULL;
      int r = an_api_job_pump(s.calls[i].job, &e);
      an_error_free(&e);
      an_api_job_tick(s.calls[i].job);
      if (r != 0) call_done(&s, i);
      else send_progress(&s, &s.calls[i]);
    }
  }
  mcp_log(&s, "mcp: client gone (%s): ending %zu call(s), destroying %zu sandbox(es)",
          s.signalled ? "signal" : s.client_gone ? "output closed" : "end of input", s.ncalls, s.nown);
  /* calls in flight end now; what a create finished meanwhile is tracked */
  for (size_t i = s.ncalls; i-- > 0;) {
    s.calls[i].cancelled = true;
    an_api_job_cancel(s.calls[i].job, 0);
    an_api_job_tick(s.calls[i].job);
    call_done(&s, i);
  }
  destroy_owned(&s);
  close(lifeline[1]);   /* keepers read EOF and exit */
  for (size_t i = 0; i < s.nown; i++)
    while (s.own[i].keeper > 0 && waitpid(s.own[i].keeper, NULL, 0) < 0 && errno == EINTR) {}
  close(lifeline[0]);
  free(s.own);
  free(s.gone);
  free(s.in);
  if (sigfd >= 0) close(sigfd);
  sigaction(SIGPIPE, &oldpipe, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return 0;
}
