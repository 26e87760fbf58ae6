/* engine/cgroup_thaw.c — letting one killed process out of a frozen v1
 * freezer cgroup (see agentnest/cgroup.h an_cgroup_thaw_out). */
#include <errno.h>
#include <stdio.h>
#include "engine/cgroup_internal.h"

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
