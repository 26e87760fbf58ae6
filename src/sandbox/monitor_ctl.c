/* sandbox/monitor_ctl.c — the monitor's side of the control channel
 * (protocol in sandbox/control.h): the listening socket in the host-only
 * <dir>/control directory, connections, and the op table.  The ops that
 * need no state of their own live here ("ping", "extend"); sessions'
 * ops in monitor_session.c.  To add an op: a handler (monitor_internal.h's
 * an_mon_op_fn) and a row in a table walked by dispatch(). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "sandbox/monitor_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

int an_mon_listen(const char *dir, an_error_t *err) {
  char d[PATH_MAX];
  snprintf(d, sizeof d, "%s/" AN_CTL_DIR, dir);
  if (mkdir(d, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", d);
  struct stat st;
  if (lstat(d, &st) < 0) return an_error_set(err, errno, "stat %s", d);
  /* ours, a directory, and closed to everyone else */
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
    return an_error_set(err, EPERM, "%s: not a directory of uid %d with mode 0700", d, (int) geteuid());
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  int n = snprintf(a.sun_path, sizeof a.sun_path, "%s/" AN_CTL_SOCKET, d);
  if (n < 0 || (size_t) n >= sizeof a.sun_path)
    return an_error_set(err, ENAMETOOLONG, "control socket %s/%s: path too long", d, AN_CTL_SOCKET);
  unlink(a.sun_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return an_error_set(err, errno, "control socket");
  mode_t old = umask(0177);
  int r = bind(fd, (struct sockaddr *) &a, sizeof a);
  int e = errno;
  umask(old);
  if (r < 0 || listen(fd, 16) < 0) {
    if (r >= 0) e = errno;
    close(fd);
    return an_error_set(err, e, "bind/listen %s", a.sun_path);
  }
  return fd;
}

void an_mon_accept(struct an_mon *m) {
  int fd = accept4(m->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return;
  struct ucred cr;
  socklen_t cl = sizeof cr;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.uid != geteuid()) {
    close(fd);
    return;
  }
  /* a reply is small; a peer that does not read it cannot hold the monitor */
  struct timeval tv = {.tv_sec = 2};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  for (size_t i = 0; i < AN_MON_MAX_CONNS; i++) {
    if (m->conns[i].fd >= 0) continue;
    m->conns[i].fd = fd;
    m->conns[i].holds[0] = '\0';
    m->conns[i].wait = AN_MON_WAIT_NONE;
    an_ctl_reader_init(&m->conns[i].rd, fd);
    return;
  }
  close(fd);  /* full: the client sees EOF */
}

void an_mon_conn_close(struct an_mon *m, struct an_mon_conn *c) {
  if (c->fd < 0) return;
  an_mon_session_release_conn(m, c->fd);
  an_ctl_reader_release(&c->rd);
  close(c->fd);
  c->fd = -1;
  c->holds[0] = '\0';
  c->wait = AN_MON_WAIT_NONE;
}

static int op_ping(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  an_jgen_kv_i64(j, "pid", getpid());
  return 0;
}

/* {"deadline_ms":N}: the caller (an_sandbox_extend) checked the bound and
 * writes the record; here the timer is re-armed. */
static int op_extend(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                     int *fds, size_t *nfds, an_error_t *err) {
  uint64_t d = 0;
  int r = an_json_get_u64(an_json_member(req, "deadline_ms"), "deadline_ms", UINT64_MAX / 2, &d, err);
  if (r < 0) return r;
  struct itimerspec its = {.it_value = {.tv_sec = (time_t) (d / 1000), .tv_nsec = (long) (d % 1000) * 1000000}};
  if (timerfd_settime(m->tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
    return an_error_set(err, errno, "sandbox %s: re-arm the lifetime timer", m->sb->rec.id);
  m->sb->rec.deadline_ms = d;
  an_jgen_kv_u64(j, "deadline_ms", d);
  return 0;
}

static const struct an_mon_op base_ops[] = {
    {"ping", op_ping},
    {"extend", op_extend},
    {NULL, NULL},
};

static const struct an_mon_op *const op_tables[] = {base_ops, an_mon_session_ops, an_mon_proc_ops};

static void reply_error(int fd, int e, const char *msg) {
  cleanup_jgen struct an_jgen j;
  if (an_jgen_init(&j, false) < 0) return;
  an_jgen_map_open(&j);
  an_jgen_kv_bool(&j, "ok", false);
  an_jgen_kv_i64(&j, "errno", e);
  an_jgen_kv_str(&j, "error", msg);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  size_t len = 0;
  an_error_t err = NULL;
  if (an_jgen_finish(&j, &doc, &len) == 0) an_ctl_send(fd, doc, len, NULL, 0, &err);
  an_error_free(&err);
}

static void dispatch(struct an_mon *m, struct an_mon_conn *c, const char *payload, size_t len) {
  an_error_t err = NULL;
  yajl_val req = NULL;
  if (an_json_parse(payload, len, "request", &req, &err) < 0) {
    reply_error(c->fd, EINVAL, err->msg);
    an_error_free(&err);
    return;
  }
  const char *op = an_json_member_str(req, "op");
  const struct an_mon_op *found = NULL;
  for (size_t t = 0; op && !found && t < sizeof op_tables / sizeof *op_tables; t++)
    for (const struct an_mon_op *o = op_tables[t]; o->name; o++)
      if (!strcmp(o->name, op)) { found = o; break; }
  if (!found) {
    char msg[128];
    snprintf(msg, sizeof msg, "unknown op \"%.64s\"", op ? op : "");
    reply_error(c->fd, EOPNOTSUPP, msg);
    yajl_tree_free(req);
    return;
  }
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_bool(&j, "ok", true);
  int fds[AN_CTL_MAX_FDS];
  size_t nfds = 0;
  int r = found->fn(m, c, req, &j, fds, &nfds, &err);
  yajl_tree_free(req);
  if (r > 0) return;  /* deferred: the op answers later (monitor_proc.c) */
  if (r < 0) {
    reply_error(c->fd, -r, err && err->msg ? err->msg : strerror(-r));
    an_error_free(&err);
    return;
  }
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  size_t dl = 0;
  if (an_jgen_finish(&j, &doc, &dl) < 0) {
    reply_error(c->fd, ENOMEM, "reply: JSON");
    return;
  }
  if (an_ctl_send(c->fd, doc, dl, fds, nfds, &err) < 0) an_error_free(&err);
}

void an_mon_conn_ready(struct an_mon *m, struct an_mon_conn *c) {
  an_error_t err = NULL;
  int r = an_ctl_reader_fill(&c->rd, &err);
  an_error_free(&err);
  if (r == -EAGAIN) return;
  if (r <= 0) {
    an_mon_conn_close(m, c);
    return;
  }
  /* a client passes no fds to the monitor */
  for (size_t i = 0; i < c->rd.nfds; i++) close(c->rd.fds[i]), c->rd.fds[i] = -1;
  c->rd.nfds = 0;
  for (;;) {
    char *payload = NULL;
    size_t len = 0;
    r = an_ctl_reader_next(&c->rd, "control connection", &payload, &len, &err);
    if (r < 0) {
      reply_error(c->fd, EPROTO, err->msg);
      an_error_free(&err);
      an_mon_conn_close(m, c);
      return;
    }
    if (r == 0) return;
    dispatch(m, c, payload, len);
    free(payload);
    if (c->fd < 0) return;
  }
}
