/* sandbox/proc.c — the caller's side of detached processes
 * (agentnest/proc.h): requests to the monitor's "proc.*" ops
 * (monitor_proc.c) over the control channel (control.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "agentnest/proc.h"
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/control.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"
#include "util/json_gen.h"
#include "util/json_tree.h"

static int no_monitor(const struct an_sandbox *sb, an_error_t *err) {
  return an_error_set(err, ESRCH, "sandbox %s has no monitor (a one-shot sandbox has no detached processes)",
                      sb->rec.id);
}

static int call(struct an_sandbox *sb, struct an_jgen *j, yajl_val *reply, an_error_t *err) {
  an_jgen_map_close(j);
  cleanup_free char *doc = NULL;
  if (an_jgen_finish(j, &doc, NULL) < 0) return an_error_set(err, ENOMEM, "proc: request");
  return an_ctl_call_once(sb->dir, sb->rec.id, doc, reply, err);
}

static void open_req(struct an_jgen *j, const char *op, const char *handle) {
  an_jgen_init(j, false);
  an_jgen_map_open(j);
  an_jgen_kv_str(j, "op", op);
  if (handle) an_jgen_kv_str(j, "handle", handle);
}

static int64_t num(yajl_val v, const char *k, int64_t dflt) {
  yajl_val n = an_json_member_type(v, k, yajl_t_number);
  return n && YAJL_IS_INTEGER(n) ? YAJL_GET_INTEGER(n) : dflt;
}

static int proc_start_call(struct an_sandbox *sb, char *const argv[], char *const *env, const char *workdir,
                           size_t ring_bytes, char **handle, pid_t *pid, an_error_t *err);

int an_proc_start(struct an_sandbox *sb, char *const argv[], char *const *env, const char *workdir,
                  size_t ring_bytes, char **handle, pid_t *pid, an_error_t *err) {
  *handle = NULL;
  if (!argv || !argv[0] || !argv[0][0]) return an_error_set(err, EINVAL, "exec --detach: empty command");
  if (!sb->rec.monitor_pid) return no_monitor(sb, err);
  if (ring_bytes > AN_PROC_MAX_RING_BYTES)
    return an_error_set(err, EINVAL, "ring of %zu bytes: more than the %zu allowed", ring_bytes,
                        AN_PROC_MAX_RING_BYTES);
  int r = an_sb_secret_values_ok(sb, err);
  if (r < 0) return r;
  /* a detached command is an exec: the same question to the hook (a hook that
   * refuses an argv must not be bypassed by --detach), and an audit record */
  struct an_audit_field af[] = {
    AN_AUDIT_STRV("argv", argv), AN_AUDIT_ENV_NAMES("env", env), AN_AUDIT_STR("workdir", workdir),
    AN_AUDIT_BOOL("detach", true),
  };
  if ((r = an_approval_checkv(sb, "exec", af, sizeof af / sizeof *af, err)) < 0) return r;
  r = proc_start_call(sb, argv, env, workdir, ring_bytes, handle, pid, err);
  an_sb_audit(sb, NULL, NULL, "exec", r, err, af, sizeof af / sizeof *af);
  return r;
}

static int proc_start_call(struct an_sandbox *sb, char *const argv[], char *const *env, const char *workdir,
                           size_t ring_bytes, char **handle, pid_t *pid, an_error_t *err) {
  int r;
  cleanup_jgen struct an_jgen j;
  open_req(&j, "proc.start", NULL);
  an_jgen_kv_strv(&j, "argv", (const char *const *) argv);
  if (env) an_jgen_kv_strv(&j, "env", (const char *const *) env);
  if (workdir) an_jgen_kv_str(&j, "workdir", workdir);
  if (ring_bytes) an_jgen_kv_u64(&j, "ring_bytes", ring_bytes);
  yajl_val reply = NULL;
  if ((r = call(sb, &j, &reply, err)) < 0) return an_error_prefix(err, "exec --detach in sandbox %s", sb->rec.id);
  const char *h = an_json_member_str(reply, "handle");
  *handle = h ? strdup(h) : NULL;
  if (pid) *pid = (pid_t) num(reply, "pid", 0);
  yajl_tree_free(reply);
  return *handle ? 0 : an_error_set(err, EPROTO, "proc.start: no handle in the reply");
}

int an_proc_list(struct an_sandbox *sb, struct an_proc_info **list, size_t *n, an_error_t *err) {
  *list = NULL;
  *n = 0;
  if (!sb->rec.monitor_pid) return no_monitor(sb, err);
  cleanup_jgen struct an_jgen j;
  open_req(&j, "proc.ls", NULL);
  yajl_val reply = NULL;
  int r = call(sb, &j, &reply, err);
  if (r < 0) return r;
  yajl_val a = an_json_member_type(reply, "procs", yajl_t_array);
  size_t cnt = a ? YAJL_GET_ARRAY(a)->len : 0;
  struct an_proc_info *l = calloc(cnt ? cnt : 1, sizeof *l);
  if (!l) {
    yajl_tree_free(reply);
    return an_error_set(err, ENOMEM, "proc list");
  }
  for (size_t i = 0; i < cnt; i++) {
    yajl_val p = YAJL_GET_ARRAY(a)->values[i];
    const char *h = an_json_member_str(p, "handle"), *c = an_json_member_str(p, "command");
    l[i].handle = strdup(h ? h : "");
    l[i].command = strdup(c ? c : "");
    l[i].pid = (pid_t) num(p, "pid", 0);
    l[i].running = YAJL_IS_TRUE(an_json_member(p, "running"));
    l[i].status = (int) num(p, "status", 0);
    l[i].started_ms = (uint64_t) num(p, "started_ms", 0);
  }
  yajl_tree_free(reply);
  *list = l;
  *n = cnt;
  return 0;
}

void an_proc_info_list_free(struct an_proc_info *list, size_t n) {
  for (size_t i = 0; list && i < n; i++) {
    free(list[i].handle);
    free(list[i].command);
  }
  free(list);
}

int an_proc_logs(struct an_sandbox *sb, const char *handle, const uint64_t from[2], bool wait,
                 struct an_proc_logs *out, an_error_t *err) {
  memset(out, 0, sizeof *out);
  if (!sb->rec.monitor_pid) return no_monitor(sb, err);
  cleanup_jgen struct an_jgen j;
  open_req(&j, "proc.logs", handle);
  an_jgen_key(&j, "from");
  an_jgen_array_open(&j);
  an_jgen_u64(&j, from ? from[0] : 0);
  an_jgen_u64(&j, from ? from[1] : 0);
  an_jgen_array_close(&j);
  an_jgen_kv_bool(&j, "wait", wait);
  yajl_val reply = NULL;
  int r = call(sb, &j, &reply, err);
  if (r < 0) return r;
  static const char *const names[2] = {"stdout", "stderr"};
  for (int s = 0; s < 2; s++) {
    const char *d = an_json_member_str(reply, names[s]);
    out->data[s] = strdup(d ? d : "");
    yajl_val nx = an_json_member_type(reply, "next", yajl_t_array);
    yajl_val dr = an_json_member_type(reply, "dropped", yajl_t_array);
    if (nx && YAJL_GET_ARRAY(nx)->len == 2) out->next[s] = (uint64_t) YAJL_GET_INTEGER(YAJL_GET_ARRAY(nx)->values[s]);
    if (dr && YAJL_GET_ARRAY(dr)->len == 2) out->dropped[s] = (uint64_t) YAJL_GET_INTEGER(YAJL_GET_ARRAY(dr)->values[s]);
  }
  out->running = YAJL_IS_TRUE(an_json_member(reply, "running"));
  out->status = (int) num(reply, "status", 0);
  yajl_tree_free(reply);
  if (!out->data[0] || !out->data[1]) {
    an_proc_logs_release(out);
    return an_error_set(err, ENOMEM, "proc logs");
  }
  return 0;
}

void an_proc_logs_release(struct an_proc_logs *l) {
  free(l->data[0]);
  free(l->data[1]);
  memset(l, 0, sizeof *l);
}

int an_proc_kill(struct an_sandbox *sb, const char *handle, int sig, an_error_t *err) {
  if (sig < 1 || sig > 64) return an_error_set(err, EINVAL, "signal %d: not a signal number", sig);
  if (!sb->rec.monitor_pid) return no_monitor(sb, err);
  cleanup_jgen struct an_jgen j;
  open_req(&j, "proc.kill", handle);
  an_jgen_kv_i64(&j, "signal", sig);
  return call(sb, &j, NULL, err);
}

int an_proc_wait(struct an_sandbox *sb, const char *handle, int *status, an_error_t *err) {
  if (!sb->rec.monitor_pid) return no_monitor(sb, err);
  cleanup_jgen struct an_jgen j;
  open_req(&j, "proc.wait", handle);
  yajl_val reply = NULL;
  int r = call(sb, &j, &reply, err);
  if (r < 0) return r;
  *status = (int) num(reply, "status", 0);
  yajl_tree_free(reply);
  return 0;
}
