/* cli/init/init.c — agentnest-init, the pid 1 of every sandbox (BL-44).
 *
 * A static, dependency-free program bind-mounted read-only into the sandbox.
 *   agentnest-init                 persistent sandbox: sit as pid 1, reap
 *                                  every orphan, forward signals
 *   agentnest-init -- CMD [ARG...] one-shot: run CMD as the only child, exit
 *                                  with its status (128+N for signal N) once
 *                                  it exits, after killing what it left
 * A process that is pid 1 of a pid namespace gets no signal it has no
 * handler for (pid_namespaces(7)), so without this a SIGTERM does nothing and
 * orphans are never reaped.  Here:
 *   SIGCHLD                  reap every exited child (waitpid(-1, WNOHANG))
 *   SIGTERM SIGINT SIGHUP    forwarded to every process of the namespace
 *   SIGQUIT SIGUSR1 SIGUSR2  (kill(-1, sig) from pid 1 reaches all but
 *                            itself); after SIGTERM/SIGINT/SIGHUP init exits
 *                            as soon as no child is left (exit 0, or the
 *                            command's status in one-shot mode).
 *                            No child left is not enough: a process started
 *                            by `exec` joins the namespace as a child of the
 *                            runtime, not of init, and init's exit would
 *                            SIGKILL it at once (pid_namespaces(7)), cutting
 *                            the runtime's grace period short.  So init exits
 *                            only when kill(-1, 0) finds no other process,
 *                            checked every 20 ms while terminating.
 * Only signals from OUTSIDE the sandbox count (issue 10, item 10): a signal
 * sent by a process (kill, sigqueue, tgkill: si_code SI_USER, SI_QUEUE,
 * SI_TKILL) carries the sender's pid as seen in the receiver's pid
 * namespace, and 0 when the sender is in an ancestor namespace (the
 * runtime, the monitor, `destroy`).  So a signal with a non-zero si_pid
 * comes from inside the sandbox and is dropped: `kill -TERM 1` in the
 * sandbox cannot end it (SIGKILL and SIGSTOP from inside the kernel already
 * refuses for a namespace's init).  Kernel-made signals (SIGCHLD with
 * CLD_* codes, si_code > 0) are handled as before.
 * Escalation to SIGKILL after a grace period is the runtime's (cgroup.kill).
 * Nothing is printed except a one-line error on a failed exec (stderr). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* True when no process but pid 1 is left in the namespace (kill(-1, ...)
 * from pid 1 reaches every process but itself). */
static bool alone(void) {
  return kill(-1, 0) < 0 && errno == ESRCH;
}

/* True when the signal was sent by a process of our own pid namespace. */
static bool from_inside(const siginfo_t *si) {
  return (si->si_code == SI_USER || si->si_code == SI_QUEUE || si->si_code == SI_TKILL) &&
         si->si_pid != 0;
}

static int status_of(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return 1;
}

int main(int argc, char **argv) {
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, NULL);

  pid_t cmd = 0;
  int cmd_status = 0;
  bool cmd_done = false;
  if (argc > 2 && strcmp(argv[1], "--") == 0) {
    cmd = fork();
    if (cmd < 0) {
      dprintf(2, "agentnest-init: fork: %s\n", strerror(errno));
      return 125;
    }
    if (cmd == 0) {
      sigprocmask(SIG_UNBLOCK, &all, NULL);
      /* The command looks up argv[0] in PATH as a shell would. */
      execvp(argv[2], argv + 2);
      int e = errno;
      dprintf(2, "agentnest-init: exec %s: %s\n", argv[2], strerror(e));
      _exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
    }
  }

  bool terminating = false;
  for (;;) {
    siginfo_t si;
    const struct timespec tick = {.tv_nsec = 20 * 1000 * 1000};
    int sig = terminating ? sigtimedwait(&all, &si, &tick) : sigwaitinfo(&all, &si);
    if (sig < 0) {
      if (terminating && errno == EAGAIN && alone()) return cmd_status;
      continue;
    }
    if (sig != SIGCHLD && from_inside(&si)) continue;
    if (sig == SIGCHLD) {
      for (;;) {
        int ws;
        pid_t p = waitpid(-1, &ws, WNOHANG);
        if (p <= 0) {
          if (p < 0 && errno == ECHILD && (cmd_done || (terminating && alone()))) return cmd_status;
          break;
        }
        if (cmd && p == cmd) {
          cmd_status = status_of(ws);
          cmd_done = true;
          /* One-shot: the command is over; what it left behind is killed. */
          kill(-1, SIGKILL);
        }
      }
      continue;
    }
    switch (sig) {
    case SIGTERM: case SIGINT: case SIGHUP:
      terminating = true;
      /* fall through */
    case SIGQUIT: case SIGUSR1: case SIGUSR2: case SIGWINCH:
      kill(-1, sig);
      if (terminating && waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD && alone()) return cmd_status;
      break;
    default:
      break;
    }
  }
}
