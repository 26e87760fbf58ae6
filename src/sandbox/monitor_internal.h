/* sandbox/monitor_internal.h — the monitor's state and the op table of its
 * control channel (internal; protocol in sandbox/control.h).
 *
 * The monitor is single-threaded: one poll(2) loop (monitor.c) over its
 * fixed fds (lifetime timer, signals, init's pidfd, the owner's pidfd), the
 * listening control socket, the connections, and the pidfds of the
 * sessions it keeps.  An op handler runs to completion inside the loop, so
 * handlers must not block for long (spawning a helper is a few ms). */
#ifndef AN_SANDBOX_MONITOR_INTERNAL_H
#define AN_SANDBOX_MONITOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <yajl/yajl_tree.h>
#include "agentnest/session.h"
#include "sandbox/control.h"
#include "sandbox/sandbox_internal.h"
#include "util/json_gen.h"

#define AN_MON_MAX_CONNS 64
#define AN_MON_MAX_SESSIONS 32
#define AN_MON_MAX_PROCS 32
#define AN_PROC_HANDLE_MAX 15

struct an_mon_conn {
  int fd;                       /* -1: free slot */
  struct an_ctl_reader rd;
  char holds[AN_SESSION_NAME_MAX + 1];  /* session this connection has attached, "" none */
  /* a deferred reply (monitor_proc.c): "proc.wait" or "proc.logs" with
   * wait, answered when the process writes or exits */
  enum { AN_MON_WAIT_NONE, AN_MON_WAIT_EXIT, AN_MON_WAIT_LOGS } wait;
  char wait_handle[AN_PROC_HANDLE_MAX + 1];
  uint64_t wait_from[2];
};

/* The output ring of one stream of a detached process. */
struct an_mon_ring {
  char *buf;           /* cap bytes (heap) */
  size_t cap;
  uint64_t total;      /* bytes ever written; the ring holds the last min(total, cap) */
};

/* A detached process (exec --detach): its own child cgroup proc-<handle>,
 * its output read by the monitor into capped rings (redacted). */
struct an_mon_proc {
  bool used, running;
  char handle[AN_PROC_HANDLE_MAX + 1];
  char *command;                /* argv joined by spaces, for proc ls (heap) */
  pid_t pid;
  int pidfd, out, err;          /* owned; out/err -1 after EOF */
  struct an_cgroup *cg;
  struct an_mon_ring ring[2];   /* stdout, stderr */
  an_redactor_t *redactor;
  int status;                   /* DESIGN's exit status once ended */
  int exit_code, signal;
  uint64_t started_ms, ended_ms, seq;
};

/* A session the monitor keeps: its helper process and the host ends of its
 * fds, which the monitor holds (and hands to callers) so that the session
 * outlives every CLI. */
struct an_mon_session {
  bool used;
  char name[AN_SESSION_NAME_MAX + 1];
  enum an_session_kind kind;
  pid_t pid;
  int pidfd, sock, out, err;    /* owned */
  struct an_cgroup *cg;         /* its child cgroup session-<name> (owned) */
  int busy_fd;                  /* the connection holding it, -1 none */
  bool dirty;                   /* a call was left unfinished (its caller died) */
  uint64_t started_ms;          /* CLOCK_REALTIME */
};

struct an_mon {
  struct an_sandbox *sb;
  int tfd;                      /* the lifetime timerfd (CLOCK_REALTIME, absolute) */
  int lfd;                      /* listening control socket */
  struct an_mon_conn conns[AN_MON_MAX_CONNS];
  struct an_mon_session sessions[AN_MON_MAX_SESSIONS];
  struct an_mon_proc procs[AN_MON_MAX_PROCS];
  uint64_t proc_seq;            /* handles p1, p2, ... */
};

/* An op: read `req`, add members to the open reply map `j` (after "ok":
 * true), and put fds to pass in fds[0..*nfds) (borrowed: still the
 * monitor's after the send).  Return 0, or a negative errno with err set:
 * the reply is then {"ok":false,...}; or 1: no reply now, the op answers
 * on c->fd later (a deferred wait). */
typedef int (*an_mon_op_fn)(struct an_mon *m, struct an_mon_conn *c, yajl_val req,
                            struct an_jgen *j, int *fds, size_t *nfds, an_error_t *err);
struct an_mon_op {
  const char *name;
  an_mon_op_fn fn;
};

/* monitor_ctl.c: bind <dir>/control/control.sock (a fresh 0700 directory,
 * the socket 0600); returns the listening fd or -errno. */
int an_mon_listen(const char *dir, an_error_t *err);
/* Accept one connection (refusing peers whose uid is not ours). */
void an_mon_accept(struct an_mon *m);
/* Read from connection c and answer every complete request; closes it on
 * EOF or a protocol error. */
void an_mon_conn_ready(struct an_mon *m, struct an_mon_conn *c);
void an_mon_conn_close(struct an_mon *m, struct an_mon_conn *c);

/* monitor_session.c: the session ops, and the reaping of a session whose
 * helper exited (pidfd readable). */
extern const struct an_mon_op an_mon_session_ops[];
void an_mon_session_exited(struct an_mon *m, struct an_mon_session *s);
/* Kill and reap every session (the monitor is about to exit: an orphaned
 * helper would be a zombie on hosts whose pid 1 does not reap). */
void an_mon_sessions_end(struct an_mon *m);
void an_mon_session_release_conn(struct an_mon *m, int conn_fd);

/* monitor_proc.c: the detached processes' ops; poll entries of process
 * `p` (which: 0 stdout, 1 stderr, 2 pidfd) and their handling; the end of
 * every process when the monitor exits. */
extern const struct an_mon_op an_mon_proc_ops[];
void an_mon_proc_ready(struct an_mon *m, struct an_mon_proc *p, int which);
void an_mon_procs_end(struct an_mon *m);

/* Kill what is in cgroup cg (a session's or a detached process's), wait
 * (bounded, about 1 s) until it is empty, remove and free it.  NULL: nothing.
 * Best effort: failures are dropped (prune removes what is left). */
struct an_cgroup;
void an_mon_cgroup_gone(struct an_cgroup *cg);

#endif
