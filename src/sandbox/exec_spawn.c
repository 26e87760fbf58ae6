/* sandbox/exec_spawn.c — clone one process into a live sandbox, straight
 * from the caller (no daemon round trip): join the namespaces of the
 * sandbox's pid 1 through its pidfd, land in the exec's own child cgroup,
 * and run the engine's exec-only init path (engine/init.h: identity, no
 * capabilities, no_new_privs, the sandbox's seccomp filter, rlimits, fds
 * sealed) with the caller's stdio pipes.  The sync protocol is the engine's
 * (engine/sync.h) points [1], [4], [5], [6].  The spec and the compiled
 * seccomp program are cached in the handle, so repeated execs on one handle
 * only clone.  What does NOT live here: timeouts, output, result (exec.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "engine/init.h"
#include "engine/namespaces.h"
#include "engine/process.h"
#include "engine/seccomp.h"
#include "engine/state.h"
#include "engine/sync.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

static int load_exec_cache(struct an_sandbox *sb, an_error_t *err) {
  int r;
  if (!sb->spec) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", sb->containers, sb->rec.id, AN_STATE_CONFIG);
    if ((r = an_spec_load_file(path, &sb->spec, err)) < 0) return r;
  }
  if (!sb->seccomp && sb->spec->linux.seccomp) {
    char cache[PATH_MAX];
    snprintf(cache, sizeof cache, "%s/.seccomp-cache", sb->containers);
    if ((r = an_seccomp_prepare(sb->spec->linux.seccomp, cache, &sb->seccomp, err)) < 0) return r;
  }
  if (!sb->spec->process) return an_error_set(err, EINVAL, "sandbox %s: spec has no process", sb->rec.id);
  return 0;
}

/* env = sandbox env, then extra entries (a later KEY replaces an earlier). */
static char **merge_env(char **base, char *const *extra) {
  size_t nb = 0, ne = 0;
  while (base && base[nb]) nb++;
  while (extra && extra[ne]) ne++;
  char **env = calloc(nb + ne + 1, sizeof *env);
  if (!env) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < nb; i++) env[n++] = base[i];
  for (size_t i = 0; i < ne; i++) {
    const char *eq = strchr(extra[i], '=');
    size_t kl = eq ? (size_t) (eq - extra[i]) : strlen(extra[i]);
    size_t j = 0;
    for (; j < n; j++)
      if (!strncmp(env[j], extra[i], kl) && env[j][kl] == '=') break;
    env[j] = extra[i];
    if (j == n) n++;
  }
  env[n] = NULL;
  return env;
}

int an_sb_spawn(struct an_sandbox *sb, const struct an_sb_spawn *sp, pid_t *pid_out,
                int *pidfd_out, an_error_t *err) {
  int r = load_exec_cache(sb, err);
  if (r < 0) return r;
  if ((r = an_sb_ensure_init_pidfd(sb, err)) < 0) return r;

  struct an_spec_process proc = *sb->spec->process;
  proc.args = (char **) sp->argv;
  proc.terminal = false;
  if (sp->workdir) proc.cwd = (char *) sp->workdir;
  cleanup_free char **env = NULL;
  if (sp->env_extra && sp->env_extra[0]) {
    if (!(env = merge_env(sb->spec->process->env, sp->env_extra))) return an_error_set(err, ENOMEM, "env");
    proc.env = env;
  }

  int flags = sb->spec->linux.ns_flags;
  struct an_ns_plan plan = {.userns_fd = -1, .pidns_fd = -1, .timens_fd = -1};
  plan.join_fd[0] = sb->init_pidfd;
  plan.join_flag[0] = flags & ~(CLONE_NEWPID | CLONE_NEWTIME);
  plan.n_join = plan.join_flag[0] ? 1 : 0;
  plan.all_flags = flags;

  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
    return an_error_set(err, errno, "socketpair");
  cleanup_close int sync_fd = pair[0];
  struct an_init_config cfg = {
    .spec = sb->spec, .process = &proc, .rootfs = sb->spec->root.path, .parent_pid = getpid(),
    .sync_fd = pair[1], .parent_sync_fd = pair[0], .start_fd = -1, .ns = &plan,
    .in_userns = flags & CLONE_NEWUSER, .seccomp = sb->seccomp,
    .stdio = {sp->stdio[0], sp->stdio[1], sp->stdio[2]}, .exec_only = true,
  };
  /* The pid namespace is entered by this thread around clone3: children
   * are born in it (setns(2) CLONE_NEWPID). */
  cleanup_close int own_pid = -1;
  if (flags & CLONE_NEWPID) {
    own_pid = open("/proc/thread-self/ns/pid", O_RDONLY | O_CLOEXEC);
    if (own_pid < 0 || setns(sb->init_pidfd, CLONE_NEWPID) < 0) {
      int e = errno;
      close(pair[1]);
      return an_error_set(err, e, "exec: enter pid namespace of sandbox %s", sb->rec.id);
    }
  }
  int cgfd = sp->cg ? an_cgroup_clone_fd(sp->cg) : -1;
  int pidfd = -1;
  pid_t pid = an_process_clone(0, cgfd, &pidfd, err);
  if (pid == 0) an_init_main(&cfg);
  if (own_pid >= 0 && setns(own_pid, CLONE_NEWPID) < 0) {}
  close(pair[1]);
  if (pid < 0) return pid;
  cleanup_close int pfd = pidfd;
  if (sp->cg && cgfd < 0 && (r = an_cgroup_enter(sp->cg, pid, err)) < 0) goto fail;
  /* [1] ids mapped (nothing to map: joined), cgroup entered */
  if ((r = an_sync_send(sync_fd, AN_SYNC_IDMAPPED, -1, err)) < 0) goto fail;
  /* [4] ready: identity, caps, PATH lookup done */
  if ((r = an_sync_wait(sync_fd, AN_SYNC_READY, NULL, err)) < 0) goto fail;
  /* [5] go, [6] execve */
  if ((r = an_sync_send(sync_fd, AN_SYNC_GO, -1, err)) < 0) goto fail;
  if ((r = an_sync_wait_exec(sync_fd, err)) < 0) goto fail;
  *pid_out = pid;
  *pidfd_out = an_steal_fd(&pfd);
  return 0;
fail:
  /* The child reports and exits by itself (127 not found, 126 not
   * executable); give it a moment, then make sure. */
  {
    struct pollfd p = {.fd = pfd, .events = POLLIN};
    if (poll(&p, 1, 1000) <= 0) {
      an_error_t e = NULL;
      an_process_signal(pfd, SIGKILL, &e);
      an_error_free(&e);
    }
    siginfo_t si = {0};
    while (waitid(P_PIDFD, (id_t) pfd, &si, WEXITED) < 0 && errno == EINTR) {}
  }
  return r;
}
