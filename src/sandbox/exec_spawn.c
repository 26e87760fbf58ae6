/* sandbox/exec_spawn.c — clone one process into a live sandbox, straight
 * from the caller (no daemon round trip): join the namespaces of the
 * sandbox's pid 1 through its pidfd, land in the exec's own child cgroup,
 * and run the engine's exec-only init path (engine/init.h: identity, no
 * capabilities, no_new_privs, the sandbox's seccomp filter, rlimits, fds
 * sealed) with the caller's stdio pipes (or, with sp->terminal, a pty of the
 * sandbox's own devpts, engine/terminal.h), through the engine's one exec path
 * (engine/exec_spawn.h).  The spec and the compiled
 * seccomp program are cached in the handle, so repeated execs on one handle
 * only clone.  What does NOT live here: timeouts, output, result (exec.c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "agentnest/cgroup.h"
#include "engine/exec_spawn.h"
#include "engine/seccomp.h"
#include "engine/state.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

/* config.json records a secret's env entry as "NAME=" (sandbox.c): give it
 * its value again from the handle's record (the secrets file). */
static int put_secret_values(struct an_sandbox *sb, an_error_t *err) {
  if (!sb->spec->process) return 0;
  for (char **e = sb->spec->process->env; e && *e; e++) {
    size_t kl = strlen(*e);
    if (!kl || (*e)[kl - 1] != '=') continue;
    for (size_t k = 0; k < sb->rec.nsecrets; k++) {
      const struct an_secret *s = &sb->rec.secrets[k];
      if (!s->value || strlen(s->name) != kl - 1 || strncmp(*e, s->name, kl - 1)) continue;
      char *kv = NULL;
      if (asprintf(&kv, "%s=%s", s->name, s->value) < 0) return an_error_set(err, ENOMEM, "env");
      free(*e);
      *e = kv;
      break;
    }
  }
  return 0;
}

static int load_exec_cache(struct an_sandbox *sb, an_error_t *err) {
  int r;
  if (!sb->spec) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", sb->containers, sb->rec.id, AN_STATE_CONFIG);
    if ((r = an_spec_load_file(path, &sb->spec, err)) < 0) return r;
    if ((r = put_secret_values(sb, err)) < 0) return r;
  }
  /* `image rm --force` may have deleted the image under the sandbox: say so
   * rather than fail inside it (process.cwd: ENOENT, status 127). */
  struct stat st;
  if (sb->spec->root.path && stat(sb->spec->root.path, &st) < 0 && errno == ENOENT)
    return an_error_set(err, ESTALE, "sandbox %s: image %s was removed from the store (%s); destroy the sandbox",
                        sb->rec.id, sb->rec.image ? sb->rec.image : "?", sb->spec->root.path);
  if (!sb->seccomp && sb->spec->linux.seccomp) {
    /* The filter create compiled and kept with the container's state, as
     * engine exec reads it: no sha256 of the profile (so libcrypto is not
     * loaded on the exec path, util/lazylib.c); through the cache only for a
     * sandbox whose state has none. */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s", sb->containers, sb->rec.id);
    cleanup_close int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    an_error_t e = NULL;
    r = dfd < 0 ? -ENOENT
                : an_seccomp_program_load(dfd, AN_STATE_SECCOMP, sb->spec->linux.seccomp, &sb->seccomp, &e);
    an_error_free(&e);
    if (r < 0) {
      char cache[PATH_MAX];
      snprintf(cache, sizeof cache, "%s/.seccomp-cache", sb->containers);
      if ((r = an_seccomp_prepare(sb->spec->linux.seccomp, cache, &sb->seccomp, err)) < 0) return r;
    }
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

/* A start that failed because the sandbox was destroyed (or its pid 1
 * exited) meanwhile says so, -ESRCH, instead of the step it broke off at
 * (a sync socket's EPIPE or ECONNRESET, setns ESRCH, the exec cgroup's
 * cgroup.procs ENOENT).  The
 * teardown kills pid 1 before it removes the cgroups, but its exit can end
 * a moment after the joiner's: for a failure of that kind, wait up to 1 s
 * for it.  The command's own failure (not found, not executable: the
 * engine's command_failed) is returned as it is, at once. */
static int ended_meanwhile(struct an_sandbox *sb, const struct an_sb_spawn *sp,
                           const struct an_exec_child *c, int r, an_error_t *err) {
  if (sp->command_failed) *sp->command_failed = c->command_failed;
  if (c->command_failed || r == -ETIMEDOUT || r == -ECANCELED || sb->init_pidfd < 0) return r;
  int wait_ms = 0;
  if (r == -EPIPE || r == -ECONNRESET || r == -ESRCH) wait_ms = 1000;
  else if ((r == -ENOENT || r == -ENOTDIR) && sp->cg) {
    pid_t *pids = NULL;
    size_t n = 0;
    an_error_t e = NULL;
    if (an_cgroup_pids(sp->cg, &pids, &n, &e) < 0 && e && e->errnum == ENOENT) wait_ms = 1000;
    an_error_free(&e);
    free(pids);
  }
  struct pollfd p = {.fd = sb->init_pidfd, .events = POLLIN};
  int n;
  while ((n = poll(&p, 1, wait_ms)) < 0 && errno == EINTR) {}
  if (n <= 0) return r;
  an_error_free(err);
  return an_error_set(err, ESRCH, AN_SB_ENDED_MEANWHILE, sb->rec.id);
}

int an_sb_spawn(struct an_sandbox *sb, const struct an_sb_spawn *sp, pid_t *pid_out,
                int *pidfd_out, an_error_t *err) {
  int r = load_exec_cache(sb, err);
  if (r < 0) return r;
  if ((r = an_sb_ensure_init_pidfd(sb, err)) < 0) return r;

  struct an_spec_process proc = *sb->spec->process;
  proc.args = (char **) sp->argv;
  proc.terminal = sp->terminal && sp->master;
  if (proc.terminal && sp->rows && sp->cols) {
    proc.has_console_size = true;
    proc.console_height = sp->rows;
    proc.console_width = sp->cols;
  }
  if (sp->workdir) proc.cwd = (char *) sp->workdir;
  cleanup_free char **env = NULL;
  if (sp->env_extra && sp->env_extra[0]) {
    if (!(env = merge_env(sb->spec->process->env, sp->env_extra))) return an_error_set(err, ENOMEM, "env");
    proc.env = env;
  }

  char what[128];
  snprintf(what, sizeof what, "sandbox %s", sb->rec.id);
  struct an_exec_target t = {
    .what = what, .spec = sb->spec, .process = &proc, .rootfs = sb->spec->root.path,
    .init_pidfd = sb->init_pidfd, .state_dirfd = -1, .cg = sp->cg, .seccomp = sb->seccomp,
    .stdio = {sp->stdio[0], sp->stdio[1], sp->stdio[2]}, .timeout_ms = sp->timeout_ms,
    .has_cancel_fd = sp->has_cancel_fd, .cancel_fd = sp->cancel_fd,
    .cg_exclusive = true,   /* exec-N, a proc's or a session's own cgroup */
  };
  struct an_exec_child c;
  if ((r = an_exec_clone(&t, &c, err)) < 0) return ended_meanwhile(sb, sp, &c, r, err);
  if ((r = an_exec_go(&c, err)) < 0) {
    an_exec_abort(&c);
    return ended_meanwhile(sb, sp, &c, r, err);
  }
  *pid_out = c.pid;
  *pidfd_out = c.pidfd;
  c.pidfd = -1;
  if (proc.terminal) {
    *sp->master = c.master;
    c.master = -1;
  }
  an_exec_child_close(&c);
  return 0;
}
