/* sandbox/daemon.c — the double fork that the sandbox's long-lived host
 * processes (the monitor, the egress process, a pool's keeper) start with:
 * a grandchild in a session of its own, reparented away from the caller
 * (which never has to reap it), and a pipe on which it reports that it is
 * ready.  What each process does lives with it (monitor.c, egress_run.c,
 * pool_keeper.c). */
#include <errno.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "sandbox/sandbox_internal.h"

int an_sb_fork_detached(const char *what, int *pipe_fd, an_error_t *err) {
  int pr[2];
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
    if (g != 0) _exit(g < 0 ? 1 : 0);
    *pipe_fd = pr[1];
    return 0;
  }
  close(pr[1]);
  while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
  *pipe_fd = pr[0];
  return 1;
}
