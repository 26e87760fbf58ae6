/* sandbox/run_once.c — an_sandbox_run_once: the one-shot path, built for
 * speed.  No monitor (the caller keeps the sandbox: if it dies, prune finds
 * the owner gone and removes the rest) and no separate exec: pid 1 is
 * `agentnest-init -- CMD...`, which runs the command as its only child with
 * the caller's pipes as stdio, reaps orphans, and exits with the command's
 * status once it ends (killing what it left).  The whole sandbox cgroup is
 * the command's: a timeout kills it, its oom_kill counter tells OOM.  What
 * does NOT live here: create (sandbox.c), waiting and capture (exec.c). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "sandbox/exec_stdin.h"
#include "agentnest/approval.h"
#include "sandbox/audit_internal.h"
#include "sandbox/sandbox_internal.h"
#include "util/cleanup.h"

int an_sandbox_run_once(const char *store_root, const struct an_sandbox_opts *opts,
                        char *const argv[], const struct an_exec_opts *eo,
                        struct an_exec_result *res, char **id_out, an_error_t *err) {
  static const struct an_exec_opts no_opts;
  if (!eo) eo = &no_opts;
  if (!res) return an_error_set(err, EINVAL, "run: no result");
  memset(res, 0, sizeof *res);
  if (!argv || !argv[0] || !argv[0][0]) return an_error_set(err, EINVAL, "run: empty command");
  if (eo->workdir) return an_error_set(err, EINVAL, "run: a per-call workdir is an exec option; set the sandbox workdir");
  if (eo->tty) return an_error_set(err, EINVAL, "run: a terminal is an exec option (create, then exec)");
  /* asked before anything exists: a denied run leaves nothing behind */
  cleanup_free struct an_secret *osec = NULL;
  size_t nosec = 0;
  if (an_sb_opts_secrets(opts, &osec, &nosec) < 0) return an_error_set(err, ENOMEM, "run");
  struct an_audit_field af[] = {AN_AUDIT_STRV("argv", argv), AN_AUDIT_ENV_NAMES("env", eo->env),
                                AN_AUDIT_SECRETS(osec, nosec)};
  int ar = an_approval_check_opts(store_root, opts, NULL, an_sandbox_opts_name(opts), "run", af, 2, osec,
                                  nosec, err);
  if (ar < 0) return ar;
  int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
  pid_t pump = 0;
  cleanup_close int devnull = -1;
  const struct an_secret *secrets = NULL;
  cleanup_free struct an_secret *own_secrets = NULL;
  if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
    int e = errno;
    if (po[0] >= 0) { close(po[0]); close(po[1]); }
    return an_error_set(err, e, "run: pipe for the output");
  }
  /* the caller's stdin is never pid 1's: a pump copies it (exec_stdin.h) */
  int r = 0;
  if (eo->has_stdin) {
    if (pipe2(pi, O_CLOEXEC) < 0) r = an_error_set(err, errno, "run: pipe for the input");
    else if ((pump = an_sb_pump_start(eo->stdin_fd, pi[1], false, err)) < 0) r = pump;
    if (pi[1] >= 0) close(pi[1]);
    if (pump < 0) pump = 0;
  }
  int in = eo->has_stdin ? pi[0] : (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC));
  int stdio[3] = {in, po[1], pe[1]};
  struct an_sandbox *sb = NULL;
  uint64_t t0 = an_mono_ms();
  if (r >= 0 && in < 0) r = an_error_set(err, errno, "open /dev/null");
  struct an_sandbox_opts *o2 = NULL;
  if (r >= 0 && eo->env && eo->env[0]) {
    /* extra env goes into the spec of pid 1 */
    if ((r = an_sandbox_opts_dup(opts, &o2, err)) >= 0)
      for (char *const *e = eo->env; *e && r >= 0; e++) r = an_sandbox_opts_add_env(o2, *e, err);
  }
  if (r >= 0) r = an_sb_create(store_root, o2 ? o2 : opts, AN_SB_KEEP_CALLER, argv, stdio, &sb, err);
  an_sandbox_opts_free(o2);
  close(po[1]);
  close(pe[1]);
  if (pi[0] >= 0) close(pi[0]);
  if (r < 0) goto out;
  if (id_out && !(*id_out = strdup(sb->rec.id))) { r = an_error_set(err, ENOMEM, "run"); goto out; }
  if ((r = an_sb_ensure_init_pidfd(sb, err)) < 0 || (r = an_sb_ensure_cgroup(sb, err)) < 0) goto out;
  /* The baseline is 0: the cgroup is the sandbox's own, made for this
   * command, which already runs as its pid 1.  Reading it here instead lost
   * an OOM kill that happened before this point (a quick allocation under
   * load): the kill was in both readings.  The read only checks that the
   * counter can be read at all. */
  uint64_t oom0 = 0, oom1 = 0, oom_now = 0;
  an_error_t e = NULL;
  bool oom_ok = an_cgroup_oom_kills(sb->cg, &oom_now, &e) == 0;
  an_error_free(&e);
  uint64_t timeout = eo->timeout_ms ? eo->timeout_ms : an_sandbox_opts_exec_timeout(sb->opts);
  if (!timeout || timeout > an_sandbox_opts_lifetime(sb->opts)) timeout = an_sandbox_opts_lifetime(sb->opts);
  size_t nsec = 0;
  if ((r = an_sb_exec_secrets(sb, eo, &secrets, &nsec, &own_secrets, err)) < 0) goto out;
  struct an_output_opts oo = {
    .max_total = eo->max_output ? eo->max_output : (size_t) an_sandbox_opts_max_output(sb->opts),
    .max_stdout = eo->max_stdout, .max_stderr = eo->max_stderr,
    .secrets = secrets, .nsecrets = nsec, .on_data = eo->on_data, .on_data_arg = eo->on_data_arg,
  };
  r = an_sb_wait_capture(sb->cg, sb->init_pidfd, po[0], pe[0], timeout, eo->kill_grace_ms,
                         eo->has_cancel_fd ? eo->cancel_fd : -1, &oo, res, err);
  if (r < 0) goto out;
  if (oom_ok && an_cgroup_oom_kills(sb->cg, &oom1, &e) == 0 && oom1 > oom0) res->oom_killed = true;
  an_error_free(&e);
  /* pid 1 reports the command's status as a shell does: 128+N for signal N */
  if (!res->signal && res->exit_code > 128 && res->exit_code <= 128 + 64) {
    res->signal = res->exit_code - 128;
    res->exit_code = -1;
  }
  an_sb_finish_status(res);
out:
  an_sb_pump_stop(pump);
  res->duration_ms = an_mono_ms() - t0;
  close(po[0]);
  close(pe[0]);
  {
    struct an_audit_field rf[] = {af[0], af[1], AN_AUDIT_INT("status", r >= 0 ? res->status : -1),
                                  AN_AUDIT_BOOL("timed_out", r >= 0 && res->timed_out), af[2]};
    an_sb_audit(NULL, an_sb_root_or_default(store_root), sb ? sb->rec.id : NULL, "run", r, err, rf,
                sizeof rf / sizeof *rf);
  }
  if (sb) {
    an_error_t e2 = NULL;
    /* the command and every process it left are gone; the remains go in
     * the background (teardown_detach.c) */
    int d = an_sb_teardown_detached(sb->root, sb->rec.id, "destroy", 0, false, true, &e2);
    if (d < 0 && r >= 0) {
      *err = e2;
      e2 = NULL;
      r = d;
    }
    an_error_free(&e2);
    an_sandbox_close(sb);
  }
  if (r < 0) {
    an_exec_result_release(res);
    if (id_out) {
      free(*id_out);
      *id_out = NULL;
    }
  }
  return r;
}
