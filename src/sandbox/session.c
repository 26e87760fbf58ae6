/* sandbox/session.c — sessions (agentnest/session.h), the caller's side of
 * everything but a call: names and kinds, the helpers' argv, start (and
 * the wait for the helper's "ready"), list, stop, and the JSON of a
 * result.  A call is session_run.c; the monitor's ops monitor_session.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agentnest/approval.h"
#include "agentnest/audit.h"
#include "sandbox/audit_internal.h"
#include "sandbox/control.h"
#include "sandbox/sandbox_internal.h"
#include "sandbox/session_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

const char *an_session_kind_name(enum an_session_kind kind) {
  return kind == AN_SESSION_PYTHON ? "python" : kind == AN_SESSION_SHELL ? "shell" : NULL;
}

int an_session_kind_parse(const char *s, enum an_session_kind *kind, an_error_t *err) {
  if (s && !strcmp(s, "python")) *kind = AN_SESSION_PYTHON;
  else if (s && !strcmp(s, "shell")) *kind = AN_SESSION_SHELL;
  else return an_error_set(err, EINVAL, "session kind \"%.32s\": not python or shell", s ? s : "");
  return 0;
}

bool an_session_valid_name(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (!n || n > AN_SESSION_NAME_MAX || name[0] == '.' || name[0] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  }
  return true;
}

void an_session_helper_argv(enum an_session_kind kind, const char *argv[5]) {
  if (kind == AN_SESSION_PYTHON) {
    argv[0] = "python3";
    argv[1] = "-u";
    argv[2] = "-c";
    argv[3] = an_session_python_helper;
    argv[4] = NULL;
  } else {
    argv[0] = "sh";
    argv[1] = NULL;
  }
}

/* What the shell reads first: keep it alive on SIGINT (the foreground
 * command still dies of it) and say "idle" then (so that a caller ending an
 * abandoned call learns the shell is waiting), then say ready. */
static const char shell_prologue[] =
    "trap \"printf '%s' '15:{\\\"type\\\":\\\"idle\\\"},' >&0\" INT\n"
    "printf '%s' '16:{\"type\":\"ready\"},' >&0\n";

static int ctl_what(const struct an_sandbox *sb, char *buf, size_t len) {
  return snprintf(buf, len, "the monitor of sandbox %s", sb->rec.id);
}

/* One request built by `fill` (members after "op"), one reply. */
static int request(struct an_sandbox *sb, const char *op, const char *name, const char *kind,
                   yajl_val *reply, an_error_t *err) {
  if (!sb->rec.monitor_pid)
    return an_error_set(err, ESRCH, "sandbox %s has no monitor (a one-shot sandbox has no sessions)",
                        sb->rec.id);
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "op", op);
  if (name) an_jgen_kv_str(&j, "name", name);
  if (kind) an_jgen_kv_str(&j, "kind", kind);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  if (an_jgen_finish(&j, &doc, NULL) < 0) return an_error_set(err, ENOMEM, "%s: request", op);
  return an_ctl_call_once(sb->dir, sb->rec.id, doc, reply, err);
}

int an_session_attach(struct an_sandbox *sb, const char *name, int *conn, int fds[3],
                      enum an_session_kind *kind, bool *dirty, an_error_t *err) {
  if (!sb->rec.monitor_pid)
    return an_error_set(err, ESRCH, "sandbox %s has no monitor (a one-shot sandbox has no sessions)",
                        sb->rec.id);
  cleanup_close int fd = an_ctl_connect(sb->dir, sb->rec.id, err);
  if (fd < 0) return fd;
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "op", "session.attach");
  an_jgen_kv_str(&j, "name", name);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  if (an_jgen_finish(&j, &doc, NULL) < 0) return an_error_set(err, ENOMEM, "session.attach: request");
  char what[64];
  ctl_what(sb, what, sizeof what);
  yajl_val reply = NULL;
  int got[AN_CTL_MAX_FDS];
  size_t n = 0;
  int r = an_ctl_call(fd, what, doc, &reply, got, &n, err);
  if (r < 0) return r;
  r = an_session_kind_parse(an_json_member_str(reply, "kind"), kind, err);
  *dirty = YAJL_IS_TRUE(an_json_member(reply, "dirty"));
  yajl_tree_free(reply);
  if (r == 0 && n != 3) r = an_error_set(err, EPROTO, "%s: session.attach passed %zu fds, not 3", what, n);
  if (r < 0) {
    for (size_t i = 0; i < n; i++) close(got[i]);
    return r;
  }
  for (int i = 0; i < 3; i++) fds[i] = got[i];
  *conn = an_steal_fd(&fd);
  return 0;
}

void an_session_done(int conn, const char *name) {
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_str(&j, "op", "session.done");
  an_jgen_kv_str(&j, "name", name);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  an_error_t e = NULL;
  if (an_jgen_finish(&j, &doc, NULL) == 0) an_ctl_call(conn, "the monitor", doc, NULL, NULL, NULL, &e);
  an_error_free(&e);
}

/* A session request whose monitor connection broke, or whose helper
 * could not be reached or started, because the sandbox ended meanwhile
 * (destroyed, its pid 1 or monitor exited) says so, ESRCH, in the
 * session's words, instead of the channel's ECONNRESET or EPIPE (red-team
 * rt8: session start racing destroy) or the helper's start "ended while
 * the command was being started" (new-user nu9). */
static int session_ended(const struct an_sandbox *sb, const char *doing, int r, an_error_t *err) {
  if ((r != -EPIPE && r != -ECONNRESET && r != -ECONNREFUSED && r != -ENOENT && r != -ESRCH) ||
      !an_sb_ended(sb->dir))
    return r;
  an_error_free(err);
  return an_error_set(err, ESRCH, "sandbox %s ended while %s (destroyed, or its pid 1 or monitor exited)",
                      sb->rec.id, doing);
}

static int session_start_impl(struct an_sandbox *sb, enum an_session_kind kind, const char *name,
                              uint64_t timeout_ms, char **name_out, an_error_t *err) {
  if (name_out) *name_out = NULL;
  if (!sb) return an_error_set(err, EINVAL, "session start: no sandbox");
  if (!an_session_kind_name(kind)) return an_error_set(err, EINVAL, "session start: bad kind %d", (int) kind);
  if (name && !an_session_valid_name(name))
    return an_error_set(err, EINVAL, "session name \"%.40s\": 1 to %d of A-Z a-z 0-9 _ . -, "
                        "not starting with . or -", name, AN_SESSION_NAME_MAX);
  yajl_val reply = NULL;
  int r = request(sb, "session.start", name, an_session_kind_name(kind), &reply, err);
  if (r < 0) return session_ended(sb, "the session was being started", r, err);
  const char *got = an_json_member_str(reply, "name");
  cleanup_free char *nm = got ? strdup(got) : NULL;
  yajl_tree_free(reply);
  if (!nm) return an_error_set(err, EPROTO, "sandbox %s: session.start named no session", sb->rec.id);

  /* ready: the helper runs and reads its socket */
  int conn = -1, fds[3] = {-1, -1, -1};
  enum an_session_kind k;
  bool dirty;
  if ((r = an_session_attach(sb, nm, &conn, fds, &k, &dirty, err)) < 0) goto fail;
  if (kind == AN_SESSION_SHELL && (r = an_ctl_write_all(fds[0], shell_prologue, strlen(shell_prologue), err)) < 0)
    goto fail;
  struct an_ctl_reader rd;
  an_ctl_reader_init(&rd, fds[0]);
  yajl_val doc = NULL;
  char what[96];
  snprintf(what, sizeof what, "session %s of sandbox %s", nm, sb->rec.id);
  r = an_ctl_read_doc(&rd, what, (int) (timeout_ms ? timeout_ms : 30000), &doc, err);
  an_ctl_reader_release(&rd);
  if (r == 0 && strcmp(an_json_member_str(doc, "type") ? an_json_member_str(doc, "type") : "", "ready"))
    r = an_error_set(err, EPROTO, "%s: the helper did not say ready", what);
  yajl_tree_free(doc);
  if (r == -EPIPE) {
    an_error_free(err);
    r = an_error_set(err, ENOENT, "%s: the helper exited at start (is %s in the image?)", what,
                     kind == AN_SESSION_PYTHON ? "python3" : "sh");
  }
  if (r < 0) goto fail;
  an_session_done(conn, nm);
  for (int i = 0; i < 3; i++) close(fds[i]);
  close(conn);
  if (name_out) *name_out = an_steal(&nm);
  return 0;
fail:
  for (int i = 0; i < 3; i++)
    if (fds[i] >= 0) close(fds[i]);
  if (conn >= 0) close(conn);
  an_error_t e = NULL;
  request(sb, "session.stop", nm, NULL, NULL, &e);
  an_error_free(&e);
  return session_ended(sb, "the session was being started", r, err);
}

int an_session_list(struct an_sandbox *sb, struct an_session_info **list, size_t *n,
                    an_error_t *err) {
  *list = NULL;
  *n = 0;
  yajl_val reply = NULL;
  int r = request(sb, "session.ls", NULL, NULL, &reply, err);
  if (r < 0) return r;
  yajl_val a = an_json_member_type(reply, "sessions", yajl_t_array);
  size_t cnt = a ? YAJL_GET_ARRAY(a)->len : 0;
  struct an_session_info *l = calloc(cnt ? cnt : 1, sizeof *l);
  if (!l) {
    yajl_tree_free(reply);
    return an_error_set(err, ENOMEM, "session list");
  }
  for (size_t i = 0; i < cnt; i++) {
    yajl_val s = YAJL_GET_ARRAY(a)->values[i];
    const char *nm = an_json_member_str(s, "name");
    l[i].name = strdup(nm ? nm : "");
    an_error_t e = NULL;
    if (an_session_kind_parse(an_json_member_str(s, "kind"), &l[i].kind, &e) < 0) an_error_free(&e);
    int64_t v = 0;
    if (an_json_get_i64(an_json_member(s, "pid"), "pid", 0, INT32_MAX, &v, &e) == 0) l[i].pid = (pid_t) v;
    an_error_free(&e);
    uint64_t u = 0;
    if (an_json_get_u64(an_json_member(s, "started_ms"), "started_ms", UINT64_MAX, &u, &e) == 0)
      l[i].started_ms = u;
    an_error_free(&e);
    l[i].busy = YAJL_IS_TRUE(an_json_member(s, "busy"));
  }
  yajl_tree_free(reply);
  *list = l;
  *n = cnt;
  return 0;
}

void an_session_info_list_free(struct an_session_info *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) free(list[i].name);
  free(list);
}

static int session_stop_impl(struct an_sandbox *sb, const char *name, an_error_t *err) {
  if (!name || !an_session_valid_name(name))
    return an_error_set(err, ENOENT, "sandbox %s: no session \"%.40s\"", sb->rec.id, name ? name : "");
  return request(sb, "session.stop", name, NULL, NULL, err);
}

void an_session_result_release(struct an_session_result *res) {
  if (!res) return;
  an_output_release(&res->output);
  free(res->lost_reason);
  free(res->value_repr);
  free(res->value_json);
  free(res->error_type);
  free(res->error_message);
  free(res->error_traceback);
  memset(res, 0, sizeof *res);
}

/* Re-emit a parsed JSON value (the final expression's JSON form). */
static yajl_gen_status emit_tree(yajl_gen g, yajl_val v, int depth) {
  if (depth > 64) return yajl_gen_null(g);
  switch (v ? v->type : yajl_t_null) {
  case yajl_t_string: return an_json_escape_output(g, v->u.string, strlen(v->u.string));
  case yajl_t_number: return yajl_gen_number(g, v->u.number.r, strlen(v->u.number.r));
  case yajl_t_true: return yajl_gen_bool(g, 1);
  case yajl_t_false: return yajl_gen_bool(g, 0);
  case yajl_t_object: {
    yajl_gen_status s = yajl_gen_map_open(g);
    for (size_t i = 0; s == yajl_gen_status_ok && i < v->u.object.len; i++) {
      const char *k = v->u.object.keys[i];
      if ((s = an_json_escape_output(g, k, strlen(k))) == yajl_gen_status_ok)
        s = emit_tree(g, v->u.object.values[i], depth + 1);
    }
    return s == yajl_gen_status_ok ? yajl_gen_map_close(g) : s;
  }
  case yajl_t_array: {
    yajl_gen_status s = yajl_gen_array_open(g);
    for (size_t i = 0; s == yajl_gen_status_ok && i < v->u.array.len; i++)
      s = emit_tree(g, v->u.array.values[i], depth + 1);
    return s == yajl_gen_status_ok ? yajl_gen_array_close(g) : s;
  }
  default: return yajl_gen_null(g);
  }
}

static yajl_gen_status kv_str(yajl_gen g, const char *k, const char *v) {
  yajl_gen_status s = yajl_gen_string(g, (const unsigned char *) k, strlen(k));
  if (s != yajl_gen_status_ok) return s;
  return v ? an_json_escape_output(g, v, strlen(v)) : yajl_gen_null(g);
}

static yajl_gen_status kv_bool(yajl_gen g, const char *k, bool v) {
  yajl_gen_status s = yajl_gen_string(g, (const unsigned char *) k, strlen(k));
  return s != yajl_gen_status_ok ? s : yajl_gen_bool(g, v);
}

#define TRY(x) do { yajl_gen_status s_ = (x); if (s_ != yajl_gen_status_ok) return s_; } while (0)

yajl_gen_status an_session_result_json_fields(yajl_gen g, const struct an_session_result *res) {
  TRY(yajl_gen_string(g, (const unsigned char *) "status", 6));
  TRY(yajl_gen_integer(g, res->status));
  TRY(kv_bool(g, "timed_out", res->timed_out));
  TRY(kv_bool(g, "session_lost", res->session_lost));
  if (res->lost_reason) TRY(kv_str(g, "lost_reason", res->lost_reason));
  TRY(yajl_gen_string(g, (const unsigned char *) "duration_ms", 11));
  TRY(yajl_gen_integer(g, (long long) res->duration_ms));
  TRY(an_output_json_fields(g, &res->output));
  TRY(yajl_gen_string(g, (const unsigned char *) "value", 5));
  if (!res->value_repr) {
    TRY(yajl_gen_null(g));
  } else {
    TRY(yajl_gen_map_open(g));
    TRY(kv_str(g, "repr", res->value_repr));
    TRY(yajl_gen_string(g, (const unsigned char *) "json", 4));
    yajl_val v = NULL;
    an_error_t e = NULL;
    if (res->value_json && an_json_parse(res->value_json, strlen(res->value_json), "", &v, &e) == 0) {
      yajl_gen_status s = emit_tree(g, v, 0);
      yajl_tree_free(v);
      TRY(s);
    } else {
      an_error_free(&e);
      TRY(yajl_gen_null(g));
    }
    TRY(yajl_gen_map_close(g));
  }
  TRY(yajl_gen_string(g, (const unsigned char *) "error", 5));
  if (!res->error_type && !res->session_lost) return yajl_gen_null(g);
  TRY(yajl_gen_map_open(g));
  TRY(kv_str(g, "type", res->error_type ? res->error_type : "session_lost"));
  TRY(kv_str(g, "message", res->error_message ? res->error_message : res->lost_reason));
  TRY(kv_str(g, "traceback", res->error_traceback));
  return yajl_gen_map_close(g);
}

/* The public calls: a start is asked of the approval hook (it runs code:
 * the interpreter); start and stop are recorded in the audit log. */
int an_session_start(struct an_sandbox *sb, enum an_session_kind kind, const char *name,
                     uint64_t timeout_ms, char **name_out, an_error_t *err) {
  if (name_out) *name_out = NULL;
  if (!sb) return an_error_set(err, EINVAL, "session start: no sandbox");
  struct an_audit_field af[] = {AN_AUDIT_STR("session", name), AN_AUDIT_STR("kind", an_session_kind_name(kind))};
  int r = an_approval_checkv(sb, "session_start", af, 2, err);
  if (r < 0) return r;
  char *got = NULL;
  r = session_start_impl(sb, kind, name, timeout_ms, &got, err);
  struct an_audit_field rf[] = {AN_AUDIT_STR("session", got ? got : name), af[1]};
  an_sb_audit(sb, NULL, NULL, "session_start", r, err, rf, 2);
  if (name_out) *name_out = got;
  else free(got);
  return r;
}

int an_session_stop(struct an_sandbox *sb, const char *name, an_error_t *err) {
  int r = session_stop_impl(sb, name, err);
  struct an_audit_field af[] = {AN_AUDIT_STR("session", name)};
  an_sb_audit(sb, NULL, NULL, "session_stop", r, err, af, 1);
  return r;
}
