/* engine/cgroup_v2_cpuset.c — linux.resources.cpu.cpus/mems on the cgroup
 * v2 cpuset controller (cgroup-v2.rst "Cpuset"): cpuset.cpus and
 * cpuset.mems.  Empty v2 values mean "inherit the parent's", so nothing is
 * copied as on v1. */
#include "engine/cgroup_internal.h"

int an_cg_v2_cpuset_apply(const char *dir, const struct an_spec_resources *r, an_error_t *err) {
  int ret;
  if (r->cpu_cpus && *r->cpu_cpus && (ret = an_cg_write(dir, "cpuset.cpus", r->cpu_cpus, err)) < 0)
    return ret;
  if (r->cpu_mems && *r->cpu_mems && (ret = an_cg_write(dir, "cpuset.mems", r->cpu_mems, err)) < 0)
    return ret;
  return 0;
}
