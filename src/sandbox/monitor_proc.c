/* sandbox/monitor_proc.c — detached processes (agentnest/proc.h) in the
 * monitor: "proc.start" spawns through the exec path in a child cgroup
 * proc-<handle> with stdin /dev/null and its stdout/stderr on pipes the
 * monitor reads into a capped ring per stream (redacted as exec output);
 * "proc.ls", "proc.logs" (optionally waiting for more), "proc.kill",
 * "proc.wait" (answered when it exits).  When the process exits, what it
 * left in its cgroup is killed (exec's policy) and the cgroup removed; its
 * record and rings stay for logs/wait until evicted by newer ones. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "agentnest/proc.h"
#include "engine/process.h"
#include "sandbox/monitor_internal.h"
#include "util/cleanup.h"
#include "util/json_tree.h"

static struct an_mon_proc *find(struct an_mon *m, const char *h) {
  for (size_t i = 0; h && i < AN_MON_MAX_PROCS; i++)
    if (m->procs[i].used && !strcmp(m->procs[i].handle, h)) return &m->procs[i];
  return NULL;
}

static int want_proc(struct an_mon *m, yajl_val req, struct an_mon_proc **out, an_error_t *err) {
  const char *h = an_json_member_str(req, "handle");
  if (!h || !(*out = find(m, h)))
    return an_error_set(err, ENOENT, "sandbox %s: no process \"%.20s\"", m->sb->rec.id, h ? h : "");
  return 0;
}

static void ring_put(struct an_mon_ring *r, const char *b, size_t n) {
  if (!r->cap) return;
  if (n > r->cap) {
    r->total += n - r->cap;
    b += n - r->cap;
    n = r->cap;
  }
  size_t at = (size_t) (r->total % r->cap), first = r->cap - at < n ? r->cap - at : n;
  memcpy(r->buf + at, b, first);
  memcpy(r->buf, b + first, n - first);
  r->total += n;
}

static int ring_sink(void *data, enum an_stream st, const char *b, size_t n) {
  struct an_mon_proc *p = data;
  ring_put(&p->ring[st == AN_STREAM_STDERR], b, n);
  return 0;
}

/* Emit ring bytes from `from` on (at most `max`), as a JSON string; *next. */
static void ring_json(struct an_jgen *j, const struct an_mon_ring *r, uint64_t from, size_t max,
                      uint64_t *next, uint64_t *dropped) {
  uint64_t start = r->total > r->cap ? r->total - r->cap : 0;
  *dropped = from < start ? start - from : 0;
  if (from < start) from = start;
  if (from > r->total) from = r->total;
  size_t n = (size_t) (r->total - from);
  if (n > max) n = max;
  cleanup_free char *tmp = malloc(n + 1);
  if (!tmp) { n = 0; }
  for (size_t i = 0; tmp && i < n; i++) tmp[i] = r->buf[(size_t) ((from + i) % r->cap)];
  if (j->g && j->st == yajl_gen_status_ok) an_jgen_check(j, an_json_escape_output(j->g, tmp ? tmp : "", n));
  *next = from + n;
}

static void reply_logs(struct an_mon_proc *p, int fd, const uint64_t from[2]) {
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_bool(&j, "ok", true);
  uint64_t next[2], dropped[2];
  static const char *const names[2] = {"stdout", "stderr"};
  for (int s = 0; s < 2; s++) {
    an_jgen_key(&j, names[s]);
    ring_json(&j, &p->ring[s], from[s], (size_t) 1 << 20, &next[s], &dropped[s]);
  }
  an_jgen_key(&j, "next");
  an_jgen_array_open(&j);
  an_jgen_u64(&j, next[0]);
  an_jgen_u64(&j, next[1]);
  an_jgen_array_close(&j);
  an_jgen_key(&j, "dropped");
  an_jgen_array_open(&j);
  an_jgen_u64(&j, dropped[0]);
  an_jgen_u64(&j, dropped[1]);
  an_jgen_array_close(&j);
  an_jgen_kv_bool(&j, "running", p->running || p->out >= 0 || p->err >= 0);
  if (!p->running) an_jgen_kv_i64(&j, "status", p->status);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  size_t len = 0;
  an_error_t e = NULL;
  if (an_jgen_finish(&j, &doc, &len) == 0) an_ctl_send(fd, doc, len, NULL, 0, &e);
  an_error_free(&e);
}

static void reply_exit(struct an_mon_proc *p, int fd) {
  cleanup_jgen struct an_jgen j;
  an_jgen_init(&j, false);
  an_jgen_map_open(&j);
  an_jgen_kv_bool(&j, "ok", true);
  an_jgen_kv_i64(&j, "status", p->status);
  if (p->signal) an_jgen_kv_i64(&j, "signal", p->signal);
  else an_jgen_kv_i64(&j, "exit_code", p->exit_code);
  an_jgen_map_close(&j);
  cleanup_free char *doc = NULL;
  size_t len = 0;
  an_error_t e = NULL;
  if (an_jgen_finish(&j, &doc, &len) == 0) an_ctl_send(fd, doc, len, NULL, 0, &e);
  an_error_free(&e);
}

/* Answer the deferred requests on p that can be answered now. */
static void wake(struct an_mon *m, struct an_mon_proc *p) {
  bool done = !p->running && p->out < 0 && p->err < 0;
  for (size_t i = 0; i < AN_MON_MAX_CONNS; i++) {
    struct an_mon_conn *c = &m->conns[i];
    if (c->fd < 0 || c->wait == AN_MON_WAIT_NONE || strcmp(c->wait_handle, p->handle)) continue;
    if (c->wait == AN_MON_WAIT_EXIT && done) {
      c->wait = AN_MON_WAIT_NONE;
      reply_exit(p, c->fd);
    } else if (c->wait == AN_MON_WAIT_LOGS &&
               (done || p->ring[0].total > c->wait_from[0] || p->ring[1].total > c->wait_from[1])) {
      c->wait = AN_MON_WAIT_NONE;
      reply_logs(p, c->fd, c->wait_from);
    }
  }
}

static void close_stream(struct an_mon_proc *p, int s) {
  int *fd = s ? &p->err : &p->out;
  if (*fd >= 0) close(*fd);
  *fd = -1;
  if (p->out < 0 && p->err < 0 && p->redactor) {
    an_redactor_flush_streams(p->redactor, ring_sink, p);
    an_redactor_free(p->redactor);
    p->redactor = NULL;
  }
}

static void read_stream(struct an_mon_proc *p, int s) {
  int fd = s ? p->err : p->out;
  char buf[65536];
  for (int rounds = 0; fd >= 0 && rounds < 16; rounds++) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close_stream(p, s);
      return;
    }
    if (p->redactor) an_redactor_feed_stream(p->redactor, s ? AN_STREAM_STDERR : AN_STREAM_STDOUT, buf, (size_t) n, ring_sink, p);
  }
}


static void ended(struct an_mon *m, struct an_mon_proc *p) {
  siginfo_t si = {0};
  /* bounded: a tracer in the sandbox can hold the zombie from waitid */
  int reaped = an_sb_reap_command(p->cg, p->pidfd, &si);
  if (reaped < 0) si = (siginfo_t) {.si_code = CLD_KILLED, .si_status = SIGKILL};
  p->running = false;
  p->ended_ms = an_sb_now_ms();
  if (si.si_code == CLD_EXITED) {
    p->exit_code = si.si_status;
    p->status = si.si_status;
  } else {
    p->signal = si.si_status;
    p->exit_code = -1;
    p->status = 128 + si.si_status;
  }
  close(p->pidfd);
  p->pidfd = -1;
  /* exec's policy: what it left running ends with it; then its pipes close */
  an_mon_cgroup_gone(p->cg);
  p->cg = NULL;
  for (int s = 0; s < 2; s++) {
    read_stream(p, s);
    int fd = s ? p->err : p->out;
    if (fd >= 0) {
      fcntl(fd, F_SETFL, 0);  /* nothing else can write: read to EOF */
      char buf[65536];
      ssize_t n;
      while ((n = read(fd, buf, sizeof buf)) > 0)
        if (p->redactor) an_redactor_feed_stream(p->redactor, s ? AN_STREAM_STDERR : AN_STREAM_STDOUT, buf, (size_t) n, ring_sink, p);
      close_stream(p, s);
    }
  }
  if (reaped == 1) ring_sink(p, AN_STREAM_STDERR, AN_SB_UNREAPED_NOTE, strlen(AN_SB_UNREAPED_NOTE));
  an_sb_event(m->sb->dir, "proc_exited", ",\"handle\":\"%s\",\"pid\":%d,\"status\":%d", p->handle,
              (int) p->pid, p->status);
}

void an_mon_proc_ready(struct an_mon *m, struct an_mon_proc *p, int which) {
  if (!p->used) return;
  if (which < 2) read_stream(p, which);
  else if (p->running) ended(m, p);
  wake(m, p);
}

static void release(struct an_mon_proc *p) {
  an_error_t e = NULL;
  if (p->running && p->cg) an_cgroup_kill(p->cg, SIGKILL, &e);
  an_error_free(&e);
  if (p->pidfd >= 0) {
    an_cgroup_reap_killed(p->cg, p->pidfd, 0, 5100, NULL);   /* bounded: frozen, or traced */
    close(p->pidfd);
  }
  if (p->cg) an_mon_cgroup_gone(p->cg);
  if (p->out >= 0) close(p->out);
  if (p->err >= 0) close(p->err);
  an_redactor_free(p->redactor);
  free(p->ring[0].buf);
  free(p->ring[1].buf);
  free(p->command);
  memset(p, 0, sizeof *p);
  p->pidfd = p->out = p->err = -1;
}

void an_mon_procs_end(struct an_mon *m) {
  for (size_t i = 0; i < AN_MON_MAX_PROCS; i++)
    if (m->procs[i].used) release(&m->procs[i]);
}

/* A free slot: an unused one, else the longest-ended process is evicted. */
static struct an_mon_proc *slot(struct an_mon *m) {
  struct an_mon_proc *old = NULL;
  for (size_t i = 0; i < AN_MON_MAX_PROCS; i++) {
    struct an_mon_proc *p = &m->procs[i];
    if (!p->used) return p;
    if (!p->running && p->out < 0 && p->err < 0 && (!old || p->ended_ms < old->ended_ms)) old = p;
  }
  if (old) {
    for (size_t i = 0; i < AN_MON_MAX_CONNS; i++)
      if (m->conns[i].wait != AN_MON_WAIT_NONE && !strcmp(m->conns[i].wait_handle, old->handle))
        return NULL;
    release(old);
  }
  return old;
}

static int op_start(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                    int *fds, size_t *nfds, an_error_t *err) {
  struct an_sandbox *sb = m->sb;
  cleanup_strv char **argv = NULL, **env = NULL;
  int r = an_json_get_strv(an_json_member(req, "argv"), "argv", &argv, err);
  if (r < 0) return r;
  if (!argv[0] || !argv[0][0]) return an_error_set(err, EINVAL, "proc.start: empty command");
  if (an_json_member(req, "env") && (r = an_json_get_strv(an_json_member(req, "env"), "env", &env, err)) < 0)
    return r;
  const char *workdir = an_json_member_str(req, "workdir");
  if (workdir && workdir[0] != '/') return an_error_set(err, EINVAL, "workdir \"%s\" is not absolute", workdir);
  uint64_t ring = AN_PROC_DEFAULT_RING_BYTES;
  if (an_json_member(req, "ring_bytes") &&
      (r = an_json_get_u64(an_json_member(req, "ring_bytes"), "ring_bytes", AN_PROC_MAX_RING_BYTES, &ring, err)) < 0)
    return r;
  if (!ring) ring = AN_PROC_DEFAULT_RING_BYTES;
  struct an_mon_proc *p = slot(m);
  if (!p) return an_error_set(err, ENOSPC, "sandbox %s: %d detached processes already", sb->rec.id, AN_MON_MAX_PROCS);
  *p = (struct an_mon_proc){.pidfd = -1, .out = -1, .err = -1};
  snprintf(p->handle, sizeof p->handle, "p%llu", (unsigned long long) ++m->proc_seq);
  size_t clen = 1;
  for (char **a = argv; *a; a++) clen += strlen(*a) + 1;
  p->command = calloc(1, clen);
  p->ring[0].buf = malloc(ring);
  p->ring[1].buf = malloc(ring);
  p->ring[0].cap = p->ring[1].cap = ring;
  if (!p->command || !p->ring[0].buf || !p->ring[1].buf) {
    release(p);
    return an_error_set(err, ENOMEM, "proc.start: rings");
  }
  for (char **a = argv; *a; a++) {
    if (a != argv) strcat(p->command, " ");
    strcat(p->command, *a);
  }
  if ((r = an_redactor_new(sb->rec.secrets, sb->rec.nsecrets, &p->redactor, err)) < 0) {
    release(p);
    return r;
  }
  int po[2] = {-1, -1}, pe[2] = {-1, -1};
  cleanup_close int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  char cgname[AN_PROC_HANDLE_MAX + 8];
  snprintf(cgname, sizeof cgname, "proc-%s", p->handle);
  an_error_t e = NULL;
  if ((r = an_sb_ensure_cgroup(sb, err)) < 0) goto fail;
  if (an_cgroup_open_child(sb->cg, cgname, &p->cg, &e) == 0) {  /* a stale one of an earlier monitor */
    an_mon_cgroup_gone(p->cg);
    p->cg = NULL;
  }
  an_error_free(&e);
  if ((r = an_cgroup_create_child(sb->cg, cgname, &p->cg, err)) < 0) goto fail;
  if (null < 0 || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
    r = an_error_set(err, errno, "proc.start: pipes");
    goto fail;
  }
  struct an_sb_spawn sp = {.argv = argv, .env_extra = env, .workdir = workdir,
                           .stdio = {null, po[1], pe[1]}, .cg = p->cg, .timeout_ms = 10000};
  r = an_sb_spawn(sb, &sp, &p->pid, &p->pidfd, err);
  close(po[1]);
  close(pe[1]);
  if (r < 0) {
    close(po[0]);
    close(pe[0]);
    goto fail;
  }
  p->out = po[0];
  p->err = pe[0];
  fcntl(p->out, F_SETFL, O_NONBLOCK);
  fcntl(p->err, F_SETFL, O_NONBLOCK);
  p->used = p->running = true;
  p->started_ms = an_sb_now_ms();
  an_sb_event(sb->dir, "proc_started", ",\"handle\":\"%s\",\"pid\":%d", p->handle, (int) p->pid);
  an_jgen_kv_str(j, "handle", p->handle);
  an_jgen_kv_i64(j, "pid", p->pid);
  return 0;
fail:
  release(p);
  return r;
}

static int op_ls(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                 int *fds, size_t *nfds, an_error_t *err) {
  an_jgen_key(j, "procs");
  an_jgen_array_open(j);
  for (size_t i = 0; i < AN_MON_MAX_PROCS; i++) {
    const struct an_mon_proc *p = &m->procs[i];
    if (!p->used) continue;
    an_jgen_map_open(j);
    an_jgen_kv_str(j, "handle", p->handle);
    an_jgen_kv_i64(j, "pid", p->pid);
    an_jgen_kv_str(j, "command", p->command);
    an_jgen_kv_bool(j, "running", p->running);
    if (!p->running) an_jgen_kv_i64(j, "status", p->status);
    an_jgen_kv_u64(j, "started_ms", p->started_ms);
    an_jgen_map_close(j);
  }
  an_jgen_array_close(j);
  return 0;
}

static int op_logs(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_proc *p;
  int r = want_proc(m, req, &p, err);
  if (r < 0) return r;
  uint64_t from[2] = {0, 0};
  yajl_val f = an_json_member_type(req, "from", yajl_t_array);
  for (size_t i = 0; f && i < 2 && i < YAJL_GET_ARRAY(f)->len; i++)
    if ((r = an_json_get_u64(YAJL_GET_ARRAY(f)->values[i], "from", UINT64_MAX, &from[i], err)) < 0) return r;
  c->wait_from[0] = from[0];
  c->wait_from[1] = from[1];
  snprintf(c->wait_handle, sizeof c->wait_handle, "%s", p->handle);
  c->wait = AN_MON_WAIT_LOGS;
  bool more = p->ring[0].total > from[0] || p->ring[1].total > from[1];
  bool done = !p->running && p->out < 0 && p->err < 0;
  if (YAJL_IS_TRUE(an_json_member(req, "wait")) && !more && !done) return 1;
  c->wait = AN_MON_WAIT_NONE;
  reply_logs(p, c->fd, from);
  return 1;  /* answered by reply_logs */
}

static int op_kill(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_proc *p;
  int r = want_proc(m, req, &p, err);
  if (r < 0) return r;
  int64_t sig = SIGTERM;
  if (an_json_member(req, "signal") &&
      (r = an_json_get_i64(an_json_member(req, "signal"), "signal", 1, 64, &sig, err)) < 0)
    return r;
  if (!p->running) return an_error_set(err, ESRCH, "process %s has exited (status %d)", p->handle, p->status);
  if (sig == SIGKILL) return an_cgroup_kill(p->cg, SIGKILL, err);
  return an_process_signal(p->pidfd, (int) sig, err);
}

static int op_wait(struct an_mon *m, struct an_mon_conn *c, yajl_val req, struct an_jgen *j,
                   int *fds, size_t *nfds, an_error_t *err) {
  struct an_mon_proc *p;
  int r = want_proc(m, req, &p, err);
  if (r < 0) return r;
  if (!p->running && p->out < 0 && p->err < 0) {
    reply_exit(p, c->fd);
    return 1;
  }
  snprintf(c->wait_handle, sizeof c->wait_handle, "%s", p->handle);
  c->wait = AN_MON_WAIT_EXIT;
  return 1;
}

const struct an_mon_op an_mon_proc_ops[] = {
    {"proc.start", op_start}, {"proc.ls", op_ls}, {"proc.logs", op_logs},
    {"proc.kill", op_kill},   {"proc.wait", op_wait}, {NULL, NULL},
};
