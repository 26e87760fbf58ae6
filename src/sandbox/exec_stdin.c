/* sandbox/exec_stdin.c — the stdin pump of an exec: a forked host process
 * that copies the caller's stdin into the command's pipe or pty master, and
 * the caller's window size into the pty (see exec_stdin.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "sandbox/exec_stdin.h"

static void copy_size(void) {
  struct winsize ws;
  if (ioctl(0, TIOCGWINSZ, &ws) == 0) ioctl(1, TIOCSWINSZ, &ws);
}

/* The pump's body: fd 0 is the source, fd 1 the destination, fd 3 the
 * signalfd of SIGWINCH (or -1). */
static _Noreturn void pump(bool resize) {
  static char buf[16384];
  if (resize) copy_size();
  struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = resize ? 3 : -1, .events = POLLIN}};
  for (;;) {
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      _exit(1);
    }
    if (p[1].revents) {
      struct signalfd_siginfo si;
      while (read(3, &si, sizeof si) == (ssize_t) sizeof si) {}
      copy_size();
    }
    if (!p[0].revents) continue;
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      /* EOF (or a hung-up terminal): a pipe's reader sees EOF when we exit;
       * a pty's reader in canonical mode when it reads its VEOF character
       * (ICANON: termios(3); a pty master reports the pair's termios) */
      struct termios t;
      if (!resize && isatty(1) && tcgetattr(1, &t) == 0 && (t.c_lflag & ICANON)) {
        while (write(1, &t.c_cc[VEOF], 1) < 0 && errno == EINTR) {}
      }
      _exit(0);
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(1, buf + off, (size_t) (n - off));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) _exit(0); /* EPIPE: the command closed its stdin */
      off += w;
    }
  }
}

pid_t an_sb_pump_start(int src_fd, int dst_fd, bool resize, an_error_t *err) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return an_error_set(err, errno, "exec: fork the stdin pump");
  if (pid > 0) return pid;
  /* the child: no return from here */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent) _exit(1);
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTTOU, SIG_IGN); /* TIOCSWINSZ from a background group */
  int sfd = -1;
  if (resize) {
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGWINCH);
    sigprocmask(SIG_BLOCK, &m, NULL);
    sfd = signalfd(-1, &m, SFD_NONBLOCK);
  }
  /* fds: 0 source, 1 destination, 2 /dev/null-free (the source again), 3 signalfd */
  int s = fcntl(src_fd, F_DUPFD_CLOEXEC, 10), d = fcntl(dst_fd, F_DUPFD_CLOEXEC, 10);
  int f = sfd >= 0 ? fcntl(sfd, F_DUPFD_CLOEXEC, 10) : -1;
  if (s < 0 || d < 0 || dup2(s, 0) < 0 || dup2(d, 1) < 0 || dup2(s, 2) < 0) _exit(1);
  if (f >= 0 && dup2(f, 3) < 0) _exit(1);
  syscall(SYS_close_range, f >= 0 ? 4 : 3, ~0U, 0);
  pump(f >= 0);
}

void an_sb_pump_stop(pid_t pump_pid) {
  if (pump_pid <= 0) return;
  kill(pump_pid, SIGKILL);
  while (waitpid(pump_pid, NULL, 0) < 0 && errno == EINTR) {}
}
