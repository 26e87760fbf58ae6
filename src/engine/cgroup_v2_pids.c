/* engine/cgroup_v2_pids.c — linux.resources.pids on the cgroup v2 pids
 * controller (cgroup-v2.rst "PID"): limit > 0 -> pids.max;
 * -1 -> "max"; 0 leaves it unset (runc). */
#include <inttypes.h>
#include "engine/cgroup_internal.h"

int an_cg_v2_pids_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  if (!r->has_pids_limit || r->pids_limit == 0) return 0;
  if (r->pids_limit < 0) return an_cg_write(dir, "pids.max", "max", err);
  return an_cg_writef(err, dir, "pids.max", "%" PRId64, r->pids_limit);
}
