/* sandbox/session_run.c — one call of a session (agentnest/session.h
 * an_session_run), in the caller's process: borrow the session's fds from
 * the monitor, send the code, capture stdout/stderr (caps, redaction:
 * output.c) until the result frame comes, interrupt at the timeout
 * (SIGINT to the session's cgroup), declare the session lost after the
 * grace.  The value and error strings are redacted as the output is. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "sandbox/audit_internal.h"
#include "sandbox/control.h"
#include "sandbox/sandbox_internal.h"
#include "sandbox/session_internal.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

struct strbuf {
  char *p;
  size_t len, cap, max;
};

static int sb_sink(void *data, const char *buf, size_t len) {
  struct strbuf *b = data;
  if (b->len + len > b->max) len = b->max - b->len;
  if (b->len + len + 1 > b->cap) {
    size_t cap = (b->len + len + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) return -ENOMEM;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, buf, len);
  b->len += len;
  b->p[b->len] = '\0';
  return 0;
}

/* A redacted heap copy of s (at most max bytes), or NULL for NULL. */
static int redacted(const struct an_secret *sec, size_t nsec, const char *s, size_t max, char **out,
                    an_error_t *err) {
  *out = NULL;
  if (!s) return 0;
  an_redactor_t *r = NULL;
  if (an_redactor_new(sec, nsec, &r, err) < 0) return -EINVAL;
  struct strbuf b = {.max = max};
  int rc = sb_sink(&b, "", 0);
  if (rc == 0) rc = an_redactor_feed(r, s, strlen(s), sb_sink, &b);
  if (rc == 0) rc = an_redactor_flush(r, sb_sink, &b);
  an_redactor_free(r);
  if (rc < 0) {
    free(b.p);
    return an_error_set(err, ENOMEM, "session result: redaction");
  }
  *out = b.p;
  return 0;
}

struct call {
  struct an_sandbox *sb;
  const char *name;
  int sock, out, err;
  struct an_cgroup *cg;
  struct an_ctl_reader rd;
  an_output_capture_t *cap;
  uint64_t id;
  enum an_session_kind kind;
  bool broken;      /* the helper broke the framing */
};

static void drain(struct call *c, int fd, enum an_stream st) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    an_error_t e = NULL;
    an_output_capture_feed(c->cap, st, buf, (size_t) n, &e);
    an_error_free(&e);
  }
}

enum wait_end { GOT_RESULT, HELPER_GONE, TIMER, CANCEL };

/* Wait for a result frame (any id when want_id is 0), feeding output into
 * the capture, until the timer or cancel fd fires. */
static int wait_result(struct call *c, uint64_t want_id, int tfd, int cancel_fd, yajl_val *doc,
                       enum wait_end *end, an_error_t *err) {
  /* want_id 0 (an abandoned call): the helper's "idle" frame (a SIGINT that
   * found it waiting for a request) ends the wait too */
  *doc = NULL;
  for (;;) {
    char *payload = NULL;
    size_t len = 0;
    int r = an_ctl_reader_next(&c->rd, "the session's helper", &payload, &len, err);
    if (r < 0) {
      /* the sandbox wrote there (it can): the session is not to be trusted
       * any more, nothing else is affected */
      an_error_free(err);
      an_error_t e = NULL;
      an_cgroup_kill(c->cg, SIGKILL, &e);
      an_error_free(&e);
      c->broken = true;
      *end = HELPER_GONE;
      return 0;
    }
    if (r > 0) {
      yajl_val d = NULL;
      an_error_t e = NULL;
      r = an_json_parse(payload, len, "", &d, &e);
      free(payload);
      an_error_free(&e);
      if (r < 0) continue;  /* not ours to trust: the sandbox can write there */
      const char *type = an_json_member_str(d, "type");
      int64_t id = 0;
      if ((!want_id && type && !strcmp(type, "idle")) ||
          (type && !strcmp(type, "result") &&
           an_json_get_i64(an_json_member(d, "id"), "id", 0, INT64_MAX, &id, &e) == 0 &&
           (!want_id || (uint64_t) id == want_id))) {
        *doc = d;
        *end = GOT_RESULT;
        drain(c, c->out, AN_STREAM_STDOUT);
        drain(c, c->err, AN_STREAM_STDERR);
        return 0;
      }
      an_error_free(&e);
      yajl_tree_free(d);
      continue;
    }
    if (c->rd.eof) {
      drain(c, c->out, AN_STREAM_STDOUT);
      drain(c, c->err, AN_STREAM_STDERR);
      *end = HELPER_GONE;
      return 0;
    }
    struct pollfd p[5] = {{.fd = c->sock, .events = POLLIN}, {.fd = c->out, .events = POLLIN},
                          {.fd = c->err, .events = POLLIN}, {.fd = tfd, .events = POLLIN},
                          {.fd = cancel_fd, .events = POLLIN}};
    if (poll(p, 5, -1) < 0) {
      if (errno == EINTR) continue;
      return an_error_set(err, errno, "session %s: poll", c->name);
    }
    if (p[1].revents) drain(c, c->out, AN_STREAM_STDOUT);
    if (p[2].revents) drain(c, c->err, AN_STREAM_STDERR);
    if (p[0].revents) {
      r = an_ctl_reader_fill(&c->rd, err);
      if (r < 0 && r != -EAGAIN) {
        an_error_free(err);
        c->rd.eof = true;
      }
      continue;
    }
    if (p[3].revents) {
      uint64_t t;
      if (read(tfd, &t, sizeof t) < 0) {}
      *end = TIMER;
      return 0;
    }
    if (p[4].revents) {
      *end = CANCEL;
      return 0;
    }
  }
}

static void arm(int tfd, uint64_t ms) {
  struct itimerspec its = {.it_value = {.tv_sec = (time_t) (ms / 1000), .tv_nsec = (long) (ms % 1000) * 1000000}};
  if (!ms) its.it_value.tv_nsec = 1;
  timerfd_settime(tfd, 0, &its, NULL);
}

static char *member_dup(yajl_val v, const char *k) {
  const char *s = an_json_member_str(v, k);
  return s ? strdup(s) : NULL;
}

/* The code as the request: a JSON frame for Python, shell text for sh. */
static int build_request(enum an_session_kind kind, uint64_t id, const char *code, size_t len,
                         char **out, size_t *outlen, an_error_t *err) {
  if (kind == AN_SESSION_PYTHON) {
    cleanup_jgen struct an_jgen j;
    an_jgen_init(&j, false);
    an_jgen_validate_utf8(&j);
    an_jgen_map_open(&j);
    an_jgen_kv_u64(&j, "id", id);
    an_jgen_key(&j, "code");
    if (j.g) an_jgen_check(&j, yajl_gen_string(j.g, (const unsigned char *) code, len));
    an_jgen_map_close(&j);
    cleanup_free char *doc = NULL;
    size_t dl = 0;
    if (an_jgen_finish(&j, &doc, &dl) < 0)
      return an_error_set(err, EINVAL, "session code: not valid UTF-8 (Python source must be)");
    if (asprintf(out, "%zu:%s,", dl, doc) < 0) return an_error_set(err, ENOMEM, "session request");
    *outlen = strlen(*out);
    return 0;
  }
  /* command eval 'CODE' with every ' as '\'' */
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n += code[i] == '\'' ? 4 : 1;
  static const char tail_fmt[] =
      "' </dev/null; __an_r=\"{\\\"id\\\":%llu,\\\"type\\\":\\\"result\\\",\\\"status\\\":$?}\"; "
      "printf '%%d:%%s,' \"${#__an_r}\" \"$__an_r\" >&0\n";
  char tail[256];
  snprintf(tail, sizeof tail, tail_fmt, (unsigned long long) id);
  static const char head[] = "command eval '";
  char *s = malloc(sizeof head + n + strlen(tail) + 1);
  if (!s) return an_error_set(err, ENOMEM, "session request");
  char *w = stpcpy(s, head);
  for (size_t i = 0; i < len; i++) {
    if (code[i] == '\'') w = stpcpy(w, "'\\''");
    else *w++ = code[i];
  }
  w = stpcpy(w, tail);
  *out = s;
  *outlen = (size_t) (w - s);
  return 0;
}

/* Interrupt, then wait up to the grace; false when nothing came back (the
 * session is then killed). */
static bool interrupt(struct call *c, uint64_t want, int tfd, uint64_t grace_ms, const char *probe,
                      yajl_val *doc, enum wait_end *end, an_error_t *err) {
  an_error_t e = NULL;
  an_cgroup_kill(c->cg, SIGINT, &e);
  an_error_free(&e);
  if (probe && an_ctl_write_all(c->sock, probe, strlen(probe), &e) < 0) an_error_free(&e);
  /* sh: a SIGINT that came before the foreground command was forked only
   * ran the trap; send it again every 100 ms (the trap makes repeats
   * harmless).  Python gets one: a second KeyboardInterrupt could hit the
   * helper's own handling of the first. */
  uint64_t t0 = an_mono_ms();
  for (;;) {
    uint64_t spent = an_mono_ms() - t0;
    uint64_t slice = grace_ms > spent ? grace_ms - spent : 0;
    if (c->kind == AN_SESSION_SHELL && slice > 100) slice = 100;
    arm(tfd, slice);
    if (wait_result(c, want, tfd, -1, doc, end, err) < 0) {
      an_error_free(err);
      *end = HELPER_GONE;
    }
    if (*end != TIMER || an_mono_ms() - t0 >= grace_ms) break;
    an_cgroup_kill(c->cg, SIGINT, &e);
    an_error_free(&e);
  }
  if (*end == GOT_RESULT) return true;
  an_cgroup_kill(c->cg, SIGKILL, &e);
  an_error_free(&e);
  return false;
}

static void lost(struct an_session_result *res, const char *why) {
  res->session_lost = true;
  res->status = 125;
  free(res->lost_reason);
  res->lost_reason = strdup(why);
}

static int session_run_impl(struct an_sandbox *sb, const char *name, const char *code, size_t len,
                            const struct an_session_run_opts *ro, struct an_session_result *res,
                            an_error_t *err) {
  static const struct an_session_run_opts none;
  if (!ro) ro = &none;
  if (!sb || !res || !code) return an_error_set(err, EINVAL, "session run: no sandbox, code or result");
  memset(res, 0, sizeof *res);
  if (!an_session_valid_name(name))
    return an_error_set(err, ENOENT, "sandbox %s: no session \"%.40s\"", sb->rec.id, name ? name : "");
  if (memchr(code, '\0', len)) return an_error_set(err, EINVAL, "session code holds a NUL byte");
  if (len > AN_CTL_MAX_FRAME / 2) return an_error_set(err, EINVAL, "session code: %zu bytes, more than %zu", len, AN_CTL_MAX_FRAME / 2);
  uint64_t now = an_sb_now_ms();
  if (sb->rec.deadline_ms && now >= sb->rec.deadline_ms) return an_error_set(err, ETIME, "sandbox %s expired", sb->rec.id);
  uint64_t remaining = sb->rec.deadline_ms ? sb->rec.deadline_ms - now : UINT64_MAX;
  uint64_t timeout = ro->timeout_ms ? ro->timeout_ms : an_sandbox_opts_exec_timeout(sb->opts);
  if (!timeout || timeout > remaining) timeout = remaining;
  uint64_t grace = ro->grace_ms ? ro->grace_ms : AN_SESSION_DEFAULT_GRACE_MS;
  uint64_t t0 = an_mono_ms();

  const struct an_secret *sec = NULL;
  size_t nsec = 0;
  cleanup_free struct an_secret *own = NULL;
  static const struct an_exec_opts no_eo;
  int r = an_sb_exec_secrets(sb, &no_eo, &sec, &nsec, &own, err);
  if (r < 0) return r;
  if ((r = an_sb_ensure_cgroup(sb, err)) < 0) return r;

  struct call c = {.sb = sb, .name = name, .sock = -1, .out = -1, .err = -1};
  cleanup_close int conn = -1;
  cleanup_close int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (tfd < 0) return an_error_set(err, errno, "session: timerfd");
  int fds[3] = {-1, -1, -1};
  enum an_session_kind kind;
  bool dirty = false;
  if ((r = an_session_attach(sb, name, &conn, fds, &kind, &dirty, err)) < 0) return r;
  c.kind = kind;
  c.sock = fds[0];
  c.out = fds[1];
  c.err = fds[2];
  fcntl(c.out, F_SETFL, O_NONBLOCK);
  fcntl(c.err, F_SETFL, O_NONBLOCK);
  an_ctl_reader_init(&c.rd, c.sock);
  char cgname[64];
  snprintf(cgname, sizeof cgname, AN_SESSION_CGROUP_PREFIX "%s", name);
  yajl_val doc = NULL;
  cleanup_free char *req = NULL;
  size_t reqlen = 0;
  enum wait_end end = GOT_RESULT;
  struct an_output_opts oo = {
    .max_total = ro->max_output ? ro->max_output : (size_t) an_sandbox_opts_max_output(sb->opts),
    .secrets = sec, .nsecrets = nsec, .on_data = ro->on_data, .on_data_arg = ro->on_data_arg};
  if ((r = an_cgroup_open_child(sb->cg, cgname, &c.cg, err)) < 0) goto out;
  if ((r = an_output_capture_new(&oo, &c.cap, err)) < 0) goto out;
  /* random: the helper reads its request, and an id made of the caller's
   * pid and CLOCK_MONOTONIC told the sandbox a host pid and the host's
   * uptime (its own clock is in a time namespace) */
  if (getrandom(&c.id, sizeof c.id, 0) != (ssize_t) sizeof c.id) {
    r = an_error_set(err, errno ? errno : EIO, "session %s: getrandom", name);
    goto out;
  }
  c.id &= (UINT64_C(1) << 53) - 1;   /* exact in every JSON reader */
  if (!c.id) c.id = 1;
  if ((r = build_request(kind, c.id, code, len, &req, &reqlen, err)) < 0) goto out;

  if (dirty) {
    /* the last caller died mid-call: end what it left first */
    an_output_capture_t *keep = c.cap;
    struct an_output_opts quiet = {.max_total = 1};
    if (an_output_capture_new(&quiet, &c.cap, err) < 0) { c.cap = keep; r = -ENOMEM; goto out; }
    /* an idle sh runs its SIGINT trap only once it reads a command: give
     * it one that says "idle" (queued after an old call that still runs) */
    static const char shell_probe[] = "printf '%s' '15:{\"type\":\"idle\"},' >&0\n";
    bool ok = interrupt(&c, 0, tfd, grace, kind == AN_SESSION_SHELL ? shell_probe : NULL, &doc, &end, err);
    an_output_capture_free(c.cap);
    c.cap = keep;
    yajl_tree_free(doc);
    doc = NULL;
    if (!ok) {
      lost(res, "an earlier call whose caller died did not stop within the grace period");
      goto finish;
    }
  }
  if ((r = an_ctl_write_all(c.sock, req, reqlen, err)) < 0) {
    an_error_free(err);
    r = 0;
    lost(res, "the session's helper is gone");
    goto finish;
  }
  arm(tfd, timeout == UINT64_MAX ? 0 : timeout);
  if (timeout == UINT64_MAX) {
    struct itimerspec off = {0};
    timerfd_settime(tfd, 0, &off, NULL);
  }
  if ((r = wait_result(&c, c.id, tfd, ro->has_cancel_fd ? ro->cancel_fd : -1, &doc, &end, err)) < 0) goto out;
  if (end == TIMER || end == CANCEL) {
    if (end == TIMER) res->timed_out = true;
    else res->cancelled = true;
    if (!interrupt(&c, c.id, tfd, grace, NULL, &doc, &end, err))
      lost(res, "the call did not stop within the grace period after SIGINT");
  } else if (end == HELPER_GONE) {
    lost(res, c.broken ? "the session broke the framing of its socket (killed)" : "the session's helper exited");
  }
finish:
  if (doc && !res->session_lost) {
    int64_t st = 0;
    an_error_t e = NULL;
    if (an_json_get_i64(an_json_member(doc, "status"), "status", 0, 255, &st, &e) < 0) st = 1;
    an_error_free(&e);
    res->status = (int) st;
    yajl_val v = an_json_member_type(doc, "value", yajl_t_object);
    yajl_val er = an_json_member_type(doc, "error", yajl_t_object);
    size_t max = oo.max_total ? oo.max_total : AN_OUTPUT_DEFAULT_MAX_BYTES;
    cleanup_free char *vr = member_dup(v, "repr"), *vj = member_dup(v, "json"),
                      *et = member_dup(er, "type"), *em = member_dup(er, "message"),
                      *tb = member_dup(er, "traceback");
    if ((r = redacted(sec, nsec, vr, max, &res->value_repr, err)) < 0 ||
        (r = redacted(sec, nsec, vj, max, &res->value_json, err)) < 0 ||
        (r = redacted(sec, nsec, et, 256, &res->error_type, err)) < 0 ||
        (r = redacted(sec, nsec, em, max, &res->error_message, err)) < 0 ||
        (r = redacted(sec, nsec, tb, max, &res->error_traceback, err)) < 0)
      goto out;
    if (res->timed_out) res->status = AN_EXEC_STATUS_TIMED_OUT;
    else if (res->cancelled) res->status = 128 + SIGINT;
  }
  if ((r = an_output_capture_finish(c.cap, &res->output, err)) < 0) goto out;
  if (res->session_lost) {
    /* the monitor forgets it now, not when it notices the exit */
    close(conn);
    conn = -1;
    an_error_t e = NULL;
    cleanup_jgen struct an_jgen j;
    an_jgen_init(&j, false);
    an_jgen_map_open(&j);
    an_jgen_kv_str(&j, "op", "session.stop");
    an_jgen_kv_str(&j, "name", name);
    an_jgen_map_close(&j);
    cleanup_free char *stop = NULL;
    if (an_jgen_finish(&j, &stop, NULL) == 0) an_ctl_call_once(sb->dir, sb->rec.id, stop, NULL, &e);
    an_error_free(&e);
  } else {
    an_session_done(conn, name);
  }
  r = 0;
out:
  yajl_tree_free(doc);
  an_ctl_reader_release(&c.rd);
  if (c.cap) an_output_capture_free(c.cap);
  an_cgroup_free(c.cg);
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) close(fds[i]);
  res->duration_ms = an_mono_ms() - t0;
  if (r < 0) {
    an_session_result_release(res);
    return r;
  }
  an_sb_event(sb->dir, "session_call",
              ",\"session\":\"%s\",\"status\":%d,\"timed_out\":%s,\"session_lost\":%s,\"duration_ms\":%llu",
              name, res->status, res->timed_out ? "true" : "false", res->session_lost ? "true" : "false",
              (unsigned long long) res->duration_ms);
  return 0;
}

/* The public call: asked of the sandbox's approval hook first (the code is
 * the request's argument, redacted), recorded in the audit log after. */
int an_session_run(struct an_sandbox *sb, const char *name, const char *code, size_t len,
                   const struct an_session_run_opts *ro, struct an_session_result *res,
                   an_error_t *err) {
  if (!sb || !res || !code) return an_error_set(err, EINVAL, "session run: no sandbox, code or result");
  memset(res, 0, sizeof *res);
  if (memchr(code, '\0', len)) return an_error_set(err, EINVAL, "session code holds a NUL byte");
  cleanup_free char *text = strndup(code, len);
  if (!text) return an_error_set(err, ENOMEM, "session run");
  struct an_audit_field af[] = {AN_AUDIT_STR("session", name), AN_AUDIT_STR("code", text),
                                AN_AUDIT_INT("timeout_ms", ro ? ro->timeout_ms : 0)};
  int r = an_approval_checkv(sb, "session_run", af, sizeof af / sizeof *af, err);
  if (r < 0) return r;
  r = session_run_impl(sb, name, code, len, ro, res, err);
  struct an_audit_field rf[] = {af[0], af[1], af[2], AN_AUDIT_INT("status", r >= 0 ? res->status : -1),
                                AN_AUDIT_BOOL("timed_out", r >= 0 && res->timed_out),
                                AN_AUDIT_BOOL("session_lost", r >= 0 && res->session_lost)};
  an_sb_audit(sb, NULL, NULL, "session_run", r, err, rf, sizeof rf / sizeof *rf);
  return r;
}
