/* engine/cgroup_v2_freezer.c — the cgroup v2 core freezer (cgroup-v2.rst
 * "Core Interface Files", cgroup.freeze): write 1 / 0 and wait until
 * cgroup.events reports "frozen 1" / "frozen 0".  Works without any
 * controller, so hybrid hosts use it too. */
#include "engine/cgroup_internal.h"

int an_cg_v2_freeze_set(const char *dir, bool frozen, an_error_t *err) {
  int r = an_cg_write(dir, "cgroup.freeze", frozen ? "1" : "0", err);
  if (r < 0) return r;
  return an_cg_wait_key(dir, "cgroup.events", "frozen", frozen ? 1 : 0, 5000, err);
}
