/* sandbox/exec.c — an_sandbox_exec: one command in a live sandbox, in its
 * own child cgroup, with a timeout, OOM detection, capped and redacted
 * output, and the result as DESIGN.md's exit statuses.
 *
 * Waiting: an epoll set holding the process's pidfd and a timerfd is the
 * "stop" fd of the output capture, so the capture returns when the command
 * exits (a daemonised grandchild still holding the pipes cannot keep the
 * caller waiting, BL-42) or when the timeout fires.  Then every process left
 * in the exec's cgroup is killed (cgroup.kill; BL-42) and the cgroup
 * removed.  The caller's cancel fd (its signals) ends the command the same
 * way, and so does the caller's death (a watch process, start_caller_watch).  OOM: the oom_kill counter of the exec's cgroup (memory.events on
 * v2, memory.oom_control on v1, which counts where the victim lived) is
 * compared before and after (BL-35).  stdin: /dev/null, or the caller's
 * stdin_fd copied by a pump process into a pipe (exec_stdin.h: the fd itself
 * never enters the sandbox); with eo->tty the command runs on a pty of the
 * sandbox's devpts whose master is read as its one output stream (and fed
 * by the pump).  What does NOT live here: cloning into the sandbox
 * (exec_spawn.c), output capture and redaction (output.c), the pump
 * (exec_stdin.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include "engine/process.h"
#include "sandbox/exec_stdin.h"
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

void an_exec_result_release(struct an_exec_result *res) {
  if (!res) return;
  an_output_release(&res->output);
  memset(res, 0, sizeof *res);
}

/* After an exec: kill what is left in its cgroup and wait until it is empty
 * (bounded), so the slot starts clean and timeouts reach everything. */
static void empty_slot(struct an_cgroup *cg) {
  an_error_t e = NULL;
  for (int i = 0; i < 2000; i++) {
    pid_t *pids = NULL;
    size_t n = 0;
    if (an_cgroup_pids(cg, &pids, &n, &e) < 0) break;
    free(pids);
    if (!n) break;
    if (i == 0 || i % 100 == 0) an_cgroup_kill(cg, SIGKILL, &e);
    an_error_free(&e);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  an_error_free(&e);
}

/* Take a free exec slot: the first <dir>/exec-slots/<n>.lock this process
 * can flock, and its child cgroup exec-<n> (created on first use, kept for
 * the next exec: creating and removing a cgroup in every v1 hierarchy per
 * exec costs milliseconds).  Held until the handle is closed. */
static int acquire_slot(struct an_sandbox *sb, an_error_t *err) {
  if (sb->exec_cg) return 0;
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/exec-slots", sb->dir);
  if (mkdir(path, 0700) < 0 && errno != EEXIST) return an_error_set(err, errno, "mkdir %s", path);
  for (unsigned n = 0; n < 4096; n++) {
    snprintf(path, sizeof path, "%s/exec-slots/%u.lock", sb->dir, n);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return an_error_set(err, errno, "open %s", path);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
      close(fd);
      if (errno == EWOULDBLOCK || errno == EINTR) continue;
      return an_error_set(err, errno, "lock %s", path);
    }
    char name[32];
    snprintf(name, sizeof name, "exec-%u", n);
    an_error_t e = NULL;
    int r = an_cgroup_open_child(sb->cg, name, &sb->exec_cg, &e);
    an_error_free(&e);
    if (r < 0) r = an_cgroup_create_child(sb->cg, name, &sb->exec_cg, err);
    if (r < 0) {
      close(fd);
      return r;
    }
    sb->exec_slot_fd = fd;
    /* Processes left by an exec whose caller died (SIGKILL of a CLI): we
     * hold the slot now, so nothing live owns them. */
    empty_slot(sb->exec_cg);
    sb->exec_oom_ok = an_cgroup_oom_kills(sb->exec_cg, &sb->exec_oom_base, &e) == 0;
    an_error_free(&e);
    return 0;
  }
  return an_error_set(err, EBUSY, "sandbox %s: no free exec slot", sb->rec.id);
}


/* The caller's death (SIGKILL included) ends the exec: a small host process
 * forked before the command starts waits on a pidfd of the caller and then
 * kills the exec's cgroup.  It holds a duplicate of the slot's lock fd (a
 * flock belongs to the open file description), so no other exec can take
 * the slot, and be killed with it, before it is emptied.  It keeps no other
 * fd of the caller (a pipe it held would keep a reader waiting), ignores
 * the terminal's signals (its own process group) and is killed by the
 * caller when the command ends.  Returns its pid, or -errno. */
static pid_t start_caller_watch(struct an_sandbox *sb, an_error_t *err) {
  cleanup_close int self = (int) syscall(SYS_pidfd_open, getpid(), 0);
  if (self < 0) return an_error_set(err, errno, "exec: pidfd of the caller");
  pid_t w = fork();
  if (w < 0) return an_error_set(err, errno, "exec: fork the caller's watch");
  if (w > 0) return w;
  setpgid(0, 0);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0 || dup2(self, 3) < 0 || dup2(sb->exec_slot_fd, 4) < 0) _exit(1);
  for (int fd = 0; fd < 3; fd++) dup2(null, fd);
  syscall(SYS_close_range, 5, ~0U, 0);
  struct pollfd p = {.fd = 3, .events = POLLIN};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {}
  empty_slot(sb->exec_cg);
  _exit(0);
}

static void stop_caller_watch(pid_t w) {
  if (w <= 0) return;
  kill(w, SIGKILL);
  while (waitpid(w, NULL, 0) < 0 && errno == EINTR) {}
}

/* Reap the pidfd's process, which exited or was sent SIGKILL; fill the
 * result's code/signal.  Bounded (an_cgroup_reap_killed: a process frozen
 * by a v1 freezer is let out of it after 100 ms): one still not reaped
 * after 5 s (frozen in a frozen sandbox, or its zombie held by a tracer in
 * the sandbox) is SIGKILLed and reported killed, left unreaped, rather
 * than holding the caller. */
int an_sb_reap_command(const struct an_cgroup *cg, int pidfd, siginfo_t *si) {
  int r = an_cgroup_reap_killed(cg, pidfd, 0, 5100, si);
  if (r != -ETIMEDOUT) return r < 0 ? r : 0;
  an_error_t e = NULL;
  an_process_signal(pidfd, SIGKILL, &e);
  an_error_free(&e);
  *si = (siginfo_t) {.si_code = CLD_KILLED, .si_status = SIGKILL};
  return 1;
}

static void note_unreaped(const struct an_output_opts *oo, struct an_exec_result *res) {
  size_t n = strlen(AN_SB_UNREAPED_NOTE);
  char *b = realloc(res->output.stderr_buf, res->output.stderr_len + n + 1);
  if (!b) return;
  memcpy(b + res->output.stderr_len, AN_SB_UNREAPED_NOTE, n + 1);
  res->output.stderr_buf = b;
  res->output.stderr_len += n;
  if (oo && oo->on_data) oo->on_data(oo->on_data_arg, AN_STREAM_STDERR, AN_SB_UNREAPED_NOTE, n);
}

static int reap(const struct an_cgroup *cg, int pidfd, const struct an_output_opts *oo,
                struct an_exec_result *res, an_error_t *err) {
  siginfo_t si = {0};
  int r = an_sb_reap_command(cg, pidfd, &si);
  if (r < 0) return an_error_set(err, -r, "wait for the command (waitid)");
  if (r == 1) note_unreaped(oo, res);
  if (si.si_code == CLD_EXITED) {
    res->exit_code = si.si_status;
    res->signal = 0;
  } else {
    res->exit_code = -1;
    res->signal = si.si_status;
  }
  return 0;
}

static bool exited(int pidfd) {
  struct pollfd p = {.fd = pidfd, .events = POLLIN};
  return poll(&p, 1, 0) > 0;
}

int an_sb_exec_secrets(const struct an_sandbox *sb, const struct an_exec_opts *eo,
                       const struct an_secret **list, size_t *n, struct an_secret **owned,
                       an_error_t *err) {
  *owned = NULL;
  int r = an_sb_secret_values_ok(sb, err);
  if (r < 0) return r;
  *list = sb->rec.secrets;
  *n = sb->rec.nsecrets;
  if (!eo->nsecrets) return 0;
  struct an_secret *s = calloc(sb->rec.nsecrets + eo->nsecrets, sizeof *s);
  if (!s) return an_error_set(err, ENOMEM, "secrets of sandbox %s", sb->rec.id);
  for (size_t i = 0; i < sb->rec.nsecrets; i++) s[i] = sb->rec.secrets[i];
  for (size_t i = 0; i < eo->nsecrets; i++) s[sb->rec.nsecrets + i] = eo->secrets[i];
  *list = *owned = s;
  *n = sb->rec.nsecrets + eo->nsecrets;
  return 0;
}

/* The part shared by exec and run_once: wait with timeout, kill on
 * timeout, capture output.  `cg` is the cgroup to kill (the exec's, or the
 * whole sandbox for run_once). */
int an_sb_wait_capture(struct an_cgroup *cg, int pidfd, int out_fd, int err_fd,
                       uint64_t timeout_ms, uint64_t kill_grace_ms, int cancel_fd,
                       const struct an_output_opts *oo, struct an_exec_result *res,
                       an_error_t *err) {
  cleanup_close int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  cleanup_close int ep = epoll_create1(EPOLL_CLOEXEC);
  if (tfd < 0 || ep < 0) return an_error_set(err, errno, "exec: timerfd/epoll");
  struct itimerspec its = {.it_value = {.tv_sec = (time_t) (timeout_ms / 1000),
                                        .tv_nsec = (long) (timeout_ms % 1000) * 1000000}};
  if (!timeout_ms) its.it_value.tv_nsec = 1;
  if (timerfd_settime(tfd, 0, &its, NULL) < 0) return an_error_set(err, errno, "exec: timerfd_settime");
  struct epoll_event ev = {.events = EPOLLIN};
  ev.data.fd = pidfd;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, pidfd, &ev) < 0) return an_error_set(err, errno, "exec: epoll_ctl");
  ev.data.fd = tfd;
  if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) return an_error_set(err, errno, "exec: epoll_ctl");
  ev.data.fd = cancel_fd;
  if (cancel_fd >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, cancel_fd, &ev) < 0)
    return an_error_set(err, errno, "exec: epoll_ctl (cancel fd %d)", cancel_fd);

  int r = an_output_capture(out_fd, err_fd, ep, oo, &res->output, err);
  if (r < 0) {
    an_error_t e = NULL;
    if (cg) an_cgroup_kill(cg, SIGKILL, &e);
    an_error_free(&e);
    an_process_signal(pidfd, SIGKILL, &e);
    an_error_free(&e);
    struct an_exec_result tmp = {0};
    reap(cg, pidfd, NULL, &tmp, &e);
    an_output_release(&tmp.output);
    an_error_free(&e);
    return r;
  }
  /* The pipes may have closed while the command still runs. */
  struct epoll_event got;
  while (!exited(pidfd)) {
    int n = epoll_wait(ep, &got, 1, -1);
    if (n < 0 && errno != EINTR) return an_error_set(err, errno, "exec: epoll_wait");
    if (n > 0 && (got.data.fd == tfd || got.data.fd == cancel_fd) && !exited(pidfd)) {
      if (got.data.fd == tfd) res->timed_out = true;
      else res->cancelled = true;
      an_error_t e = NULL;
      if (kill_grace_ms) {
        if (cg) an_cgroup_kill(cg, SIGTERM, &e);
        else an_process_signal(pidfd, SIGTERM, &e);
        an_error_free(&e);
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        while (poll(&p, 1, (int) kill_grace_ms) < 0 && errno == EINTR) {}
      }
      if (cg) an_cgroup_kill(cg, SIGKILL, &e);
      an_error_free(&e);
      an_process_signal(pidfd, SIGKILL, &e);
      an_error_free(&e);
      break;
    }
  }
  return reap(cg, pidfd, oo, res, err);
}

void an_sb_finish_status(struct an_exec_result *res) {
  if (res->oom_killed) res->status = 137;
  else if (res->timed_out) res->status = AN_EXEC_STATUS_TIMED_OUT;
  else if (res->signal) res->status = 128 + res->signal;
  else res->status = res->exit_code;
}

/* A command that could not be started: status 126/127 and the reason on
 * stderr, like a shell (also to a streaming caller's on_data), when the
 * failure is the command's own (command_failed: its lookup or execve);
 * a start step's ENOENT or EACCES stays an error.  A start the timeout or
 * the cancel fd ended: 124 or 137. */
static int spawn_failure(int r, bool command_failed, an_error_t *err, const struct an_exec_opts *eo,
                         struct an_exec_result *res) {
  int st = command_failed && (r == -ENOENT || r == -ENOTDIR) ? AN_EXEC_STATUS_NOT_FOUND
         : command_failed ? AN_EXEC_STATUS_NOT_EXECUTABLE
         : r == -ETIMEDOUT ? AN_EXEC_STATUS_TIMED_OUT
         : r == -ECANCELED ? 128 + SIGKILL   /* as a command the cancel fd ended */
         : 0;
  if (!st) return r;
  res->timed_out = r == -ETIMEDOUT;
  res->cancelled = r == -ECANCELED;
  const char *msg = *err && (*err)->msg ? (*err)->msg : "the command could not be started";
  res->exit_code = st;
  res->status = st;
  res->output.stdout_buf = strdup("");
  if (asprintf(&res->output.stderr_buf, "agentnest: %s\n", msg) < 0) res->output.stderr_buf = NULL;
  if (!res->output.stdout_buf || !res->output.stderr_buf) {
    an_output_release(&res->output);
    return -ENOMEM;
  }
  res->output.stderr_len = strlen(res->output.stderr_buf);
  if (eo->on_data) eo->on_data(eo->on_data_arg, AN_STREAM_STDERR, res->output.stderr_buf, res->output.stderr_len);
  an_error_free(err);
  return 0;
}

int an_sandbox_exec(struct an_sandbox *sb, char *const argv[], const struct an_exec_opts *eo,
                    struct an_exec_result *res, an_error_t *err) {
  static const struct an_exec_opts no_opts;
  if (!eo) eo = &no_opts;
  if (!sb || !res) return an_error_set(err, EINVAL, "exec: no sandbox or result");
  memset(res, 0, sizeof *res);
  if (!argv || !argv[0] || !argv[0][0]) return an_error_set(err, EINVAL, "exec: empty command");
  if (eo->workdir && eo->workdir[0] != '/')
    return an_error_set(err, EINVAL, "exec: workdir \"%s\" is not absolute", eo->workdir);
  uint64_t now = an_sb_now_ms();
  if (sb->rec.deadline_ms && now >= sb->rec.deadline_ms)
    return an_error_set(err, ETIME, "sandbox %s expired", sb->rec.id);
  uint64_t remaining = sb->rec.deadline_ms ? sb->rec.deadline_ms - now : UINT64_MAX;
  uint64_t timeout = eo->timeout_ms ? eo->timeout_ms : an_sandbox_opts_exec_timeout(sb->opts);
  if (!timeout || timeout > remaining) timeout = remaining;

  struct an_audit_field af[] = {
    AN_AUDIT_STRV("argv", argv), AN_AUDIT_ENV_NAMES("env", eo->env),
    AN_AUDIT_STR("workdir", eo->workdir), AN_AUDIT_INT("timeout_ms", eo->timeout_ms),
  };
  int r = an_approval_checkv(sb, "exec", af, sizeof af / sizeof *af, err);
  if (r < 0) return r;
  r = an_sb_ensure_cgroup(sb, err);
  if (r < 0) {
    if (r == -ENOENT) {
      an_error_free(err);
      return an_error_set(err, ESRCH, "sandbox %s is not running", sb->rec.id);
    }
    return r;
  }
  if ((r = acquire_slot(sb, err)) < 0) {
    /* a destroy moved the state directory away (or removed the cgroup)
     * since the open: say so, not the mkdir or open that broke off */
    if (r == -ENOENT && an_sb_ended(sb->dir)) {
      an_error_free(err);
      r = an_error_set(err, ESRCH, AN_SB_ENDED_MEANWHILE, sb->rec.id);
    }
    return an_error_prefix(err, "exec in sandbox %s", sb->rec.id);
  }
  struct an_cgroup *ecg = sb->exec_cg;
  uint64_t oom1 = 0;
  an_error_t e = NULL;

  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
  cleanup_close int devnull = -1;
  cleanup_close int master = -1;
  pid_t pump = 0;
  size_t nsec = 0;
  const struct an_secret *secrets = NULL;
  cleanup_free struct an_secret *own_secrets = NULL;
  int pidfd = -1;
  pid_t pid = 0, watch = 0;
  bool command_failed = false;
  uint64_t t0 = an_mono_ms();
  /* before the command starts: its output is never captured unredacted */
  if ((r = an_sb_exec_secrets(sb, eo, &secrets, &nsec, &own_secrets, err)) < 0) goto out;
  if ((watch = start_caller_watch(sb, err)) < 0) {
    r = watch;
    watch = 0;
    goto out;
  }
  if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
    r = an_error_set(err, errno, "exec in sandbox %s: pipe for the output", sb->rec.id);
    goto out;
  }
  /* The caller's stdin is never the command's: a pump copies it into a
   * pipe (or the pty master), see exec_stdin.h. */
  if (eo->has_stdin && !eo->tty && pipe2(pi, O_CLOEXEC) < 0) {
    r = an_error_set(err, errno, "exec in sandbox %s: pipe for the input", sb->rec.id);
    goto out;
  }
  if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
    r = an_error_set(err, errno, "open /dev/null");
    goto out;
  }
  int in = pi[0] >= 0 ? pi[0] : devnull;
  struct winsize ws = {0};
  bool size_follows = eo->tty && eo->has_stdin && ioctl(eo->stdin_fd, TIOCGWINSZ, &ws) == 0;
  if (eo->tty && !size_follows && eo->tty_rows && eo->tty_cols)
    ws = (struct winsize) {.ws_row = eo->tty_rows, .ws_col = eo->tty_cols};
  /* the timeout covers the start too: a process the sandbox stops before
   * its execve (it has the sandbox's uid by then) cannot stall the caller */
  struct an_sb_spawn sp = {.argv = argv, .env_extra = eo->env, .workdir = eo->workdir,
                           .stdio = {in, eo->tty ? devnull : po[1], eo->tty ? devnull : pe[1]},
                           .cg = ecg, .timeout_ms = timeout == UINT64_MAX ? 0 : timeout,
                           .terminal = eo->tty, .rows = ws.ws_row, .cols = ws.ws_col,
                           .master = &master, .has_cancel_fd = eo->has_cancel_fd, .cancel_fd = eo->cancel_fd,
                           .command_failed = &command_failed};
  r = an_sb_spawn(sb, &sp, &pid, &pidfd, err);
  close(po[1]);
  close(pe[1]);
  po[1] = pe[1] = -1;
  if (pi[0] >= 0) close(pi[0]);
  pi[0] = -1;
  if (r < 0) {
    r = spawn_failure(r, command_failed, err, eo, res);
    if (r < 0) an_error_prefix(err, "exec in sandbox %s", sb->rec.id);
    goto out;
  }
  if (eo->tty) {
    /* output: the master (stdout and stderr are one stream on a terminal) */
    close(po[0]);
    close(pe[0]);
    po[0] = pe[0] = -1;
  }
  if (eo->has_stdin) {
    pump = an_sb_pump_start(eo->stdin_fd, eo->tty ? master : pi[1], size_follows, err);
    if (pump < 0) {
      pump = 0;
      an_cgroup_kill(ecg, SIGKILL, &e);
      an_error_free(&e);
      struct an_exec_result gone = {0};
      reap(ecg, pidfd, NULL, &gone, &e);
      an_output_release(&gone.output);
      an_error_free(&e);
      close(pidfd);
      r = an_error_prefix(err, "exec in sandbox %s", sb->rec.id);
      goto out;
    }
    if (pi[1] >= 0) close(pi[1]);   /* the pump's copy is the only writer: its EOF is the command's */
    pi[1] = -1;
  }
  struct an_output_opts oo = {
    .max_total = eo->max_output ? eo->max_output : (size_t) an_sandbox_opts_max_output(sb->opts),
    .max_stdout = eo->max_stdout, .max_stderr = eo->max_stderr,
    .secrets = secrets, .nsecrets = nsec, .on_data = eo->on_data, .on_data_arg = eo->on_data_arg,
  };
  uint64_t spent = an_mono_ms() - t0;
  if (timeout != UINT64_MAX) timeout = timeout > spent ? timeout - spent : 1;
  r = an_sb_wait_capture(ecg, pidfd, eo->tty ? master : po[0], eo->tty ? -1 : pe[0], timeout,
                         eo->kill_grace_ms, eo->has_cancel_fd ? eo->cancel_fd : -1, &oo, res, err);
  close(pidfd);
  if (r < 0) goto out;
  /* Documented policy: what the command left running is killed with it. */
  empty_slot(ecg);
  if (sb->exec_oom_ok && an_cgroup_oom_kills(ecg, &oom1, &e) == 0) {
    if (oom1 > sb->exec_oom_base) res->oom_killed = true;
    sb->exec_oom_base = oom1;
  }
  an_error_free(&e);
  an_sb_finish_status(res);
out:
  an_sb_pump_stop(pump);
  stop_caller_watch(watch);
  res->duration_ms = an_mono_ms() - t0;
  for (int i = 0; i < 2; i++) {
    if (po[i] >= 0) close(po[i]);
    if (pe[i] >= 0) close(pe[i]);
    if (pi[i] >= 0) close(pi[i]);
  }
  if (r < 0) empty_slot(ecg);
  {
    struct an_audit_field rf[] = {
      af[0], af[1], af[2], af[3],
      AN_AUDIT_INT("status", r >= 0 ? res->status : -1), AN_AUDIT_BOOL("timed_out", r >= 0 && res->timed_out),
      AN_AUDIT_BOOL("oom_killed", r >= 0 && res->oom_killed),
    };
    an_sb_audit(sb, NULL, NULL, "exec", r, err, rf, sizeof rf / sizeof *rf);
  }
  if (r >= 0)
    an_sb_event(sb->dir, "exec",
                ",\"pid\":%d,\"status\":%d,\"timed_out\":%s,\"oom_killed\":%s,\"duration_ms\":%llu",
                (int) pid, res->status, res->timed_out ? "true" : "false",
                res->oom_killed ? "true" : "false", (unsigned long long) res->duration_ms);
  else
    an_exec_result_release(res);
  return r;
}
