/* sandbox/monitor_session.c — the monitor's session ops (control.h):
 * start a helper through the exec path in its own child cgroup and keep
 * the host ends of its fds; lend them to one caller at a time (attach /
 * done); list; stop; reap a helper that exited.  What does NOT live here:
 * a call itself (session.c, in the caller's process). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "sandbox/monitor_internal.h"
#include "sandbox/session_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

static struct an_mon_session *find(struct an_mon *m, const char *name) {
  for (size_t i = 0; name && i < AN_MON_MAX_SESSIONS; i++)
    if (m->sessions[i].used && !strcmp(m->sessions[i].name, name)) return &m->sessions[i];
  return NULL;
}

static int want_session(struct an_mon *m, yajl_val req, struct an_mon_session **out,
                        an_error_t *err) {
  const char *name = an_json_member_str(req, "name");
  if (!name || !(*out = find(m, name)))
    return an_error_set(err, ENOENT, "sandbox %s: no session \"%.40s\"", m->sb->rec.id,
                        name ? name : "");
  return 0;
}

/* Kill what is in the session's cgroup, wait (bounded) until it is empty,
 * remove it. */
void an_mon_cgroup_gone(struct an_cgroup *cg) {
  an_error_t e = NULL;
  for (int i = 0; cg && i < 500; i++) {
    pid_t *pids = NULL;
    size_t n = 0;
    if (an_cgroup_pids(cg, &pids, &n, &e) < 0) break;
    free(pids);
    if (!n) break;
    if (i % 50 == 0) an_cgroup_kill(cg, SIGKILL, &e);
    an_error_free(&e);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  an_error_free(&e);
  if (cg) an_cgroup_destroy(cg, &e);
  an_error_free(&e);
  an_cgroup_free(cg);
}

static void forget(struct an_mon *m, struct an_mon_session *s, const char *event) {
  an_error_t e = NULL;
  if (s->cg) an_cgroup_kill(s->cg, SIGKILL, &e);
  an_error_free(&e);
  /* bounded: the sandbox frozen (a v1 freezer lets the helper, the
   * monitor's child, out after 100 ms), or a tracer holding its zombie */
  if (s->pidfd >= 0) an_cgroup_reap_killed(s->cg, s->pidfd, 0, 5100, NULL);
  an_mon_cgroup_gone(s->cg);
  for (int *fd = &s->pidfd; fd <= &s->err; fd++)
    if (*fd >= 0) close(*fd);
  for (size_t i = 0; i < AN_MON_MAX_CONNS; i++)
    if (m->conns[i].fd >= 0 && !strcmp(m->conns[i].holds, s->name)) m->conns[i].holds[0] = '\0';
  an_sb_event(m->sb->dir, event, ",\"session\":\"%s\"", s->name);
  memset(s, 0, sizeof *s);
}

void an_mon_session_exited(struct an_mon *m, struct an_mon_session *s) {
  forget(m, s, "session_exited");
}

void an_mon_sessions_end(struct an_mon *m) {
  for (size_t i = 0; i < AN_MON_MAX_SESSIONS; i++)
    if (m->sessions[i].used) forget(m, &m->sessions[i], "session_stopped");
}

void an_mon_session_release_conn(struct an_mon *m, int conn_fd) {
  for (size_t i = 0; i < AN_MON_MAX_SESSIONS; i++)
    if (m->sessions[i].used && m->sessions[i].busy_fd == conn_fd) m->sessions[i].busy_fd = -1;
}

static int spawn_helper(struct an_mon *m, struct an_mon_session *s, an_error_t *err) {
  struct an_sandbox *sb = m->sb;
  int r = an_sb_ensure_cgroup(sb, err);
  if (r < 0) return r;
  char cgname[64];
  snprintf(cgname, sizeof cgname, AN_SESSION_CGROUP_PREFIX "%s", s->name);
  an_error_t e = NULL;
  if (an_cgroup_open_child(sb->cg, cgname, &s->cg, &e) == 0) {
    an_error_free(&e);
    an_mon_cgroup_gone(s->cg);  /* left by an earlier session of this name */
    s->cg = NULL;
  }
  an_error_free(&e);
  if ((r = an_cgroup_create_child(sb->cg, cgname, &s->cg, err)) < 0) return r;
  int sp[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0 || pipe2(po, O_CLOEXEC) < 0 ||
      pipe2(pe, O_CLOEXEC) < 0) {
    r = an_error_set(err, errno, "session %s: socketpair/pipe", s->name);
    goto out;
  }
  const char *argv[5];
  an_session_helper_argv(s->kind, argv);
  struct an_sb_spawn spw = {.argv = (char *const *) argv, .stdio = {sp[1], po[1], pe[1]},
                            .cg = s->cg, .timeout_ms = 10000};
  r = an_sb_spawn(sb, &spw, &s->pid, &s->pidfd, err);
  if (r < 0) {
    an_error_prefix(err, "session %s: start %s", s->name, argv[0]);
    goto out;
  }
  s->sock = an_steal_fd(&sp[0]);
  s->out = an_steal_fd(&po[0]);
  s->err = an_steal_fd(&pe[0]);
out:
  for (int i = 0; i < 2; i++) {
    if (sp[i] >= 0) close(sp[i]);
    if (po[i] >= 0) close(po[i]);
    if (pe[i] >= 0) close(pe[i]);
  }
  if (r < 0) {
    an_mon_cgroup_gone(s->cg);
    s->cg = NULL;
  }
  return r;
}

static int op_start(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                    int *fds, size_t *nfds, an_error_t *err) {
  const char *name = an_json_member_str(req, "name");
  enum an_session_kind kind;
  int r = an_session_kind_parse(an_json_member_str(req, "kind"), &kind, err);
  if (r < 0) return r;
  if (name && !an_session_valid_name(name))
    return an_error_set(err, EINVAL, "session name \"%.40s\": 1 to %d of A-Z a-z 0-9 _ . -, "
                        "not starting with . or -", name, AN_SESSION_NAME_MAX);
  if (name && find(m, name))
    return an_error_set(err, EEXIST, "sandbox %s: a session \"%s\" exists", m->sb->rec.id, name);
  struct an_mon_session *s = NULL;
  for (size_t i = 0; !s && i < AN_MON_MAX_SESSIONS; i++)
    if (!m->sessions[i].used) s = &m->sessions[i];
  if (!s)
    return an_error_set(err, ENOSPC, "sandbox %s: %d sessions already (stop one)", m->sb->rec.id,
                        AN_MON_MAX_SESSIONS);
  *s = (struct an_mon_session){.kind = kind, .pidfd = -1, .sock = -1, .out = -1, .err = -1,
                               .busy_fd = -1};
  if (name) snprintf(s->name, sizeof s->name, "%s", name);
  for (unsigned k = 1; !name; k++) {
    snprintf(s->name, sizeof s->name, "s%u", k);
    if (!find(m, s->name)) break;
  }
  if ((r = spawn_helper(m, s, err)) < 0) {
    memset(s, 0, sizeof *s);
    return r;
  }
  s->used = true;
  s->started_ms = an_sb_now_ms();
  an_sb_event(m->sb->dir, "session_started", ",\"session\":\"%s\",\"kind\":\"%s\",\"pid\":%d",
              s->name, an_session_kind_name(kind), (int) s->pid);
  an_jgen_kv_str(j, "name", s->name);
  an_jgen_kv_i64(j, "pid", s->pid);
  return 0;
}

static int op_attach(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                     int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_session *s;
  int r = want_session(m, req, &s, err);
  if (r < 0) return r;
  if (s->busy_fd >= 0)
    return an_error_set(err, EBUSY, "session %s is busy with another call", s->name);
  if (c->holds[0]) an_mon_session_release_conn(m, c->fd);
  s->busy_fd = c->fd;
  snprintf(c->holds, sizeof c->holds, "%s", s->name);
  an_jgen_kv_str(j, "kind", an_session_kind_name(s->kind));
  an_jgen_kv_bool(j, "dirty", s->dirty);
  an_jgen_kv_i64(j, "pid", s->pid);
  /* until "done" says otherwise, the call is taken as unfinished */
  s->dirty = true;
  fds[0] = s->sock;
  fds[1] = s->out;
  fds[2] = s->err;
  *nfds = 3;
  return 0;
}

static int op_done(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_session *s;
  int r = want_session(m, req, &s, err);
  if (r < 0) return r;
  if (s->busy_fd != c->fd)
    return an_error_set(err, EPERM, "session %s is not attached by this connection", s->name);
  s->dirty = false;
  s->busy_fd = -1;
  c->holds[0] = '\0';
  return 0;
}

static int op_ls(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                 int *fds, size_t *nfds, an_error_t *err) {
  an_jgen_key(j, "sessions");
  an_jgen_array_open(j);
  for (size_t i = 0; i < AN_MON_MAX_SESSIONS; i++) {
    const struct an_mon_session *s = &m->sessions[i];
    if (!s->used) continue;
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "name", s->name);
    an_jgen_kv_str(j, "kind", an_session_kind_name(s->kind));
    an_jgen_kv_i64(j, "pid", s->pid);
    an_jgen_kv_bool(j, "busy", s->busy_fd >= 0);
    an_jgen_kv_u64(j, "started_ms", s->started_ms);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
  return 0;
}

static int op_stop(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_session *s;
  int r = want_session(m, req, &s, err);
  if (r < 0) return r;
  forget(m, s, "session_stopped");
  return 0;
}

const struct an_mon_op an_mon_session_ops[] = {
    {"session.start", op_start},
    {"session.attach", op_attach},
    {"session.done", op_done},
    {"session.ls", op_ls},
    {"session.stop", op_stop},
    {NULL, NULL},
};
