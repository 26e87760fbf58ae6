/* engine/hooks.c — run hooks with the state on stdin and a timeout (see
 * hooks.h).  posix_spawn (vfork-style) keeps the cost per hook small. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "engine/hooks.h"
#include "util/cleanup.h"

static int run_one(const struct an_spec_hook *h, size_t i, const char *stage, const char *json,
                   an_error_t *err) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return an_error_set(err, errno, "hooks.%s[%zu]: pipe", stage, i);
  cleanup_close int rd = p[0];
  cleanup_close int wr = p[1];
  /* The state is small; a pipe holds 64 KiB, so write it before the spawn
   * and never block on a hook that does not read its stdin. */
  size_t len = strlen(json);
  if (len > 65536) len = 65536;
  fcntl(wr, F_SETFL, O_NONBLOCK);
  if (write(wr, json, len) < 0 && errno != EAGAIN)
    return an_error_set(err, errno, "hooks.%s[%zu]: write state", stage, i);
  close(wr);
  wr = -1;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, rd, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  char *default_args[] = {h->path, NULL};
  pid_t pid;
  /* Without env the hook inherits the runtime's environment, as runc's and
   * crun's hooks do (Go's exec.Cmd with a nil Env); with env, exactly that. */
  int r = posix_spawn(&pid, h->path, &fa, &attr, h->args && h->args[0] ? h->args : default_args,
                      h->env ? h->env : environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (r != 0) return an_error_set(err, r, "hooks.%s[%zu] %s: spawn", stage, i, h->path);

  cleanup_close int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
  if (pidfd >= 0 && h->has_timeout && h->timeout > 0) {
    struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
    int ms = h->timeout > 2000000 ? 2000000000 : h->timeout * 1000, n;
    do n = poll(&pfd, 1, ms);
    while (n < 0 && errno == EINTR);
    if (n == 0) {
      kill(pid, SIGKILL);
      while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
      return an_error_set(err, ETIMEDOUT, "hooks.%s[%zu] %s: timed out after %d s", stage, i,
                          h->path, h->timeout);
    }
  }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return an_error_set(err, errno, "hooks.%s[%zu] %s: wait", stage, i, h->path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
  if (WIFEXITED(status))
    return an_error_set(err, ECANCELED, "hooks.%s[%zu] %s: exited with status %d", stage, i,
                        h->path, WEXITSTATUS(status));
  return an_error_set(err, ECANCELED, "hooks.%s[%zu] %s: killed by signal %d", stage, i, h->path,
                      WTERMSIG(status));
}

int an_hooks_run(const struct an_spec_hook *hooks, size_t n, const char *stage,
                 const char *state_json, an_error_t *err) {
  for (size_t i = 0; i < n; i++) {
    int r = run_one(&hooks[i], i, stage, state_json ? state_json : "{}", err);
    if (r < 0) return r;
  }
  return 0;
}
