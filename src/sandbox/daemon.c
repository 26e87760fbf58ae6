/* sandbox/daemon.c — the double fork that the sandbox's long-lived host
 * processes (the monitor, the egress process, a pool's keeper) start with:
 * a grandchild in a session of its own, reparented away from the caller
 * (which never has to reap it), and a pipe on which it reports that it is
 * ready (or, an_sb_fork_detached_pid, on which the intermediate child
 * reports its pid, for a process nobody needs to wait for).  What each process does lives with it (monitor.c, egress_run.c,
 * pool_keeper.c). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sandbox/sandbox_internal.h"

/* The double fork both entry points share.  Returns 0 in the grandchild
 * (pr[0] closed, pr[1] kept), 1 in the caller once the intermediate child
 * has exited (pr[1] closed, pr[0] kept), -errno on failure (both closed).
 * With report_pid the intermediate child writes the grandchild's pid to
 * pr[1] before it exits, and the grandchild closes pr[1]. */
static int double_fork(const char *what, int pr[2], bool report_pid, an_error_t *err) {
  if (pipe2(pr, O_CLOEXEC) < 0) return an_error_set(err, errno, "%s: pipe", what);
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(pr[0]);
    close(pr[1]);
    return an_error_set(err, e, "%s: fork", what);
  }
  if (child == 0) {
    close(pr[0]);
    setsid();
    pid_t g = fork();
    if (report_pid && g > 0 && write(pr[1], &g, sizeof g) != (ssize_t) sizeof g) _exit(1);
    if (g != 0) _exit(g < 0 ? 1 : 0);
    if (report_pid) close(pr[1]);
    return 0;
  }
  close(pr[1]);
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
  return 1;
}

int an_sb_fork_detached(const char *what, int *pipe_fd, an_error_t *err) {
  int pr[2];
  int r = double_fork(what, pr, false, err);
  if (r < 0) return r;
  *pipe_fd = r == 0 ? pr[1] : pr[0];
  return r;
}

int an_sb_fork_detached_pid(const char *what, pid_t *pid, an_error_t *err) {
  int pr[2];
  int r = double_fork(what, pr, true, err);
  if (r <= 0) return r;
  pid_t g = 0;
  ssize_t n;
  while ((n = read(pr[0], &g, sizeof g)) < 0 && errno == EINTR) {}
  close(pr[0]);
  if (n != (ssize_t) sizeof g || g <= 0) return an_error_set(err, ECHILD, "%s: the process did not start", what);
  *pid = g;
  return 1;
}
