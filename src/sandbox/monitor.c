/* sandbox/monitor.c — the per-sandbox monitor: a double-forked host process
 * (its own session, stdio on /dev/null, no inherited fds, outside the
 * sandbox cgroup) that keeps the sandbox's lifetime with nobody connected.
 * It waits on three fds:
 *   a CLOCK_REALTIME timerfd at the deadline -> event "expired", an expiry
 *     tombstone, and a full teardown (later calls: "sandbox <id> expired");
 *   the pidfd of the sandbox's pid 1        -> the sandbox ended on its own:
 *     event "init_exited", then teardown (reason "init exited"); pid 1
 *     ignores signals from inside the sandbox (cli/init/init.c), so this
 *     is a crash or a kill from the host;
 *   a signalfd for SIGTERM/SIGINT/SIGHUP    -> exit quietly (destroy, which
 *     tears down itself, stops the monitor first);
 *     and SIGUSR1                            -> the record changed (a pooled
 *     sandbox handed out, pool.c): re-read it, re-arm the timer at its new
 *     deadline and watch its new owner (none, or the taker; a taker already
 *     gone: teardown, reason "owner exited");
 *   for an owned sandbox (create_owned: a one-shot CLI), the pidfd of the
 *     creating process                       -> it exited, however (SIGKILL
 *     too): teardown (reason "owner exited").  The pidfd is opened in the
 *     creator before the fork, so a creator that dies at once is still seen.
 * An owner that exits while the record names another owner (a pooled
 * sandbox taken from a keeper that died before SIGUSR1 was read) is not the
 * end: the monitor switches to the recorded one.
 * It also listens on its control socket (sandbox/control.h; ops in
 * monitor_ctl.c) and keeps what must outlive a CLI: sessions (their
 * helpers' pidfds are in the poll set, monitor_session.c).
 * After a detached destroy (pid 1 killed, state moved to sandbox-reaping,
 * teardown_detach.c) the monitor is the reaper of its own sandbox.
 * If the monitor is killed, `prune` notices (its pid is gone) and removes
 * what is left.  What does NOT live here: the teardown (teardown.c). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/process.h"
#include "sandbox/audit_internal.h"
#include "sandbox/monitor_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

static void arm(int tfd, uint64_t deadline_ms) {
  /* 0: no deadline (a pool's ready sandbox): a zero it_value disarms */
  struct itimerspec its = {.it_value = {.tv_sec = (time_t) (deadline_ms / 1000),
                                        .tv_nsec = (long) (deadline_ms % 1000) * 1000000}};
  timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* Re-read the record: new deadline, new owner.  *owner_fd is replaced by a
 * pidfd of the recorded owner (-1: none).  Returns false when the recorded
 * owner is already gone (the caller tears down), or the record cannot be
 * read (the state is being removed). */
static bool reload(struct an_sandbox *sb, int tfd, int *owner_fd) {
  struct an_sb_record rec;
  an_error_t e = NULL;
  if (an_sb_record_read(sb->dir, &rec, &e) < 0) {
    an_error_free(&e);
    return false;
  }
  sb->rec.deadline_ms = rec.deadline_ms;
  arm(tfd, rec.deadline_ms);
  bool ok = true;
  if (rec.owner_pid != sb->rec.owner_pid || rec.owner_start != sb->rec.owner_start) {
    if (*owner_fd >= 0) close(*owner_fd);
    *owner_fd = -1;
    sb->rec.owner_pid = rec.owner_pid;
    sb->rec.owner_start = rec.owner_start;
    if (rec.owner_pid && an_process_pidfd_checked(rec.owner_pid, rec.owner_start, owner_fd, &e) < 0) {
      *owner_fd = -1;
      ok = false;
    }
    an_error_free(&e);
  }
  an_sb_record_clear(&rec);
  return ok;
}

_Noreturn static void monitor_main(struct an_sandbox *sb, int ready_fd, int owner_fd) {
  /* stdio on /dev/null, the ready pipe on fd 3, nothing else inherited (a
   * caller's pipe held here would keep `agentnest create | cat` waiting). */
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, 0);
    dup2(null, 1);
    dup2(null, 2);
    if (null > 2) close(null);
  }
  if (ready_fd != 3 && (dup2(ready_fd, 3) < 0 || (ready_fd = 3) < 0)) _exit(1);
  ready_fd = 3;
  if (owner_fd >= 0 && owner_fd != 4 && (dup2(owner_fd, 4) < 0 || (owner_fd = 4) < 0)) _exit(1);
  syscall(SYS_close_range, owner_fd >= 0 ? 5 : 4, ~0U, 0);
  if (chdir("/") < 0) {}
  /* the handle's fds were closed above: open them again when needed (a
   * session's spawn); the cgroup handles held directory fds */
  sb->ws_fd = sb->init_pidfd = sb->exec_slot_fd = -1;
  sb->cg = sb->exec_cg = NULL;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  sigprocmask(SIG_SETMASK, &set, NULL);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC);
  int tfd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC);
  int pfd = -1;
  an_error_t e = NULL;
  if (an_process_pidfd_checked(sb->rec.init_pid, sb->rec.init_start, &pfd, &e) < 0) pfd = -1;
  an_error_free(&e);
  struct itimerspec its = {.it_value = {.tv_sec = (time_t) (sb->rec.deadline_ms / 1000),
                                        .tv_nsec = (long) (sb->rec.deadline_ms % 1000) * 1000000}};
  if (sfd < 0 || tfd < 0 || timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) _exit(1);
  if (fcntl(tfd, F_SETFL, O_NONBLOCK) < 0) _exit(1);
  /* Once the creator exits, every heap page it dirtied is ours alone:
   * give back what is free (DESIGN: < 2 MiB per idle sandbox). */
  an_spec_free(sb->spec);
  sb->spec = NULL;
  malloc_trim(0);
  /* the control socket exists before create returns (fail closed: no
   * monitor without it) */
  struct an_mon m = {.sb = sb, .tfd = tfd, .lfd = an_mon_listen(sb->dir, &e)};
  if (m.lfd < 0) _exit(1);
  for (size_t i = 0; i < AN_MON_MAX_CONNS; i++) m.conns[i].fd = -1;
  pid_t self = getpid();
  if (write(ready_fd, &self, sizeof self) != sizeof self) _exit(1);
  close(ready_fd);

  enum { FIXED = 5 };
  enum { MAXFDS = FIXED + AN_MON_MAX_CONNS + AN_MON_MAX_SESSIONS + 3 * AN_MON_MAX_PROCS };
  struct pollfd p[MAXFDS];
  void *who[MAXFDS];
  int which[MAXFDS];
  for (;;) {
    /* a negative fd is ignored by poll(2) */
    p[0] = (struct pollfd){.fd = tfd, .events = POLLIN};
    p[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
    p[2] = (struct pollfd){.fd = pfd, .events = POLLIN};
    p[3] = (struct pollfd){.fd = owner_fd, .events = POLLIN};
    p[4] = (struct pollfd){.fd = m.lfd, .events = POLLIN};
    nfds_t np = FIXED;
    for (size_t i = 0; i < AN_MON_MAX_CONNS; i++)
      if (m.conns[i].fd >= 0) {
        who[np] = &m.conns[i];
        p[np++] = (struct pollfd){.fd = m.conns[i].fd, .events = POLLIN};
      }
    nfds_t first_session = np;
    for (size_t i = 0; i < AN_MON_MAX_SESSIONS; i++)
      if (m.sessions[i].used) {
        who[np] = &m.sessions[i];
        p[np++] = (struct pollfd){.fd = m.sessions[i].pidfd, .events = POLLIN};
      }
    nfds_t first_proc = np;
    for (size_t i = 0; i < AN_MON_MAX_PROCS; i++) {
      struct an_mon_proc *pr = &m.procs[i];
      if (!pr->used) continue;
      int fds3[3] = {pr->out, pr->err, pr->running ? pr->pidfd : -1};
      for (int k = 0; k < 3; k++)
        if (fds3[k] >= 0) {
          who[np] = pr;
          which[np] = k;
          p[np++] = (struct pollfd){.fd = fds3[k], .events = POLLIN};
        }
    }
    int n = poll(p, np, -1);
    if (n < 0) continue;
    const char *reason = NULL;
    bool tomb = false;
    if (p[1].revents) {
      struct signalfd_siginfo si;
      if (read(sfd, &si, sizeof si) == (ssize_t) sizeof si && si.ssi_signo == SIGUSR1) {
        /* a pooled sandbox handed out: new owner and deadline (pool.c) */
        if (!reload(sb, tfd, &owner_fd)) reason = "owner exited";
        p[3].fd = owner_fd;
        if (!reason) continue;
      } else {
        an_mon_sessions_end(&m);
        an_mon_procs_end(&m);
        _exit(0);
      }
    } else if (p[0].revents) {
      uint64_t ticks;
      /* a re-armed timer (extend, a hand-out) may have nothing to read: not expired */
      if (read(tfd, &ticks, sizeof ticks) == (ssize_t) sizeof ticks) {
        an_sb_event(sb->dir, "expired", NULL);
        struct an_audit_field af[] = {AN_AUDIT_INT("deadline_ms", sb->rec.deadline_ms)};
        an_sb_audit(NULL, sb->root, sb->rec.id, "expire", 0, NULL, af, 1);
        reason = "expired";
        tomb = true;
      }
    } else if (pfd >= 0 && p[2].revents) {
      an_sb_event(sb->dir, "init_exited", NULL);
      reason = "init exited";
    } else if (owner_fd >= 0 && p[3].revents) {
      /* the recorded owner may have changed before SIGUSR1 was read */
      pid_t watched = sb->rec.owner_pid;
      uint64_t wstart = sb->rec.owner_start;
      bool ok = reload(sb, tfd, &owner_fd);
      p[3].fd = owner_fd;
      if (ok && (sb->rec.owner_pid != watched || sb->rec.owner_start != wstart)) continue;
      reason = "owner exited";
    }
    if (reason) {
      /* SIGTERM from a concurrent destroy waits (blocked) until we are done. */
      an_mon_sessions_end(&m);
      an_mon_procs_end(&m);
      an_sb_teardown(sb->root, sb->rec.id, reason, tomb, 0, true, NULL, &e);
      /* a detached destroy (teardown_detach.c) killed pid 1, moved the
       * state to the reaping area and left its removal to us */
      if (!e) an_sb_reap_moved(sb->root, sb->rec.id, &e);
      _exit(e ? 1 : 0);
    }
    for (nfds_t i = first_proc; i < np; i++)
      if (p[i].revents) an_mon_proc_ready(&m, who[i], which[i]);
    for (nfds_t i = first_session; i < first_proc; i++)
      if (p[i].revents) an_mon_session_exited(&m, who[i]);
    for (nfds_t i = FIXED; i < first_session; i++)
      if (p[i].revents) an_mon_conn_ready(&m, who[i]);
    if (p[4].revents) an_mon_accept(&m);
  }
}

int an_sb_monitor_start(struct an_sandbox *sb, an_error_t *err) {
  cleanup_close int owner_fd = -1;
  if (sb->rec.owner_pid) {
    int r = an_process_pidfd_checked(sb->rec.owner_pid, sb->rec.owner_start, &owner_fd, err);
    if (r < 0) return an_error_prefix(err, "monitor: the owning process %d", (int) sb->rec.owner_pid);
  }
  int pfd = -1;
  int f = an_sb_fork_detached("monitor", &pfd, err);
  if (f < 0) return f;
  if (f == 0) monitor_main(sb, pfd, owner_fd);
  pid_t mpid = 0;
  ssize_t n;
  while ((n = read(pfd, &mpid, sizeof mpid)) < 0 && errno == EINTR) {}
  close(pfd);
  if (n != (ssize_t) sizeof mpid || mpid <= 0)
    return an_error_set(err, ECHILD, "sandbox %s: the monitor did not start", sb->rec.id);
  sb->rec.monitor_pid = mpid;
  an_error_t e = NULL;
  if (an_process_start_time(mpid, &sb->rec.monitor_start, &e) < 0) sb->rec.monitor_start = 0;
  an_error_free(&e);
  return 0;
}
