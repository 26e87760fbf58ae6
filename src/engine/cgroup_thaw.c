/* engine/cgroup_thaw.c — letting one killed process out of a frozen v1
 * freezer cgroup, and reaping it in bounded time (see agentnest/cgroup.h
 * an_cgroup_thaw_out, an_cgroup_reap_killed). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include "engine/cgroup_internal.h"
#include "engine/process.h"
#include "util/clock.h"

int an_cgroup_thaw_out(const struct an_cgroup *cg, pid_t pid, an_error_t *err) {
  int i = an_cg_layout_find(&cg->l, AN_CG_FREEZER);
  if (i < 0 || cg->l.h[i].version != 1) return 0;   /* cgroup2: a frozen task dies of SIGKILL */
  char v[32];
  snprintf(v, sizeof v, "%d", (int) pid);
  /* the kernel thaws a task moved out of a frozen cgroup (freezer_attach) */
  an_error_t e = NULL;
  int r = an_cg_write(cg->l.h[i].mount, "cgroup.procs", v, &e);
  if (r == -ESRCH) r = 0;   /* gone already */
  if (r < 0) {
    if (!err) {
      an_error_free(&e);
      return r;
    }
    *err = e;
    return an_error_prefix(err, "thaw process %d out of cgroup %s", (int) pid, cg->path);
  }
  an_error_free(&e);
  return 0;
}

int an_cgroup_reap_killed(const struct an_cgroup *cg, int pidfd, pid_t pid, unsigned timeout_ms,
                          siginfo_t *si) {
  siginfo_t own;
  if (!si) si = &own;
  uint64_t t0 = an_mono_ms();
  bool let_out = false;
  long step = 1;
  for (;;) {
    memset(si, 0, sizeof *si);
    if (waitid(P_PIDFD, (id_t) pidfd, si, WEXITED | WNOHANG) == 0) {
      if (si->si_pid) return 0;
    } else if (errno != EINTR) {
      return -errno;
    }
    uint64_t spent = an_mono_ms() - t0;
    if (spent >= timeout_ms) return -ETIMEDOUT;
    if (!let_out && spent >= 100 && cg) {
      let_out = true;
      an_error_t e = NULL;
      if (pid <= 0) an_process_pidfd_pid(pidfd, &pid, &e);
      an_error_free(&e);
      if (pid > 0) an_cgroup_thaw_out(cg, pid, &e);
      an_error_free(&e);
    }
    /* not poll(2) on the pidfd: it turns readable at the exit, also when a
     * tracer holds the zombie from this waitid */
    struct timespec ts = {0, step * 1000000L};
    nanosleep(&ts, NULL);
    if (step < 20) step *= 2;
  }
}
